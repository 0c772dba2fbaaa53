"""What drives a cell, for the cell kinds the demo does not have: planted in a bundle's tables, found by `contributors`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from scoreaudit.view.bundle import Bundle
from scoreaudit.view.pages import contributors


def _bundle(images: pd.DataFrame, scores: pd.DataFrame) -> Bundle:
    return Bundle(key="0", path=Path("."), tables={"images": images, "scores": scores})


def _scores(images: pd.DataFrame, values) -> pd.DataFrame:
    return pd.DataFrame({"arm": images["arm"], "image_id": images["image_id"], "operator": "original", "dose": 0.0,
                         "scorer": "s", "score": values})


def test_factor_cells_name_the_set_where_the_factor_moves_the_score_most():
    rng = np.random.default_rng(1)
    ids = [f"i{k:02d}" for k in range(30)]
    images = pd.DataFrame({"arm": "cf", "image_id": ids, "cluster": [f"set{k // 3}" for k in range(30)],
                           "race": ["a", "b", "c"] * 10})
    values = rng.normal(0, 0.05, 30)
    values[[12, 13, 14]] += [0.0, 2.0, -1.0]  # set4: the factor moves the score by 3 within it
    cell = {"id": "C1/s/cf", "scorer": "s", "arm": "cf", "arms": ["cf"], "statistic": "factor_effect",
            "params": {"factor": "race"}}
    got = contributors(_bundle(images, _scores(images, values)), cell)
    assert got["kind"] == "sets"
    first = [r for r in got["rows"] if r["cluster"].startswith("set4 ")]
    assert got["rows"][: len(first)] == first and len(first) == 3
    assert [r["image_id"] for r in first] == ["i13", "i12", "i14"]  # by score within the set


def test_agreement_cells_name_the_image_the_scorer_and_the_column_disagree_on_most():
    ids = [f"r{k:02d}" for k in range(20)]
    rating = np.arange(20, dtype=float)
    score = rating.copy()
    score[[0, 19]] = score[[19, 0]]  # the planted disagreement: the lowest and highest rated swap scores
    images = pd.DataFrame({"arm": "rated", "image_id": ids, "cluster": ids, "human_rating": rating})
    cell = {"id": "A1/s/rated", "scorer": "s", "arm": "rated", "arms": ["rated"], "statistic": "spearman",
            "params": {"column": "human_rating"}}
    got = contributors(_bundle(images, _scores(images, score)), cell)
    assert got["kind"] == "ranks"
    assert {r["image_id"] for r in got["rows"][:2]} == {"r00", "r19"}


def test_pairs_cells_name_the_widest_gaps():
    pairs = [f"p{k}" for k in range(6)]
    images = pd.DataFrame({"arm": "w", "image_id": [f"{p}:{side}" for p in pairs for side in ("preferred", "other")],
                           "cluster": [p for p in pairs for _ in (0, 1)], "side": ["preferred", "other"] * 6,
                           "pair_id": [p for p in pairs for _ in (0, 1)]})
    gaps = [0.1, -0.2, 3.0, 0.3, -1.5, 0.0]
    values = [v for g in gaps for v in (g, 0.0)]
    cell = {"id": "W1/s/w", "scorer": "s", "arm": "w", "arms": ["w"], "statistic": "pairwise_accuracy", "params": {}}
    got = contributors(_bundle(images, _scores(images, values)), cell)
    assert got["kind"] == "pairs" and [r["cluster"] for r in got["rows"][:3]] == ["p2", "p4", "p3"]
