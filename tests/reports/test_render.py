"""The HTML report: every section for the three normative examples, escaping, self-containment."""

from __future__ import annotations

from markupsafe import escape as _escape
import html
import json
import re
import shutil
from pathlib import Path

import pytest

from fixture_bundle import BUILDERS

from scoreaudit.reports.render import render
from scoreaudit.reports.sentences import cell_sentence

EXPECTED_SECTIONS = {
    "skin_tone": ["preregistration", "verdict", "glance", "hypotheses", "curves", "placebo", "drift", "transfer", "strata",
                  "validity", "uniformity", "exclusions", "appendix"],
    "body_warp": ["preregistration", "verdict", "glance", "hypotheses", "curves", "validity", "uniformity", "attribute",
                  "exclusions", "appendix"],
    "cross_image": ["preregistration", "verdict", "glance", "hypotheses", "pairs", "agreement", "factors", "ranks",
                    "exclusions", "appendix"],
}
ALL_SECTIONS = {s for v in EXPECTED_SECTIONS.values() for s in v}


def esc(s: str) -> str:
    return str(_escape(s))


def _html(bundle: Path) -> str:
    return (bundle / "report.html").read_text(encoding="utf-8")


def _results(bundle: Path) -> dict:
    return json.loads((bundle / "results.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("example", list(EXPECTED_SECTIONS))
def test_sections_render_in_declared_order(bundles, example):
    text = _html(bundles[example])
    ids = re.findall(r'<section id="([a-z_]+)"', text)
    assert ids == EXPECTED_SECTIONS[example]
    for absent in ALL_SECTIONS - set(ids):
        assert f'id="{absent}"' not in text


@pytest.mark.parametrize("example", list(EXPECTED_SECTIONS))
def test_every_cell_is_a_sentence_with_its_outcome(bundles, example):
    text = _html(bundles[example])
    results = _results(bundles[example])
    assert results["cells"]
    for cell in results["cells"]:
        sentence = cell_sentence(cell)
        assert esc(sentence) in text, sentence
        assert sentence.endswith(f": {cell['outcome']}.")
    # outcome is carried by text and icon, never by colour alone
    for outcome, icon in (("supported", "\u2713"), ("refuted", "\u2717"), ("inconclusive", "?")):
        n = sum(c["outcome"] == outcome for c in results["cells"])
        assert len(re.findall(rf'<span class="badge {outcome}"><span aria-hidden="true">{re.escape(icon)}</span> {outcome}</span>',
                              text)) == n


def test_sentence_format_matches_design():
    cell = {"arm": "real", "scorer": "pick", "statistic": "fidelity_index", "estimate": 0.0712, "ci_low": 0.05,
            "ci_high": 0.0901, "ci_level": 0.95, "p": 0.0002, "q": 0.0004, "outcome": "supported",
            "claim_text": "fidelity_index(light) > 0"}
    assert cell_sentence(cell) == ("On real, pick's fidelity index is +0.0712 [0.0500, 0.0901] (95% CI), p < 0.001, "
                                   "q < 0.001 (claim: fidelity_index(light) > 0): supported.")
    undefined = {**cell, "statistic": "placebo_ratio", "estimate": None, "undefined": "placebo FI CI contains 0",
                 "outcome": "inconclusive"}
    assert "placebo ratio is undefined (placebo FI CI contains 0)" in cell_sentence(undefined)


def test_first_screen_verdict_conditions(bundles):
    text = _html(bundles["body_warp"])
    first = text[: text.index('<section id="curves"')]
    assert "Mechanistic stress test only" in first
    for name in ("pixel isolation", "measurement validity", "real-data arm"):
        assert f'<span class="cname">{name}</span> <span class="ctext">not held</span>' in first
    assert "leakage 18.4%" in first and "r\u00b2 0.310" in first
    skin = _html(bundles["skin_tone"])
    assert "Bias measurement" in skin and skin.count('<span class="ctext">held</span>') == 3
    assert "No operator in this audit: no verdict applies" in _html(bundles["cross_image"])


def test_preregistration_states(bundles):
    assert "Pre-registered" in _html(bundles["skin_tone"])
    assert "Not pre-registered" in _html(bundles["body_warp"])
    cross = _html(bundles["cross_image"])
    assert "DEVIATION from the pre-registration" in cross
    block = cross[cross.index('id="preregistration"'): cross.index('id="verdict"')]
    assert re.search(r'<strong>H2</strong></td><td data-label="Change">changed after locking', block)
    assert re.search(r'<strong>H7</strong></td><td data-label="Change">added after locking', block)


def test_exclusions_list_every_image_with_reason(bundles):
    text = _html(bundles["skin_tone"])
    for e in _results(bundles["skin_tone"])["exclusions"]:
        assert esc(e["reason"]) in text
    assert "No image was excluded." in _html(bundles["cross_image"])


def test_empty_sections_are_named_not_part_of_audit(bundles):
    text = _html(bundles["cross_image"])
    assert re.search(r"Not part of this audit: [^<]*Fidelity curves", text)
    assert "Placebo ratios" in text[text.index("Not part of this audit"):]


def test_appendix_has_exact_spec_and_hash(bundles):
    import hashlib

    d = bundles["skin_tone"]
    spec = (d / "spec.audit").read_text(encoding="utf-8")
    text = _html(d)
    shown = re.search(r'<pre class="spec">(.*?)</pre>', text, re.S).group(1)
    assert html.unescape(re.sub(r"</?span[^>]*>", "", shown)) == spec  # exact, once the highlighting is removed
    assert '<span class="kd">scorer</span>' in shown and '<span class="nf">lab_shift</span>' in shown
    assert hashlib.sha256(spec.encode()).hexdigest() in text
    for pkg, version in _results(d)["environment"]["packages"].items():
        assert f"<dt>{pkg}</dt> <dd>{version}</dd>" in text
    for s in _results(d)["environment"]["scorers"].values():
        assert s["weights_sha256"] in text


PAYLOADS = ("<script>alert(1)</script>", '"><img src=x onerror=alert(1)>')


@pytest.mark.parametrize("payload", PAYLOADS)
def test_user_strings_are_escaped(tmp_path, payload):
    d = BUILDERS["skin_tone"](tmp_path / "b")
    r = _results(d)
    r["title"] = "T " + payload
    r["exclusions"][0]["reason"] = payload
    r["exclusions"][1]["image_id"] = payload
    r["cells"][0]["scorer"] = payload
    r["cells"][0]["claim_text"] = payload
    r["hypotheses"][0]["title"] = payload
    r["sections"]["curves"][0]["arm"] = payload
    r["sections"]["strata"][0]["strata"][0]["level"] = payload
    r["environment"]["packages"][payload] = payload
    r["lock"]["deviations"] = [{"hypothesis": payload, "change": "added"}]
    r["lock"]["status"] = "deviation"
    (d / "results.json").write_text(json.dumps(r), encoding="utf-8")
    spec = (d / "spec.audit").read_text(encoding="utf-8") + f"\n# {payload}\n"
    (d / "spec.audit").write_text(spec, encoding="utf-8")
    render(d, formats=["html"])
    text = _html(d)
    assert payload not in text
    assert "<script" not in text.lower()
    assert "<img" not in text.lower()
    assert text.count(esc(payload)) >= 8


LOAD_PATTERNS = (
    re.compile(r"""\b(?:src|href|xlink:href|action|poster|data)\s*=\s*["']?(?!#)[^"'\s>]*:""", re.I),
    re.compile(r"url\(\s*['\"]?(?!#)", re.I),
    re.compile(r"@import", re.I),
    re.compile(r"<(?:script|link|iframe|object|embed|img)\b", re.I),
)


@pytest.mark.parametrize("example", list(EXPECTED_SECTIONS))
def test_self_contained_no_external_loads(bundles, example):
    text = _html(bundles[example])
    for pat in LOAD_PATTERNS:
        assert not pat.search(text), pat.pattern
    assert "http://" not in text.replace("http-equiv", "") and "https://" not in text
    assert "Content-Security-Policy" in text


def test_render_reads_only_the_bundle(tmp_path):
    """No tables needed: the report renders from results.json (+ spec, ir) alone, deterministically."""
    d = BUILDERS["body_warp"](tmp_path / "b")
    shutil.rmtree(d / "tables")
    render(d, formats=["html"])
    first = _html(d)
    render(d, formats=["html"])
    assert _html(d) == first
    assert str(tmp_path) not in first


def test_minimal_results_still_render(tmp_path):
    """Missing optional fields never crash the strict templates."""
    d = tmp_path / "b"
    d.mkdir()
    cell = {"id": "H1/s/a", "hypothesis": "H1", "scorer": "s", "arm": "a", "statistic": "fidelity_index",
            "estimate": 0.1, "ci_low": None, "ci_high": None, "p": None, "q": None, "outcome": "inconclusive"}
    (d / "results.json").write_text(json.dumps({"cells": [cell]}), encoding="utf-8")
    render(d, formats=["html"])
    text = _html(d)
    assert "On a, s&#39;s fidelity index is +0.100" in text
    assert 'id="exclusions"' in text


def test_not_a_bundle_is_a_clear_error(tmp_path):
    from scoreaudit.reports.context import BundleError

    with pytest.raises(BundleError, match="results folder"):
        render(tmp_path)


def test_missing_weasyprint_writes_html_and_says_how(tmp_path, monkeypatch, capsys):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *a, **k):
        if name == "weasyprint":
            raise ImportError("No module named 'weasyprint'")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    d = BUILDERS["body_warp"](tmp_path / "b")
    paths = render(d, formats=["html", "pdf"])
    assert paths == [d / "report.html"] and not (d / "report.pdf").exists()
    assert "pip install 'scoreaudit[pdf]'" in capsys.readouterr().err


def test_formats_default_to_the_spec_report_block(tmp_path):
    from scoreaudit.reports.render import wanted_formats
    from scoreaudit.reports.context import ReportContext

    d = BUILDERS["skin_tone"](tmp_path / "s")
    assert wanted_formats(ReportContext.load(d), None) == ["html", "pdf"]
    d2 = BUILDERS["body_warp"](tmp_path / "b")
    assert wanted_formats(ReportContext.load(d2), None) == ["html"]
    with pytest.raises(ValueError, match="unknown report format"):
        wanted_formats(ReportContext.load(d2), ["docx"])
