"""`fmt`: idempotent, round-trips through the parser, keeps comments, canonical layout."""

from __future__ import annotations

import pytest
from grammar_testutil import EXAMPLES, GOLDEN, check_golden

from scoreaudit.grammar.ast import strip_spans
from scoreaudit.compiler.fmt import format_module
from scoreaudit.grammar.parser import parse


def fmt(src: str) -> str:
    module, diags = parse(src)
    assert module is not None and not diags, diags
    return format_module(module)


def assert_round_trip(src: str) -> str:
    out = fmt(src)
    assert fmt(out) == out, "fmt is not idempotent"
    m1, _ = parse(src)
    m2, _ = parse(out)
    assert strip_spans(m2) == strip_spans(m1)
    assert [c.text for c in m2.comments] == [c.text for c in m1.comments]
    return out


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_round_trip(path):
    out = assert_round_trip(path.read_text(encoding="utf-8"))
    if path.stem in ("skin_tone", "body_warp", "cross_image"):
        check_golden(GOLDEN / "fmt" / f"{path.stem}.audit", out)


def test_canonical_layout():
    src = (
        '# head\naudit "t" { version: 1  seed: 7 }   # trailing\n\n\n\n'
        "scorer   a=f( x :1 ,y:[ 1,2 ] )\n"
        "region r = (a | b) | (c | d) & not (e & f)   # algebra\n"
        'hypothesis H "t" { g() > 0.50 on x,y for a,b  abs(h()) within [ -1 , 1e3 ] }\n'
        "report { formats: html ,pdf }\n# tail\n"
    )
    assert fmt(src) == (
        "# head\n"
        'audit "t" {\n  version: 1\n  seed: 7\n}  # trailing\n'
        "\n"
        "scorer a = f(x: 1, y: [1, 2])\n"
        "region r = a | b | (c | d) & not (e & f)  # algebra\n"
        'hypothesis H "t" {\n  g() > 0.50 on x, y for a, b\n  abs(h()) within [-1, 1e3]\n}\n'
        "report {\n  formats: html, pdf\n}\n"
        "# tail\n"
    )
    assert_round_trip(src)


def test_comments_keep_their_place():
    src = (
        'audit "t" {\n'
        "  # about the version\n"
        "  version: 1   # one\n"
        "  seed: 7 # seven\n"
        "  # last in block\n"
        "}\n"
        "arm a = images(\"x\",   # inside\n"
        "   kind: real)         # after\n"
        "# footer\n"
    )
    out = assert_round_trip(src)
    assert out == (
        'audit "t" {\n'
        "  # about the version\n"
        "  version: 1  # one\n"
        "  seed: 7     # seven\n"
        "  # last in block\n"
        "}\n"
        "# inside\n"
        'arm a = images("x", kind: real)  # after\n'
        "# footer\n"
    )


def test_hash_inside_string_is_not_a_comment():
    out = assert_round_trip('audit "a # b" { title: "#1" }  # real\n')
    assert out == 'audit "a # b" {\n  title: "#1"\n}  # real\n'


def test_strings_are_reescaped():
    assert_round_trip('audit "q \\" \\\\ \\n \\t \\x" { v: 1 }\n')


def test_stripped_module_prints_without_comments():
    m, _ = parse('audit "t" { v: 1 }  # c\n\nscorer s = f()\n')
    assert format_module(strip_spans(m)) == 'audit "t" {\n  v: 1\n}\nscorer s = f()\n'
