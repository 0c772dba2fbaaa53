"""Each audit setting is defined once (compiler/settings.py, issue 29): check's ranges, `describe`,
the language reference and the report's wording of the defaults all read that definition.

Before, the ranges lived in check.SETTING_RANGES, the meanings in describe.SETTING_DOCS, the defaults in
ir.Settings and the report wrote 0.05 and "(1 − 2α)" itself: a bound changed in one place left the others
saying the old one.
"""

from __future__ import annotations

import pytest

from scoreaudit.compiler import settings as setting_defs
from scoreaudit.compiler.describe import describe
from scoreaudit.compiler.settings import Range

from compiler_testutil import ROOT, check_text


def _range_errors(body: str) -> list:
    checked = check_text(f'audit "t" {{ version: 1 {body} }}\n')
    return [d for d in checked.diagnostics if d.code == "E0251"]


@pytest.mark.parametrize(("key", "outside", "inside"), [
    ("alpha", "0", "0.5"), ("alpha", "0.51", "0.01"), ("bootstrap", "99", "100"),
    ("batch_size", "0", "1"), ("max_leakage", "1.5", "1"), ("max_leakage", "-0.1", "0"),
    ("seed", "18446744073709551616", "18446744073709551615"), ("min_real_clusters", "0", "1"),
])
def test_range_error_quotes_the_definition(key, outside, inside):
    bounds = setting_defs.range_of(key)
    errs = _range_errors(f"{key}: {outside}")
    assert len(errs) == 1, errs
    assert f"it must be {bounds.text()}" in errs[0].message
    assert errs[0].help == f"write e.g. `{key}: {setting_defs.default(key)}`"
    assert _range_errors(f"{key}: {inside}") == []


def test_check_reads_the_bound_from_the_definition(monkeypatch):
    """A bound changed in the definition moves check's diagnostic with it (no second copy to forget)."""
    assert _range_errors("batch_size: 16") == []
    monkeypatch.setitem(setting_defs.RANGES, "batch_size", Range(32, unit="images"))
    errs = _range_errors("batch_size: 16")
    assert [e.message for e in errs] == ["setting `batch_size: 16` is out of range: it must be at least 32 images"]


def test_range_words():
    assert Range(0, 0.5, lo_open=True).text() == "above 0 and at most 0.5"
    assert Range(100, unit="resamples").text() == "at least 100 resamples"
    assert Range(0, 1, noun="a share").text() == "a share between 0 and 1"
    assert Range(0, 2 ** 64, hi_open=True).text() == "at least 0 and below 2^64"
    assert Range(hi=3, hi_open=True).contains(2.999) and not Range(hi=3, hi_open=True).contains(3)


def test_describe_shows_the_definition():
    for key in setting_defs.NAMES:
        out = describe(key)
        assert out is not None and setting_defs.doc(key) in out, key
        assert f"(default: {setting_defs.default(key)!r})" in out
        bounds = setting_defs.range_of(key)
        assert ("range: " in out) == (bounds is not None)
        assert bounds is None or f"range: {bounds.text()}" in out


def test_language_reference_table_is_the_definition():
    text = (ROOT / "spec" / "language.md").read_text(encoding="utf-8")
    for key in setting_defs.NAMES:
        bounds = setting_defs.range_of(key)
        row = next(line for line in text.splitlines() if line.startswith(f"| `{key}` |"))
        assert setting_defs.doc(key) in row and f"`{setting_defs.default(key)}`" in row
        assert bounds is None or bounds.text() in row


def test_every_setting_is_documented():
    assert all(setting_defs.doc(k) for k in setting_defs.NAMES)
    assert set(setting_defs.NAMES) == set(setting_defs.Settings.model_fields) - {"title"}


def test_report_reads_default_alpha_and_interval_rule():
    from scoreaudit.reports import labels
    from scoreaudit.reports.context import ReportContext

    # a cell without its own level, in a bundle whose settings do not say alpha: the definition's default
    assert labels.cell_level({}) == pytest.approx(1 - 2 * setting_defs.default("alpha"))
    assert setting_defs.claim_level(0.1) == pytest.approx(0.8)
    note = labels.interval_note(0.1)
    assert "80%" in note and f"({setting_defs.CLAIM_RULE})" in note
    assert ReportContext.alpha.fget(type("Bundle", (), {"results": {"settings": {}}})()) == \
        setting_defs.default("alpha")
