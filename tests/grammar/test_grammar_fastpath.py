"""The fast parser (`fastparse.py`) agrees with the Lark path on every input.

Same module (spans included) and same diagnostics on valid files, random valid
specs, mutated files and edge cases; the fast path is really taken on valid
files; its stored tables match the grammar.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from grammar_testutil import EXAMPLES
from hypothesis import HealthCheck, given, settings
from test_grammar_diagnostics import CASES
from test_grammar_fuzz import _mutate
from test_grammar_property import specs

from scoreaudit.grammar import parser as P
from scoreaudit.grammar.fastparse import Bail, parse_decls
from scoreaudit.grammar.tables import compute_tables, grammar_hash

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from compile import make_spec  # noqa: E402


def lark_path(text: str, path: str = "t.audit"):
    p = P._Parse(text, path)
    p.fast = lambda: None
    return p.run()


def assert_same(text: str) -> None:
    assert P.parse(text, "t.audit") == lark_path(text), text


def fast_taken(text: str) -> bool:
    try:
        parse_decls(text)
    except Bail:
        return False
    return True


def test_stored_tables_match_the_grammar():
    from scoreaudit.grammar._tables import GRAMMAR_SHA256

    assert GRAMMAR_SHA256 == grammar_hash(), "stale tables: python -m scoreaudit.grammar.tables"


def test_computed_tables_drive_the_same_parse(monkeypatch):
    """Tables freshly computed by Lark (what a stale file falls back to) give the same module."""
    from scoreaudit.grammar import fastparse

    src = EXAMPLES[0].read_text(encoding="utf-8")
    want = P.parse(src)
    monkeypatch.setattr(fastparse, "_grammar", lambda g=fastparse._Grammar(compute_tables()): g)
    assert P.parse(src) == want


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_take_the_fast_path_and_agree(path):
    text = path.read_text(encoding="utf-8")
    assert fast_taken(text)
    assert_same(text)


def test_benchmark_spec_agrees():
    text = make_spec(30, 40)
    assert fast_taken(text)
    assert_same(text)


@pytest.mark.parametrize("name", sorted(CASES))
def test_syntax_error_cases_agree(name):
    assert_same(CASES[name][0])


EDGE = [
    "", "   \n", "# only a comment\n", "\ufeffaudit \"t\" { version: 1 }\n",
    'audit "t" { version: 1 }\r\n', 'audit "t" { version: 1 }\r',
    'audit "t" { on: 1, for: 2, not: x }\n',  # keywords followed by `:` are names
    'audit "t" { version: 1 }\nscorer s = f(audité: 1)\n',
    'audit "t" { version: 1 }\nscorer s = f(1not)\n',
    'audit "t" { version: 1 }\nscorer s = f(a: 1, 2)\n',  # E0110
    'audit "t" { version: 1 }\nscorer s = f(column(x), column("y"), column(a: b))\n',
    'audit "t" { version: 1 }\nregion r = ((not (a)) & (b | c(x: [1, [2]])))\n',
    'audit "t" { version: 1 }\nscorer s = f(x: a * b * c, y: [], z: [1,], w: "a\\"b\\\\n")\n',
    'audit "t" { version: 1 }\noperator o = f() doses -20..20 step 5\n',
    'audit "t" { version: 1 }\nselect b = best_of 4 under o by m\nselect c = best_of 2 by m\n',
    'audit "t" { version: 1 }\nhypothesis H "x" {\n f(a) > 1 on r, s for each scorer\n'
    ' abs(g(b)) < 0.1 for s, t\n h(c) within [-1, 1] on r\n}\n',
    'scorer s = f()\n',
    'audit "t" { x: 1..2 }\n', 'audit "t" { x: - 1 }\n', 'audit "t" { x: 1. }\n',
    'audit "t" { version: 1 }\nregion r = not\nmeasure m = f()\n',
]


@pytest.mark.parametrize("text", EDGE)
def test_edge_cases_agree(text):
    assert_same(text)


@pytest.mark.parametrize("depth", [20, 50, 60, 63, 64, 65, 70, 200])
def test_deep_nesting_agrees(depth):
    value = "[" * depth + "1" + "]" * depth
    assert_same(f'audit "t" {{ version: 1 }}\nscorer s = f(x: {value})\n')
    region = "not " * depth + "a"
    assert_same(f'audit "t" {{ version: 1 }}\nregion r = {region}\n')
    chain = " * ".join(["a"] * depth)
    assert_same(f'audit "t" {{ x: {chain} }}\n')


def test_mutated_files_agree():
    rng = random.Random(7)
    sources = [p.read_text(encoding="utf-8") for p in EXAMPLES]
    for _ in range(250):
        assert_same(_mutate(rng, rng.choice(sources)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs)
def test_random_valid_specs_agree(src):
    assert fast_taken(src)
    assert_same(src)
