"""The one AST builder: every rule has a callback, nesting limits, parser cache, threads.

The parser is Lark's LALR with `build.Builder` as its inline transformer; a
grammar rule without a callback would leave a Lark tree inside the AST, so
the rule list is checked against the builder. The per-user cache of Lark's
grammar analysis is a pickle, so it must only ever live in a private folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from lark import Lark

from scoreaudit.grammar import ast
from scoreaudit.grammar.build import MAX_DEPTH, Builder
from scoreaudit.grammar.lark_cache import GRAMMAR_PATH, cache_file as _cache_file
from scoreaudit.grammar.parser import parse

HEAD = 'audit "t" { version: 1 }\n'
SRC = Path(__file__).resolve().parents[2] / "src"


def _rules():
    return Lark(GRAMMAR_PATH.read_text(encoding="utf-8"), parser="lalr", keep_all_tokens=True).rules


def test_every_rule_that_builds_a_node_has_a_callback():
    needed = set()
    for rule in _rules():
        if rule.origin.name.startswith("_"):
            continue  # spliced into the parent by Lark
        if rule.options.expand1 and rule.alias is None and len(rule.expansion) == 1:
            continue  # `?rule` with one child: Lark passes the child up
        needed.add(str(rule.alias or rule.origin.name))
    missing = sorted(n for n in needed if not callable(getattr(Builder, n, None)))
    assert not missing, f"grammar rules without a Builder method: {missing}"


def test_no_builder_helper_is_named_like_a_rule():
    rules = {str(r.alias or r.origin.name) for r in _rules()}
    helpers = {n for n in vars(Builder) if n.startswith("_") and not n.startswith("__")}
    assert not helpers & rules


def test_no_lark_object_reaches_the_ast():
    import dataclasses

    src = (Path(__file__).resolve().parents[2] / "examples" / "skin_tone.audit").read_text(encoding="utf-8")
    module, _ = parse(src)

    def walk(node):
        assert type(node).__module__ != "lark.tree" and not type(node).__module__.startswith("lark"), node
        if dataclasses.is_dataclass(node):
            for f in dataclasses.fields(node):
                walk(getattr(node, f.name))
        elif isinstance(node, tuple):
            for x in node:
                walk(x)
        elif node is not None:
            assert isinstance(node, (str, int, float, bool)), type(node)

    walk(module)


def _deep_error(text: str):
    module, diags = parse(text)
    deep = [d for d in diags if d.code == "E0109"]
    return module, deep


@pytest.mark.parametrize("lists", [62, 63, 64, 70])
def test_list_nesting_limit(lists):
    # f at depth 1, list k at depth k + 1, the number at depth lists + 2
    prefix = HEAD + "scorer s = f(x: "
    module, deep = _deep_error(prefix + "[" * lists + "1" + "]" * lists + ")\n")
    if lists + 2 <= MAX_DEPTH:
        assert module is not None and not deep
        return
    assert module is None and len(deep) == 1
    # the first node at depth MAX_DEPTH + 1: list number MAX_DEPTH, or the number itself
    col = len("scorer s = f(x: ") + (MAX_DEPTH - 1 if lists >= MAX_DEPTH else lists) + 1
    assert (deep[0].span.line, deep[0].span.column) == (2, col)


@pytest.mark.parametrize("nots", [63, 64, 65, 90])
def test_region_negation_limit(nots):
    module, deep = _deep_error(HEAD + "region r = " + "not " * nots + "a\n")
    if nots + 1 <= MAX_DEPTH:
        assert module is not None and not deep
        return
    assert module is None and len(deep) == 1
    col = len("region r = ") + 4 * min(nots, MAX_DEPTH) + 1
    assert (deep[0].span.line, deep[0].span.column) == (2, col)


@pytest.mark.parametrize("terms", [64, 65, 66])
def test_product_chain_limit(terms):
    # `a * a * ...` associates to the left: the first `a` sits `terms` levels down
    module, deep = _deep_error('audit "t" { x: ' + " * ".join(["a"] * terms) + " }\n")
    if terms <= MAX_DEPTH:
        assert module is not None and not deep
    else:
        assert len(deep) == 1 and deep[0].span.column == len('audit "t" { x: ') + 1


def test_abs_counts_as_a_level():
    calls = MAX_DEPTH - 1  # abs at depth 1, the calls at 2 .. MAX_DEPTH
    ok = HEAD + 'hypothesis H "x" { abs(' + "f(" * calls + ")" * calls + ") > 1 }\n"
    assert parse(ok)[0] is not None
    bad = HEAD + 'hypothesis H "x" { abs(' + "f(" * (calls + 1) + ")" * (calls + 1) + ") > 1 }\n"
    assert [d.code for d in parse(bad)[1]] == ["E0109"]


def test_positional_after_keyword_in_order_and_not_on_failed_parses():
    text = HEAD + "scorer s = f(a: 1, 2, g(b: 1, 3))\n"
    module, diags = parse(text)
    assert module is None
    assert [(d.code, d.span.column) for d in diags] == [("E0110", 20), ("E0110", 31), ("E0110", 23)]
    # after a syntax error only the syntax error is reported
    _, diags = parse(text + "scorer t = \n")
    assert [d.code for d in diags] == ["E0101"]


def test_parses_in_threads_keep_their_own_findings():
    texts = [HEAD + f"scorer s = f(a: 1, {'2, ' * (i % 4 + 1)})\n" for i in range(16)]
    want = [[d.span for d in parse(t)[1]] for t in texts]
    got: dict[int, list] = {}

    def work(i):
        for _ in range(20):
            got.setdefault(i, []).append([d.span for d in parse(texts[i])[1]])

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, runs in got.items():
        assert all(r == want[i] for r in runs)
        assert len(want[i]) == i % 4 + 1


# ---------------------------------------------------------------- the parser cache


def test_cache_folder_is_private(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = _cache_file("grammar text")
    assert path and Path(path).parent == tmp_path / "scoreaudit"
    assert (tmp_path / "scoreaudit").stat().st_mode & 0o777 == 0o700
    assert _cache_file("another grammar") != path  # the grammar is part of the name


def test_cache_refuses_a_folder_others_can_write(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "scoreaudit").mkdir(mode=0o700)
    os.chmod(tmp_path / "scoreaudit", 0o777)
    assert _cache_file("g") is False


def test_cache_refuses_a_link_in_place_of_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = Path(_cache_file("g"))
    path.symlink_to(tmp_path / "elsewhere")
    assert _cache_file("g") is False


def test_cache_refuses_a_folder_that_is_a_file(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    (tmp_path / "scoreaudit").write_text("x")
    assert _cache_file("g") is False


def _parse_in_subprocess(xdg: Path) -> str:
    code = ("from scoreaudit.grammar.parser import parse; import sys;"
            "m, d = parse(sys.stdin.read()); print(repr((m, d)))")
    env = {**os.environ, "XDG_CACHE_HOME": str(xdg), "PYTHONPATH": str(SRC)}
    src = (Path(__file__).resolve().parents[2] / "examples" / "body_warp.audit").read_text(encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", code], input=src + "scorer x = f(a: 1, 2)\n",
                         capture_output=True, text=True, env=env, check=True, timeout=120)
    return out.stdout


def test_cached_parser_gives_the_same_result_and_survives_a_broken_cache(tmp_path):
    first = _parse_in_subprocess(tmp_path)  # builds the parser and writes the cache
    files = list((tmp_path / "scoreaudit").iterdir())
    assert len(files) == 1 and files[0].stat().st_size > 1000
    assert _parse_in_subprocess(tmp_path) == first  # loaded from the cache
    files[0].write_bytes(b"not a cache\n\x00\x01")
    assert _parse_in_subprocess(tmp_path) == first  # unreadable: Lark rebuilds it
    assert "E0110" in first
