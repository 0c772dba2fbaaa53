"""Diagnostics: carets on the parser's line, control characters made visible, rendering linear, no internal errors."""

from __future__ import annotations

import time

import pytest

from scoreaudit import api
from scoreaudit.compiler.fmt import format_module
from scoreaudit.diagnostics import Diagnostic, Span, render, render_all, safe_text, source_lines

SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
SPEC = '''audit "x" { version: 1 seed: 1 }   # a comment with SEP inside
scorer s = sharpness()  # SEP
arm real = images("data/real", manifest: "data/real.csv", kind: real)
hypothesis H1 "title SEP here" { curve(nosuch) > 0 on real for each scorer }
'''


@pytest.mark.parametrize("sep", SEPARATORS, ids=lambda s: f"U+{ord(s):04X}")
def test_the_caret_lands_on_the_parsers_line(sep):
    source = SPEC.replace("SEP", sep)
    checked = api.check("x.audit", source=source, tables=False)
    diag = next(d for d in checked.diagnostics if d.span is not None and d.code != "E0252")  # not the title
    assert diag.span.line == 4
    shown = render(diag, source)
    gutter_line = [ln for ln in shown.split("\n") if ln.startswith("   4 | ")][0]
    assert "curve(nosuch)" in gutter_line
    caret_line = shown.split("\n")[shown.split("\n").index(gutter_line) + 1]
    col = caret_line.index("^") - len("   4 | ")
    assert gutter_line[len("   4 | "):][col:].startswith("nosuch")
    assert len(source_lines(source)) == source.count("\n") + 1


def test_control_characters_from_data_are_made_visible():
    evil = "id\x1b[2J\x1b]8;;http://x\x07title\nnext"
    assert safe_text(evil) == "id\\x1b[2J\\x1b]8;;http://x\\x07title\\nnext"
    d = Diagnostic("E0704", "error", f"image file not found ({evil})", help="x\x9bH", notes=("\u202eevil",))
    out = render(d)
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\u202e" not in out
    assert len(out.split("\n")) == 3  # the newline inside the message did not start a line


def _duplicates(n: int) -> str:
    return 'audit "x" { version: 1 seed: 1 }\n' + "scorer s = sharpness()\n" * n


def _check_seconds(n: int) -> float:
    source = _duplicates(n)
    t = time.perf_counter()
    checked = api.check("x.audit", source=source, tables=False)
    render_all(checked.diagnostics, source)
    return time.perf_counter() - t


def test_rendering_many_diagnostics_is_linear():
    """20,000 duplicates must take about 10x what 2,000 take (quadratic would be 100x); bench/diagnostics.py times it."""
    _check_seconds(200)  # warm-up (imports, grammar tables)
    small = min(_check_seconds(2000) for _ in range(2))
    big = _check_seconds(20000)
    assert big / small < 40, (small, big)


def test_render_all_splits_the_source_once(monkeypatch):
    calls = []
    import scoreaudit.diagnostics as dg

    real = dg.source_lines
    monkeypatch.setattr(dg, "source_lines", lambda s: calls.append(1) or real(s))
    diags = [Diagnostic("E0201", "error", "dup", span=Span(2, 1, 2, 3, 0, 0))] * 50
    dg.render_all(diags, "a\nbc\n")
    assert len(calls) == 1


def test_column_as_a_claim_is_a_diagnostic_and_fmt_prints_it():
    source = ('audit "x" { version: 1 seed: 1 }\nscorer s = sharpness()\n'
              'arm real = images("d", manifest: "d.csv", kind: real)\n'
              'hypothesis H1 "h" { column(x) on real for each scorer }\n')
    checked = api.check("x.audit", source=source, tables=False)
    assert [d.code for d in checked.diagnostics if d.is_error] == ["E0250"]
    module, diags = api.parse(source, "x.audit")
    assert "column(x) on real for each scorer" in format_module(module)


@pytest.mark.parametrize("source, code", [
    ('audit "x" { version: 1 seed: ' + "9" * 400 + " }\n", "E0120"),
    ('audit "x" { version: 1 seed: 1 }\nscorer s = sharpness()\narm real = images("d", manifest: "d.csv", kind: real)\n'
     'operator o = lab_shift(channel: L) doses -1e308..1e308 step 1e-300\n', "E0402"),
    ('audit "x" { version: 1 seed: 1 }\nscorer pick = pickscore(prompt: column(prompt))\n'
     'arm real = images("d", manifest: "d.csv", kind: real, bogus: 3)\n'
     'hypothesis H1 "h" { mean_gap() > 0 on real for each scorer }\n', "E0301"),
    ('audit "x" { version: 1 seed: 1 alpha: 2 }\n', "E0251"),
    ('audit "x" { version: 1 seed: 1 bootstrap: 0 }\n', "E0251"),
    ('audit "x" { version: 1 seed: -1 }\n', "E0251"),
    ('audit "x" { version: 1 seed: 18446744073709551616 }\n', "E0251"),
])
def test_former_internal_errors_are_diagnostics(source, code):
    checked = api.check("x.audit", source=source, tables=False)
    codes = {d.code for d in checked.diagnostics}
    assert code in codes and "E0001" not in codes and "E0100" not in codes, checked.diagnostics


def test_bootstrap_below_1000_warns():
    checked = api.check("x.audit", source='audit "x" { version: 1 seed: 1 bootstrap: 500 }\n', tables=False)
    assert [d.code for d in checked.diagnostics] == ["W0250"]
