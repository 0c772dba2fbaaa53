"""The parser's quick lexer (grammar/lexer.py `QuickLexer`) gives exactly the tokens, ASTs and syntax
diagnostics of Lark's own contextual lexer: on every example and on grammar-aware mutants of them
(the hardening fuzzer's mutations: hostile numbers and strings, keywords in name positions,
line duplicates/deletions/swaps, stray characters), errors included."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

from scoreaudit.grammar import lark_cache, parser as P
from scoreaudit.grammar.lexer import QuickLexer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "hardening"))
from test_hardening_fuzz import _names, mutate  # noqa: E402

EXAMPLES = sorted((ROOT / "examples").glob("*.audit"))


@pytest.fixture
def lark_lexer():
    """Swap Lark's contextual lexer back in for one parse."""
    frontend = lark_cache.parser().parser
    quick = frontend.lexer
    assert isinstance(quick, QuickLexer)

    def parse_with_lark(text: str):
        frontend.lexer = quick.inner
        try:
            return P.parse(text, "x.audit")
        finally:
            frontend.lexer = quick
    return parse_with_lark


def _tokens(text: str) -> list[tuple]:
    """Every token the quick lexer hands the parser (type, text, all positions), up to an error."""
    seen: list[tuple] = []
    frontend = lark_cache.parser().parser
    quick = frontend.lexer
    original = quick.lex

    def spy(lexer_state, parser_state):
        for t in original(lexer_state, parser_state):
            seen.append((t.type, str(t), t.start_pos, t.line, t.column, t.end_line, t.end_column, t.end_pos))
            yield t
    quick.lex = spy
    try:
        lark_cache.lark_parse(text)
    except Exception:
        pass
    finally:
        del quick.lex
    return seen


def _lark_tokens(text: str) -> list[tuple]:
    seen: list[tuple] = []
    frontend = lark_cache.parser().parser
    quick = frontend.lexer
    inner = quick.inner
    frontend.lexer = inner
    original = inner.lex

    def spy(lexer_state, parser_state):
        for t in original(lexer_state, parser_state):
            seen.append((t.type, str(t), t.start_pos, t.line, t.column, t.end_line, t.end_column, t.end_pos))
            yield t
    inner.lex = spy
    try:
        lark_cache.lark_parse(text)
    except Exception:
        pass
    finally:
        del inner.lex
        frontend.lexer = quick
    return seen


def test_the_parser_uses_the_quick_lexer():
    assert isinstance(lark_cache.parser().parser.lexer, QuickLexer)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_same_tokens_and_ast(path, lark_lexer):
    text = path.read_text(encoding="utf-8")
    assert _tokens(text) == _lark_tokens(text) and len(_tokens(text)) > 50
    assert P.parse(text, "x.audit") == lark_lexer(text)


def test_mutants_same_tokens_ast_and_diagnostics(lark_lexer):
    rng = random.Random(11)
    names = _names()
    sources = [p.read_text(encoding="utf-8") for p in EXAMPLES]
    extra = ["audit \"t\" { version: 1 }\nscorer on = f(by: on, for: 1)\n", "scorer s = f(\"abc\n", "arm a = f() ; \x00",
             "audit \"t\" { label: \"x\" }\nscorer s = f() label: \"y\"\n", "operator o = f() doses -20..20 step 1e-3\n"]
    errors = 0
    for n in range(400):
        text = extra[n] if n < len(extra) else mutate(rng, rng.choice(sources), names)
        assert _tokens(text) == _lark_tokens(text), text
        quick, slow = P.parse(text, "x.audit"), lark_lexer(text)
        assert quick == slow, text
        errors += quick[0] is None
    assert errors > 50  # the mutants exercise the error paths too
