"""Every syntax code: exact rendered text (golden), position inside the file, fix advice."""

from __future__ import annotations

import pytest
from grammar_testutil import GOLDEN, check_golden

from scoreaudit.diagnostics import render_all
from scoreaudit.grammar.parser import parse

HEAD = 'audit "t" {\n  version: 1\n}\n'

#: name -> (source, the codes it must report, in order)
CASES = {
    "E0101_unexpected_token": (HEAD + "scorer s f()\n", ["E0101"]),
    "E0101_misspelled_keyword": (HEAD + "scorers s = f()\n", ["E0101"]),
    "E0101_missing_comma": (HEAD + 'arm a = images("x" kind: real)\n', ["E0101"]),
    "E0101_missing_colon": ('audit "t" { version: 1 seed 7 }\n', ["E0101"]),
    "E0101_threshold_not_number": (HEAD + 'hypothesis H "t" {\n  f() > x\n}\n', ["E0101"]),
    "E0101_unclosed_paren": (HEAD + "scorer s = f(a: 1\nmeasure m = g()\n", ["E0101"]),
    "E0101_incomplete_region": (HEAD + "region r = not\nmeasure m = h()\n", ["E0101"]),
    "E0102_missing_doses": (HEAD + "operator light = lab_shift(channel: L)\nscorer s = f()\n", ["E0102"]),
    "E0102_doses_without_keyword": (HEAD + "operator light = lab_shift(channel: L) -15, 0, 15\n", ["E0102"]),
    "E0102_missing_doses_at_eof": (HEAD + "operator light = lab_shift(channel: L)", ["E0102"]),
    "E0103_unclosed_hypothesis": (
        HEAD + 'hypothesis H1 "x" {\n  f(a) > 0\n\nhypothesis H2 "y" {\n  g() > 1\n}\n',
        ["E0103"],
    ),
    "E0103_unclosed_audit": ('audit "t" {\n  version: 1\nscorer laion = laion_aesthetic()\n', ["E0103"]),
    "E0103_unclosed_at_eof": (HEAD + 'report {\n  title: "x"\n', ["E0103"]),
    "E0104_equals_in_settings": ('audit "t" {\n  version = 1\n}\n', ["E0104"]),
    "E0104_equals_in_report": (HEAD + 'report {\n  formats: html\n  title = "x"\n}\n', ["E0104"]),
    "E0105_unquoted_prompt": (HEAD + "scorer pick = pickscore(prompt: a photo of a person)\n", ["E0105"]),
    "E0105_unquoted_title": (HEAD + "report {\n  title: Skin lightness audit\n}\n", ["E0105"]),
    "E0106_unterminated_string": ('audit "t {\n  version: 1\n}\n', ["E0106"]),
    "E0106_unterminated_arg": (HEAD + 'scorer s = f(prompt: "a photo)\n', ["E0106"]),
    "E0107_semicolon": (HEAD + "scorer s = f(a: 1);\n", ["E0107"]),
    "E0107_trailing_dot": (HEAD + "operator o = f() doses 1.\n", ["E0107"]),
    "E0107_unquoted_path": (HEAD + "arm a = images(data/real)\n", ["E0107"]),
    "E0107_nul_byte": (HEAD + "scorer s = f()\x00\n", ["E0107"]),
    "E0108_empty_file": ("# only a comment\n", ["E0108"]),
    "E0108_no_audit_block": ("scorer s = f()\n", ["E0108"]),
    "E0109_too_deep": (HEAD + "scorer s = " + "f(" * 70 + ")" * 70 + "\n", ["E0109"]),
    "E0110_positional_after_keyword": (HEAD + 'arm a = images(kind: real, "x")\n', ["E0110"]),
    "E0472_two_readings": (HEAD + 'hypothesis S3 "t" {\n  pairwise_accuracy() on wide < pairwise_accuracy() on orig'
                           ' for hps\n}\n', ["E0472"]),
    "E0472_two_calls": (HEAD + 'hypothesis S "t" {\n  f() > g()\n}\n', ["E0472"]),
    "several_errors": (
        HEAD + "scorer s = f(\narm a = g(x: 1 2)\nregion r = not\nmeasure m = h()\noperator o = k()\n",
        ["E0101", "E0101", "E0101", "E0102"],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_syntax_diagnostic_golden(name):
    src, codes = CASES[name]
    module, diags = parse(src, f"{name}.audit")
    assert module is None
    assert [d.code for d in diags] == codes
    n_lines = src.count("\n") + 1
    for d in diags:
        assert d.severity == "error" and d.help, d
        assert 1 <= d.span.line <= n_lines and 1 <= d.span.end_line <= n_lines
        assert 0 <= d.span.start <= d.span.end <= len(src)
    check_golden(GOLDEN / "syntax" / f"{name}.txt", render_all(diags, src) + "\n")


def test_all_codes_covered():
    codes = {c for _, cs in CASES.values() for c in cs}
    assert {f"E01{i:02d}" for i in range(1, 11)} <= codes


def test_e0103_points_at_the_open_brace():
    src, _ = CASES["E0103_unclosed_hypothesis"]
    _, diags = parse(src)
    d = diags[0]
    assert src[d.span.start] == "{" and d.span.line == 4
    assert "before line 7" in d.help


def test_e0105_suggests_the_quoted_text():
    src, _ = CASES["E0105_unquoted_prompt"]
    _, diags = parse(src)
    assert diags[0].help == 'put text in double quotes: `prompt: "a photo of a person"`'


def test_non_str_input_does_not_raise():
    module, diags = parse(b'audit "t" { v: 1 }')
    assert module is not None and diags == []
    module, diags = parse(None)
    assert module is None and diags
