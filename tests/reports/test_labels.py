"""Every interval and p-value names its level and sidedness, read from results.json (never hard-coded).

Each section is rendered from a bundle whose levels were changed to unusual
values (80%, 85%, ...): the labels must follow the data.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from scoreaudit.reports.render import render

import scoreaudit.stats.engine  # noqa: F401,E402 - a broken engine fails here, it never skips


def _section(html: str, name: str) -> str:
    m = re.search(rf'<section id="{name}".*?</section>', html, re.S)
    assert m, f"section {name} missing"
    return re.sub(r"\s+", " ", m.group(0))


def _rewrite(bundle: Path, tmp: Path, fn) -> str:
    d = tmp / bundle.name
    shutil.copytree(bundle, d)
    res = json.loads((d / "results.json").read_text(encoding="utf-8"))
    fn(res)
    (d / "results.json").write_text(json.dumps(res), encoding="utf-8")
    (d / "report.html").unlink(missing_ok=True)
    render(d, formats=["html"])
    return (d / "report.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    from real_bundle import planted_bundle

    d = planted_bundle(tmp_path_factory.mktemp("labels") / "skin", clusters=16, bootstrap=60)
    render(d, formats=["html"])
    return d


def test_real_bundle_labels_match_results_json(planted):
    """The statistics' own levels (cells 1 − 2α, sections 1 − α) and sidedness appear where the numbers are."""
    res = json.loads((planted / "results.json").read_text(encoding="utf-8"))
    html = (planted / "report.html").read_text(encoding="utf-8")
    alpha = res["settings"]["alpha"]
    cell_level = f"{round(100 * (1 - 2 * alpha), 4):g}% CI"
    assert {c["ci_level"] for c in res["cells"] if c.get("estimate") is not None} == {1 - 2 * alpha}
    hyp = _section(html, "hypotheses")
    assert cell_level in hyp
    for c in res["cells"]:
        if c["test"]["kind"] == "greater":
            assert "one-sided p, H\u2080: \u03b8 \u2264" in hyp
        if c["test"]["kind"] == "equivalence":
            assert "TOST p" in hyp
    sec = res["sections"]
    for name, key in (("curves", "curves"), ("placebo", "placebo"), ("drift", "drift"), ("uniformity", "uniformity")):
        levels = {r["ci_level"] for r in sec[key]}
        assert len(levels) == 1, name
        assert f"{round(100 * levels.pop(), 4):g}%" in _section(html, name), name
    uni = _section(html, "uniformity")
    assert {r["p_sided"] for r in sec["uniformity"]} == {"greater"}
    assert {r["asym_p_sided"] for r in sec["uniformity"]} == {"two-sided"}
    assert "p (one-sided)" in uni and "p (two-sided)" in uni
    assert "two-sided" in _section(html, "drift")
    # why cells and charts differ is said once, on the first screen
    glance = _section(html, "glance")
    assert "1 \u2212 2\u03b1" in glance and "1 \u2212 \u03b1" in glance


def test_section_levels_follow_the_data(planted, tmp_path):
    def odd(res):
        for c in res["cells"]:
            c["ci_level"] = 0.8
        for rows in res["sections"].values():
            for r in rows:
                if isinstance(r, dict) and "ci_level" in r:
                    r["ci_level"] = 0.85
                if isinstance(r, dict) and "ratio_ci_level" in r:  # transfer: rho's own interval
                    r["ratio_ci_level"] = 0.85
        for r in res["sections"]["uniformity"]:
            r["p_sided"] = "two-sided"

    html = _rewrite(planted, tmp_path, odd)
    assert "80% CI" in _section(html, "hypotheses") or "(80% CI)" in html
    for name in ("curves", "placebo", "drift", "uniformity", "transfer"):
        sec = _section(html, name)
        assert "85%" in sec, name
        assert "95%" not in sec and "90%" not in sec, name
    uni = _section(html, "uniformity")
    head = re.search(r"<thead>.*?</thead>", uni).group(0)
    assert "p (one-sided)" not in uni and head.count("p (two-sided)") == 2


def test_pairs_labels_mean_gap_and_units(bundles, tmp_path):
    """Pairs: the Wilson level is the cells' own; the mean-gap column is filled from mean_gap cells, in the audit's units."""
    base = bundles["cross_image"]

    def with_gap(scale):
        def fn(res):
            res["settings"]["scale"] = scale
            res["sections"]["pairs"] = []
            extra = []
            for c in res["cells"]:
                if c["statistic"] == "pairwise_accuracy":
                    c["ci_level"] = 0.9
                    extra.append({**c, "id": c["id"] + "/gap", "statistic": "mean_gap", "estimate": 0.42,
                                  "ci_low": 0.3, "ci_high": 0.55, "ci_level": 0.9, "detail": {}})
            res["cells"] += extra
        return fn

    html = _rewrite(base, tmp_path / "sd", with_gap("sd"))
    pairs = _section(html, "pairs")
    assert "90% Wilson CI" in pairs and "Wilson 95%" not in pairs
    assert "+0.420 [0.300, 0.550]" in pairs and "\u2014 \u2014" not in pairs
    assert "Mean gap (SD)" in pairs and "one-sided" in pairs
    raw = _section(_rewrite(base, tmp_path / "raw", with_gap("raw")), "pairs")
    assert "(SD)" not in raw and "Mean gap (raw score)" in raw
    # without mean-gap cells there is no empty column
    plain = _section(_rewrite(base, tmp_path / "none", lambda res: res["sections"].update(pairs=[])), "pairs")
    assert "Mean gap" not in plain


def test_operator_only_audit_is_not_told_no_attribute_is_manipulated(bundles, tmp_path):
    def fn(res):
        res["verdicts"] = []
    html = _rewrite(bundles["skin_tone"], tmp_path, fn)
    verdict = _section(html, "verdict")
    assert "no attribute is manipulated" not in verdict
    assert "light" in verdict  # names the operators it does have


def test_transfer_table_shows_the_ratio_the_statistics_compute(planted):
    """The transfer section shows ρ = target / source with its own interval level and the equivalence p,
    the numbers results.json holds (no empty difference column)."""
    from scoreaudit.reports import fmt

    html = (planted / "report.html").read_text(encoding="utf-8")
    sec = _section(html, "transfer")
    rows = json.loads((planted / "results.json").read_text(encoding="utf-8"))["sections"]["transfer"]
    assert rows and "Ratio &rho; [CI], p" in sec and "Difference [CI]" not in sec
    assert f"margin k = {fmt.plain(rows[0]['margin'])}" in sec
    assert f"{round(100 * rows[0]['ratio_ci_level'])}% CI" in sec
    for r in rows:
        if r.get("ratio") is not None:
            assert f"{fmt.num(r['ratio'])} {fmt.ci(r['ratio_ci_low'], r['ratio_ci_high'])}" in sec
            assert f"p {fmt.pval(r['p_equivalence'])}" in sec
