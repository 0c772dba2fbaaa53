"""Done-means 2: a within-image audit whose scores and measures all come from a long parquet table
reproduces exactly the statistics of the same audit run through the runtime.

Run 1 computes everything (classical + planted scorers, a lab_shift operator with
symmetric doses and its placebo, the ita measure, a covariate, the builtin
leakage). Its bundle's tables/scores.parquet and measures.parquet are then the
precomputed tables of a second spec, in a fresh folder with its own cache. Every
cell (estimate, CI, p, q, outcome), validation and verdict must be identical, and
the second run must compute none of what the tables provide: the scorer,
operator and measure plugins raise if called.
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from scoreaudit.plugins.measures import Ita
from scoreaudit.plugins.operators import LabShift
from scoreaudit.plugins.scorers.classical import Sharpness
from scoreaudit.plugins.scorers.planted import Planted

from e2e_helpers import COMPUTED, FROM_TABLES, cells, copy_inputs, run, write_spec

FIELDS = ("estimate", "ci_low", "ci_high", "ci_level", "p", "q", "outcome")


def _forbid(monkeypatch):
    """Every plugin whose output a table provides raises if the runtime calls it."""
    def boom(*a, **k):
        raise AssertionError("the runtime computed what a table provides")

    monkeypatch.setattr(Sharpness, "_batch", boom)
    monkeypatch.setattr(Planted, "score", boom)
    monkeypatch.setattr(LabShift, "sweep", boom)
    monkeypatch.setattr(Ita, "compute", boom)


@pytest.fixture(params=sorted(FROM_TABLES))
def from_tables(request, computed, tmp_path, monkeypatch):
    copy_inputs(computed[0], tmp_path)
    _forbid(monkeypatch)
    results = run(write_spec(tmp_path, FROM_TABLES[request.param]), tmp_path / "out", render=True)
    return tmp_path, results


def test_cells_are_identical(computed, from_tables):
    _, a = computed
    _, b = from_tables
    ca, cb = cells(a), cells(b)
    assert sorted(ca) == sorted(cb) and len(ca) == 6
    for cid in ca:
        assert {f: ca[cid][f] for f in FIELDS} == {f: cb[cid][f] for f in FIELDS}, cid
    assert any(c["outcome"] == "supported" for c in ca.values())  # the audit found something to reproduce
    assert a["validations"] == b["validations"]
    assert a["verdicts"] == b["verdicts"]


def test_tables_are_the_same_bytes(computed, from_tables):
    fa, _ = computed
    fb, _ = from_tables
    for name in ("scores", "measures", "images", "regions"):
        assert (fa / "out" / "tables" / f"{name}.parquet").read_bytes() == \
            (fb / "out" / "tables" / f"{name}.parquet").read_bytes(), name


def test_nothing_was_scored_or_measured(from_tables):
    folder, _ = from_tables
    from scoreaudit.runtime.runlog import read_run_log

    kinds = {s.get("kind") for s in read_run_log(folder / "out" / "run.log") if isinstance(s, dict)}
    assert not kinds & {"score", "measure", "variant"}, kinds
    run_json = json.loads((folder / "out" / "run.json").read_text())
    assert run_json["first_score_at"] is None


def test_provenance_names_both_tables(from_tables):
    folder, results = from_tables
    got = {(e["file"], e["provides"]): e for e in results["precomputed"]}
    assert sorted(got) == [("results/measures.parquet", "measures"), ("results/scores.parquet", "scores")]
    for (file, kind), e in got.items():
        assert e["sha256"] == hashlib.sha256((folder / file).read_bytes()).hexdigest()
        assert e["arm"] == "real" and e["rows"] == len(pd.read_parquet(folder / file)) and e["used"] == e["rows"]
    assert got["results/scores.parquet", "scores"]["names"] == ["pl", "sharp"]
    assert got["results/measures.parquet", "measures"]["names"] == ["clip", "ita", "leakage"]


def test_measures_from_a_table_scores_computed(computed, tmp_path, monkeypatch):
    """Only the measures come from the table: no measure step runs, and the planted scorer, whose
    score moves with the change of ita (slope_by), reads that change from the table: same scores."""
    folder, a = computed
    copy_inputs(folder, tmp_path, tables=("measures",))
    monkeypatch.setattr(Ita, "compute", lambda *args, **kw: pytest.fail("ita computed despite the table"))
    spec = COMPUTED.replace('cluster: group)', 'cluster: group, measures: "results/measures.parquet")')
    assert spec != COMPUTED
    b = run(write_spec(tmp_path, spec), tmp_path / "out")
    from scoreaudit.runtime.runlog import read_run_log

    assert "measure" not in {s["kind"] for s in read_run_log(tmp_path / "out" / "run.log")}
    for name in ("scores", "measures"):
        assert (folder / "out" / "tables" / f"{name}.parquet").read_bytes() == \
            (tmp_path / "out" / "tables" / f"{name}.parquet").read_bytes(), name
    ca, cb = cells(a), cells(b)
    assert {k: [c[f] for f in FIELDS] for k, c in ca.items()} == {k: [c[f] for f in FIELDS] for k, c in cb.items()}
