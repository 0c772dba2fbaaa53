"""At a glance: hypotheses × scorers with each cell's outcome and estimate, linking to its sentence; summary; legend."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from markupsafe import escape

from scoreaudit.reports.sentences import cell_sentence


def _section(html: str, name: str) -> str:
    m = re.search(rf'<section id="{name}".*?</section>', html, re.S)
    assert m
    return m.group(0)


@pytest.mark.parametrize("example", ["skin_tone", "body_warp", "cross_image"])
def test_every_cell_is_in_the_matrix_and_links_to_its_sentence(bundles, example):
    html = (bundles[example] / "report.html").read_text(encoding="utf-8")
    res = json.loads((bundles[example] / "results.json").read_text(encoding="utf-8"))
    glance = _section(html, "glance")
    links = re.findall(r'<a class="g (\w+)" href="#(cell-\d+)" title="[^"]*"><span class="sym">([^<]*)</span> ([^<]*)</a>',
                       glance)
    assert len(links) == len(res["cells"])
    icons = {"supported": "\u2713", "refuted": "\u2717", "inconclusive": "?"}
    assert len({a for _, a, _, _ in links}) == len(links)
    for outcome, anchor, icon, _est in links:
        cell = res["cells"][int(anchor.split("-")[1]) - 1]
        assert outcome == cell["outcome"] and icon == icons[outcome]
        li = re.search(rf'<li class="cell (\w+)" id="{anchor}">(.*?)</li>', html, re.S)
        assert li and li.group(1) == outcome
        assert str(escape(cell_sentence(cell))) in li.group(2)
    # one column per scorer that has cells, in declared order
    header = re.search(r"<thead>(.*?)</thead>", glance, re.S).group(1)
    scorers = list(dict.fromkeys(c["scorer"] for c in res["cells"]))
    cols = re.findall(r'<th scope="col" class="num">([^<]*)</th>', header)
    assert sorted(cols) == sorted(scorers)


@pytest.mark.parametrize("example", ["skin_tone", "cross_image"])
def test_summary_and_legend_are_generated_from_the_cells(bundles, example):
    html = (bundles[example] / "report.html").read_text(encoding="utf-8")
    res = json.loads((bundles[example] / "results.json").read_text(encoding="utf-8"))
    glance = re.sub(r"\s+", " ", _section(html, "glance"))
    counts = Counter(c["outcome"] for c in res["cells"])
    summary = re.search(r'<p class="summary">(.*?)</p>', glance).group(1)
    assert f"{len(res['cells'])} cells" in summary
    for o in ("supported", "refuted", "inconclusive"):
        assert f"{counts.get(o, 0)} {o}" in summary
    for v in res["verdicts"]:
        assert ("bias measurement" if v["verdict"] == "bias-measurement" else "stress test only") in summary
    alpha = res["settings"]["alpha"]
    assert f"q \u2264 {alpha:g}" in glance
    assert f"{round(100 * (1 - 2 * alpha)):g}% interval (1 \u2212 2\u03b1) lies entirely on the other side" in glance
    assert "neither" in glance
