"""The statistics engine's results at a fixed seed do not move when its cost model changes (issue 33).

The golden file holds every cell (estimate, interval, p, q, outcome) and every section number of
bench/stats.py's audit on a small planted input, as computed by the engine *before* the jackknife
stopped materialising C × C matrices. Regenerate only for an intended change of the statistics:
``SCOREAUDIT_REGEN=1 pytest tests/stats/test_engine_linear_equivalence.py`` (and inspect the diff).
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "engine_bench_small.json"
CELL_KEYS = ("estimate", "ci_low", "ci_high", "p", "q", "se")


def _bench_spec() -> str:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import stats as bench_stats  # bench/stats.py
    finally:
        sys.path.pop(0)
    return bench_stats.SPEC


def _results(tmp_path: Path) -> dict:
    from scoreaudit import api
    from scoreaudit.stats.engine import compute
    from scoreaudit.stats.planted import ArmShape, planted_tables

    p = tmp_path / "bench.audit"
    p.write_text(_bench_spec().replace("BOOT", "300"), encoding="utf-8")
    checked = api.check(p)
    assert checked.ok, [m.message for m in checked.diagnostics]
    ir = checked.ir
    truth = {name: dict(s.call.params) for name, s in ir.scorers.items()}
    shapes = {"real": ArmShape(48, 1, {"race": ("A", "B", "C", "D")}), "synthetic": ArmShape(9, 4)}
    tables = planted_tables(ir, shapes, truth, seed=7)
    res, _, _ = compute(ir, tables, progress=False)
    cells = {c["id"]: {**{k: c[k] for k in CELL_KEYS}, "outcome": c["outcome"]} for c in res["cells"]}
    secs = {name: [{k: v for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
                   for row in rows] for name, rows in res["sections"].items() if name != "validity"}
    return {"cells": cells, "sections": secs}


def _close(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return bool(np.isclose(a, b, rtol=1e-9, atol=1e-12))


def test_cells_and_sections_match_the_quadratic_engine(tmp_path):
    got = json.loads(json.dumps(_results(tmp_path)))  # the golden's JSON round trip (NaN stays NaN)
    if os.environ.get("SCOREAUDIT_REGEN") == "1":
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True), encoding="utf-8")
        pytest.skip("golden regenerated")
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert set(got["cells"]) == set(want["cells"])
    assert len(got["cells"]) > 40
    for cid, w in want["cells"].items():
        g = got["cells"][cid]
        assert g["outcome"] == w["outcome"], cid
        for k in CELL_KEYS:
            assert _close(g[k], w[k]), (cid, k, g[k], w[k])
    assert set(got["sections"]) == set(want["sections"])
    for name, rows in want["sections"].items():
        assert len(got["sections"][name]) == len(rows), name
        for g, w in zip(got["sections"][name], rows):
            assert set(g) == set(w), name
            for k in w:
                assert _close(g[k], w[k]), (name, k, g[k], w[k])


def test_leave_one_out_equals_the_dense_jackknife():
    """`LeaveOneOut` is the C × C (or C × C_root) jackknife weight matrix, without building it."""
    from scoreaudit.stats.bootstrap import LeaveOneOut, weighted_ratio
    from scoreaudit.stats.regression import solve_weighted

    rng = np.random.default_rng(3)
    C = 37
    x, den = rng.normal(size=(C, 3)), rng.integers(1, 5, size=C).astype(float)
    J = LeaveOneOut(C, np.arange(C))
    dense = 1.0 - np.eye(C)
    np.testing.assert_allclose(J @ x, dense @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weighted_ratio(J, x[:, 0], den), weighted_ratio(dense, x[:, 0], den), rtol=1e-12)
    np.testing.assert_allclose(weighted_ratio(J, x, np.ones(C)), weighted_ratio(dense, x, np.ones(C)), rtol=1e-12)
    ok = rng.random(C) > 0.3
    np.testing.assert_allclose(J[ok] @ x, dense[ok] @ x, rtol=1e-12, atol=1e-12)
    cols = np.sort(rng.choice(60, size=C, replace=False))  # a stratum's clusters among a root arm's 60
    R = LeaveOneOut(60, cols)
    Rd = np.ones((C, 60))
    Rd[np.arange(C), cols] = 0.0
    np.testing.assert_array_equal(R.dense(), Rd)
    y = rng.normal(size=(60, 2))
    np.testing.assert_allclose(R @ y, Rd @ y, rtol=1e-12, atol=1e-12)
    A = rng.normal(size=(C, 2, 2))
    A = A @ A.transpose(0, 2, 1) + np.eye(2)
    g = rng.normal(size=(C, 2))
    np.testing.assert_allclose(solve_weighted(A, g, J), solve_weighted(A, g, dense), rtol=1e-10)
    with pytest.raises(ValueError):
        J @ y  # wrong number of rows is an error, not a silent broadcast
