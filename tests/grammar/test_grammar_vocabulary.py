"""The vocabulary (`grammar/vocabulary.py`) and the grammar (`audit.lark`) name the same keywords and statements.

A keyword or declaration added in one place and not the other fails here; so does
a declaration whose AST node, kind or completion snippet disagrees with what the
parser builds.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from lark.lexer import PatternRE

from scoreaudit.compiler.fmt import format_module
from scoreaudit.grammar import ast, vocabulary
from scoreaudit.grammar.lark_cache import GRAMMAR_PATH, parser
from scoreaudit.grammar.parser import parse


def test_keyword_terminals_are_the_vocabulary():
    """Every `_WORD.2: /word\\b.../` terminal Lark built is a vocabulary keyword, and the other way round."""
    found = {}
    for t in parser().terminals:
        if t.name.startswith("_") and isinstance(t.pattern, PatternRE):
            m = re.match(r"([a-z_]+)\\b", t.pattern.value)
            if m:
                found[t.name] = m.group(1)
    assert found == {vocabulary.terminal(k): k for k in vocabulary.KEYWORDS}


def test_top_level_statements_are_the_vocabulary():
    text = GRAMMAR_PATH.read_text(encoding="utf-8")
    decl = re.search(r"^_decl:(.*?)\n\n", text, re.M | re.S).group(1)
    assert sorted(w.strip() for w in decl.split("|")) == sorted(vocabulary.STATEMENT_KEYWORDS)


def _filled(snippet: str) -> str:
    """A completion snippet with each placeholder's default text (`${1:name}` → `name`, `$0` → nothing)."""
    return re.sub(r"\$\{\d+:([^}]*)\}", r"\1", snippet).replace("$0", "")


@pytest.mark.parametrize("decl", vocabulary.DECLARATIONS, ids=lambda d: d.keyword)
def test_each_snippet_parses_to_its_declarations_node(decl):
    head = 'audit "t" {\n  version: 1\n}\n' if decl.keyword != "audit" else ""
    module, diags = parse(head + _filled(decl.snippet) + "\n")
    assert diags == [] and module is not None
    node = module.decls[-1]
    assert type(node) is decl.node and vocabulary.BY_NODE[type(node)] is decl
    assert (decl.kind is None) == (vocabulary.DECL_KINDS.get(type(node)) is None)
    if decl.form == "assign":
        assert node.name.name == "name"
    # the formatter prints the statement back with its own keyword first, and it reads back the same
    alone = format_module(dataclasses.replace(module, decls=(node,)))
    assert alone.startswith(decl.keyword + " ")
    again, diags = parse(format_module(module))
    assert diags == [] and ast.strip_spans(again) == ast.strip_spans(module)


@pytest.mark.parametrize("decl", [d for d in vocabulary.DECLARATIONS if d.after_body], ids=lambda d: d.keyword)
def test_keywords_after_a_body_are_accepted_there(decl):
    """`after_body` (what completion offers after a declaration's call) is what the grammar accepts."""
    line = _filled(decl.snippet)
    if decl.keyword == "operator":
        line = line[: line.index(" doses")]
    elif decl.keyword == "placebo":
        line = line[: line.index(" of")]
    tails = {"on": " on a", "label": ' label: "L"', "doses": " doses 1, 2", "of": " of o"}
    for word in decl.after_body:
        module, diags = parse('audit "t" { version: 1 }\n' + line + tails[word] + "\n")
        assert diags == [], (word, diags)
    # and a scope is offered exactly where the AST keeps one
    assert ("on" in decl.after_body) <= decl.scoped


def test_kinds_and_references():
    assert vocabulary.KEYWORD_KIND["select"] == "selection" and vocabulary.keyword_for_kind("selection") == "select"
    assert vocabulary.REF_KINDS["operator"] == {"operator", "placebo"}
    assert vocabulary.REF_KINDS["measure"] == {"measure", "covariate"}
    assert "hypothesis" not in vocabulary.REF_KINDS  # a hypothesis's name is never referred to
    assert set(vocabulary.DOCS) == set(vocabulary.KEYWORDS) and all(vocabulary.DOCS.values())
