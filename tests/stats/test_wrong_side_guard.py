"""A cell is never supported when its own point estimate lies on the wrong side of the claim.

On real pairs a difference of pairwise accuracies was supported at −0.014 [−0.055, +0.027]:
its test dropped the tied pairs its estimate counted half. Whatever a statistic's test, the
outcome rule lets the estimate veto support (spec/methods.md, "Outcome rule").
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from scoreaudit.compiler.ir import TestIR as Claim
from scoreaudit.stats.engine import evaluate_cells
from scoreaudit.stats.estimate import Estimate
from scoreaudit.stats.outcomes import number_outcome, wrong_side

ALPHA = 0.05
TESTS = {
    "greater": Claim(kind="greater", threshold=0.0, text="θ > 0"),
    "less": Claim(kind="less", threshold=0.0, text="θ < 0"),
    "equivalence": Claim(kind="equivalence", low=-0.1, high=0.1, text="abs(θ) < 0.1"),
}
WRONG = {"greater": -0.014, "less": 0.014, "equivalence": 0.13}  # point estimates contradicting each claim


def _estimates(value: float):
    """One estimate per way a statistic can take its p apart from its point estimate."""
    rng = np.random.default_rng(0)
    # an analytic test of another quantity (the McNemar-over-untied-pairs failure): p = 0.001
    yield "analytic", Estimate(value, "bootstrap", p_fn=lambda t, side: 0.001,
                               boot=value + rng.normal(0, 0.02, 2000))
    # bootstrap replicates that sit all on the claim's side while the estimate does not
    if value < 0:
        boot = np.abs(rng.normal(0.3, 0.01, 2000))
    elif value > 0.1:
        boot = rng.normal(0.0, 0.001, 2000)
    else:
        boot = -np.abs(rng.normal(0.3, 0.01, 2000))
    yield "bootstrap", Estimate(value, "bootstrap", boot=boot, ci="percentile")


@pytest.mark.parametrize("kind", sorted(TESTS))
def test_a_small_p_does_not_support_a_contradicting_estimate(kind):
    test = TESTS[kind]
    for how, est in _estimates(WRONG[kind]):
        assert wrong_side(est.estimate, test)
        assert number_outcome(est, test, q=0.001, alpha=ALPHA) != "supported", (kind, how)


@pytest.mark.parametrize("kind", sorted(TESTS))
def test_the_estimate_on_the_claims_side_is_still_supported(kind):
    right = {"greater": 0.2, "less": -0.2, "equivalence": 0.0}[kind]
    est = Estimate(right, "bootstrap", boot=np.full(100, right), ci="percentile")
    assert not wrong_side(right, TESTS[kind])
    assert number_outcome(est, TESTS[kind], q=0.001, alpha=ALPHA) == "supported"


def test_at_the_threshold_is_not_above_it():
    assert wrong_side(0.0, TESTS["greater"]) and wrong_side(0.0, TESTS["less"])
    assert wrong_side(0.1, TESTS["equivalence"]) and not wrong_side(0.099, TESTS["equivalence"])
    at_least = Claim(kind="greater", threshold=0.0, strict=False, text="θ >= 0")
    assert not wrong_side(0.0, at_least) and wrong_side(-1e-9, at_least)


def _calibration():
    path = Path(__file__).resolve().parents[2] / "bench" / "calibration.py"
    spec = importlib.util.spec_from_file_location("calibration_bench_guard", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow  # a sweep over every statistic kind (7 s measured)
def test_no_statistic_kind_supports_a_cell_against_its_estimate():
    """Every kind of the calibration grid, at its null: a supported cell's estimate is on the claim's side."""
    from scoreaudit.stats.context import StatContext
    from scoreaudit.stats.planted import ArmShape, MeasureModel, planted_tables

    cal = _calibration()
    seen, checked, kinds = set(), 0, set()
    for kind in cal.KINDS.values():
        ir = cal._spec(kind, "raw", "percentile", 199)
        shapes = {"real": ArmShape(20, 1, {"g": ("a", "b")}), "syn": ArmShape(10, 2), "wide": ArmShape(20, 2)}
        if kind.shape:  # the kind's own arm shape (labels, ratings, images per cluster), as the bench plants it
            from dataclasses import replace

            shapes[kind.arm] = replace(shapes[kind.arm], **kind.shape)
        used = {a for c in ir.cells() for a in (c.arms or (c.arm,)) if a}
        shapes = {k: v for k, v in shapes.items() if k in used}
        truth = cal._truth_for_level(ir, kind, kind.levels[0], "raw")
        cells = [c for c in ir.cells() if all(a in shapes for a in (c.arms or (c.arm,)) if a)]
        for rep in range(3):
            tables = planted_tables(ir, shapes, truth, seed=1000 + rep, model=MeasureModel(), sort=False)
            for cell, c in zip(cells, evaluate_cells(StatContext(ir, tables, n_boot=199), cells)):
                seen.add(c["statistic"])
                if c["undefined"] is None:
                    kinds.add(kind.name)
                if c["outcome"] == "supported" and cell.test.kind in TESTS:
                    checked += 1
                    assert not wrong_side(c["estimate"], cell.test), (kind.name, c["sentence"])
    assert kinds == set(cal.KINDS) and checked > 0  # every kind gave defined cells, so the check bit
