"""Missing scores are nulls in the bundle's tables (spec/bundle.md; METHODS: missing values), not NaN:
SQL engines skip a null in count() and avg() but count a NaN and return NaN."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from scoreaudit.runtime.scoring import _finite_or_reason
from scoreaudit.runtime.tables import Tables, write_tables


def _tables() -> Tables:
    t = Tables()
    for k, score in enumerate([0.5, float("nan"), 0.7, 0.9]):
        t.add_score("a", f"i{k}", "original", 0.0, "s", score)
        t.add_measure("a", f"i{k}", "original", 0.0, "ita", "measure", float("nan") if k == 2 else 30.0 + k)
    t.extend_columns("scores", {"arm": ["a"], "image_id": ["i9"], "operator": ["original"],
                                "dose": np.array([0.0]), "scorer": ["s"], "score": np.array([np.nan])})
    return t


def test_duckdb_counts_only_present_scores_and_averages_them(tmp_path):
    paths = write_tables(_tables(), tmp_path)
    con = duckdb.connect()
    n_rows, n_score, avg = con.execute(f"select count(*), count(score), avg(score) from '{paths['scores']}'").fetchone()
    assert (n_rows, n_score) == (5, 3)  # before: count(score) was 5 and avg NaN
    assert math.isfinite(avg) and avg == np.mean([0.5, 0.7, 0.9])
    n_value, avg_value = con.execute(f"select count(value), avg(value) from '{paths['measures']}'").fetchone()
    assert n_value == 3 and math.isfinite(avg_value)
    col = pq.read_table(paths["scores"]).column("score")
    assert col.null_count == 2 and str(col.type) == "double"


def test_statistics_read_nulls_as_missing_values(tmp_path):
    paths = write_tables(_tables(), tmp_path)
    s = pd.read_parquet(paths["scores"]).set_index("image_id")["score"]
    assert s.dtype == float and s[["i1", "i9"]].isna().all() and s.notna().sum() == 3


def test_a_scorer_returning_nan_is_a_failure_with_its_reason():
    assert _finite_or_reason("s", 0.25) == 0.25
    for v in (float("nan"), float("inf")):
        why = _finite_or_reason("s", v)
        assert isinstance(why, str) and "scorer 's'" in why and "not a finite score" in why
