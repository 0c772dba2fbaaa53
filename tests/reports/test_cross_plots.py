"""ROC curves for AUROC cells and score-against-rating scatters, drawn from the bundle's tables: the ROC's area
equals the cell's AUROC (the statistics' estimate), and the curve is scikit-learn's ROC where it is installed."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from scoreaudit.reports.context import ReportContext
from scoreaudit.reports.sections.cross_plots import area, crossplots, roc_points


def test_roc_area_is_the_auroc_with_ties_half():
    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 400).astype(float)
    s = np.round(rng.normal(y * 0.8, 1.0), 1)  # rounded: many ties
    pos, neg = s[y == 1], s[y == 0]
    mann_whitney = ((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()) / (
        len(pos) * len(neg))
    pts = roc_points(s, y)
    assert pts[0] == (0.0, 0.0) and pts[-1] == (1.0, 1.0)
    assert area(pts) == pytest.approx(mann_whitney, abs=1e-12)
    metrics = pytest.importorskip("sklearn.metrics")
    fpr, tpr, _ = metrics.roc_curve(y, s, drop_intermediate=False)
    assert np.allclose(np.array(pts)[1:], np.c_[fpr, tpr][1:])


def test_every_auroc_cell_of_a_real_bundle_has_its_roc_with_the_cells_area(comparisons_bundle):
    res = json.loads((comparisons_bundle / "results.json").read_text())
    auroc = [c for c in res["cells"] if c["statistic"] == "agreement" and c["params"]["metric"] == "auroc"
             and c["estimate"] is not None]
    assert auroc
    data = crossplots(ReportContext.load(comparisons_bundle))
    rocs = {e["id"]: e for e in data["rocs"]}
    assert set(rocs) == {c["id"] for c in auroc}  # images arms and pairs arms alike
    for c in auroc:
        assert rocs[c["id"]]["auc"] == pytest.approx(c["estimate"], abs=1e-9), c["id"]
    page = (comparisons_bundle / "report.html").read_text()
    sec = re.search(r'<section id="crossplots".*?</section>', page, re.S).group(0)
    assert sec.count('<svg class="chart panel xy"') == len(auroc)


def test_scatter_of_score_against_rating_per_cluster(tmp_path):
    """A correlation cell gets a scatter of its arm's original scores against the rating column, one point per
    image (or per cluster mean when clusters hold several images)."""
    import pandas as pd

    d = tmp_path / "b"
    (d / "tables").mkdir(parents=True)
    n = 30
    images = pd.DataFrame({"arm": "rated", "image_id": [f"i{k}" for k in range(n)], "cluster": [f"c{k // 3}" for k in range(n)],
                           "rating": np.arange(n, dtype=float)})
    scores = pd.DataFrame({"arm": "rated", "image_id": images["image_id"], "operator": "original", "dose": 0.0,
                           "scorer": "s", "score": 2.0 * np.arange(n)})
    images.to_parquet(d / "tables" / "images.parquet")
    scores.to_parquet(d / "tables" / "scores.parquet")
    cell = {"id": "A1/s/rated", "hypothesis": "A1", "statistic": "spearman", "scorer": "s", "arm": "rated",
            "params": {"column": "rating"}, "estimate": 1.0, "ci_low": 0.9, "ci_high": 1.0}
    ctx = ReportContext(bundle_dir=d, results={"cells": [cell], "settings": {}}, ir={})
    e = crossplots(ctx)["scatters"][0]
    svg = str(e["chart"])
    dots = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', svg)
    assert len(dots) == n // 3 and "cluster (mean)" in e["caption"]  # 10 clusters of 3 images
    xs, ys = np.array(dots, float).T
    assert np.all(np.diff(xs) > 0) and np.all(np.diff(ys) < 0)  # rating up, score up (SVG y grows downward)
