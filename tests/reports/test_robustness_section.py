"""`robustness` in the report: each generated-arm cell's per-seed estimates and same-sign/same-outcome rates."""

from __future__ import annotations

import json
import re

from fixture_bundle import BUILDERS

from scoreaudit.reports.render import render


def test_per_seed_estimates_are_shown_with_their_rates(tmp_path):
    d = BUILDERS["skin_tone"](tmp_path / "b")
    res = json.loads((d / "results.json").read_text())
    res["settings"]["robustness"] = 4
    cell = res["cells"][0]
    per = [{"seed": 11, "estimate": 0.21, "outcome": "supported", "undefined": None},
           {"seed": 12, "estimate": 0.05, "outcome": "inconclusive", "undefined": None},
           {"seed": 13, "estimate": -0.0123, "outcome": "inconclusive", "undefined": None},
           {"seed": 14, "estimate": None, "outcome": "inconclusive", "undefined": "fewer than two clusters"}]
    cell["seed_robustness"] = {"seeds": 4, "per_seed": per, "same_sign_rate": 0.5, "same_outcome_rate": 0.25}
    (d / "results.json").write_text(json.dumps(res))
    render(d, formats=["html"])
    page = (d / "report.html").read_text()
    sec = re.search(r'<section id="robustness".*?</section>', page, re.S).group(0)
    assert "robustness: 4" in sec
    rows = re.findall(r"<tbody>(.*?)</tbody>", sec, re.S)[0]
    assert rows.count("<tr>") == 1  # only the cell that has per-seed estimates
    assert "2 of 4" in rows and "1 of 4" in rows
    for text in ("seed 11: <span aria-hidden=\"true\">\u2713</span> +0.210", "seed 13: <span aria-hidden=\"true\">?</span> \u22120.0123",
                 "seed 14: <span aria-hidden=\"true\">?</span> \u2014", "fewer than two clusters"):
        assert text in rows, text
    assert 'href="#cell-1"' in rows


def test_no_section_without_seeds_or_setting(bundles):
    assert 'id="robustness"' not in (bundles["skin_tone"] / "report.html").read_text()
