"""recall@k against chance and correlate's per-group values (table, scatter, groups left out), from the cells."""

from __future__ import annotations

import re
from pathlib import Path

from scoreaudit.reports.context import ReportContext
from scoreaudit.reports.sections.ranked import ranked


def _ctx(cells):
    return ReportContext(bundle_dir=Path("."), results={"cells": cells, "settings": {"alpha": 0.05}}, ir={})


RECALL = {"id": "R1/s/a", "hypothesis": "R1", "statistic": "recall_best", "scorer": "s", "arm": "a",
          "estimate": 0.62, "ci_low": 0.51, "ci_high": 0.71, "ci_level": 0.9, "params": {"k": 1},
          "detail": {"chance": 0.25, "top_k": 1, "n": 80}}
CORR = {"id": "C1/s/a", "hypothesis": "C1", "statistic": "correlate", "scorer": "s", "arm": "a", "inner": "group_gap",
        "estimate": 0.81, "ci_low": 0.4, "ci_high": 0.95,
        "params": {"by": "country", "table": "hdi.csv", "column": "hdi", "method": "spearman"},
        "detail": {"groups": ["fr", "in", "ng", "us"], "values": [0.1, -0.2, -0.4, 0.3],
                   "table_values": [0.9, 0.63, 0.54, 0.92], "dropped": {"br": "the table has no numeric 'hdi' for it"}}}


def test_recall_is_drawn_against_its_chance_rate():
    svg = str(ranked(_ctx([RECALL]))["recall"]["chart"])
    texts = re.findall(r">([^<>]+)</text>", svg)
    assert "chance (random order)" in texts and "0.250" in texts and "0.620 [0.510, 0.710]" in texts


def test_correlate_shows_each_group_its_table_value_and_the_groups_left_out():
    e = ranked(_ctx([CORR]))["correlate"][0]
    assert [r["group"] for r in e["rows"]] == ["fr", "in", "ng", "us"]
    assert [r["table"] for r in e["rows"]] == ["0.900", "0.630", "0.540", "0.920"]
    assert e["dropped"] == [{"group": "br", "why": "the table has no numeric 'hdi' for it"}]
    dots = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', str(e["chart"]))
    assert len(dots) == 4
    xs = [float(x) for x, _ in dots]
    assert xs.index(max(xs)) == 3 and xs.index(min(xs)) == 2  # x is the table's value (us 0.92, ng 0.54)


def test_no_section_without_such_cells():
    assert ranked(_ctx([{"id": "x", "statistic": "fidelity_index"}])) is None


def test_the_section_renders_in_the_report():
    from scoreaudit.reports.render import render_html

    page = render_html(_ctx([RECALL, CORR]))
    sec = re.search(r'<section id="ranked".*?</section>', page, re.S).group(0)
    assert "Left out: br (the table has no numeric &#39;hdi&#39; for it)" in sec
    assert sec.count('<svg class="chart') == 2 and 'href="#cell-2"' in sec
