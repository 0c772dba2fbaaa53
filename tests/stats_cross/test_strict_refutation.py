"""Refutation needs the (1 − 2α) interval strictly beyond the threshold: a bound *on* t is a value the data
do not reject. The sign-flip interval's bounds are crossing points that land on 0 with positive probability;
under "at or below" it refuted true claims at about 2α at 20 pairs (spec/methods.md, calibration)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from scoreaudit.compiler.ir import TestIR as ClaimTest
from scoreaudit.stats.outcomes import number_outcome

from tests.stats_cross.test_one_quantity_per_cell import GREATER0, _diff, _pairs

ALPHA = 0.05


def test_a_bound_on_the_threshold_does_not_refute():
    # 8 pairs judged differently: s1 wins 2, s2 wins 6. Difference −0.5; the 90% sign-flip interval is [−1, 0]
    est = _diff(_pairs([("r", "w")] * 2 + [("w", "r")] * 6))
    lo, hi = est.interval(1 - 2 * ALPHA)
    assert est.estimate == pytest.approx(-0.5)
    assert (lo, hi) == (pytest.approx(-1.0), 0.0)
    # the test of θ ≥ 0 is the sign test of 6 of 8: p = P(X ≥ 6 | 8, ½) = 37/256 > α, so 0 is not rejected
    p_opposite = stats.binomtest(6, 8, 0.5, alternative="greater").pvalue
    assert est.p_less(0.0) == pytest.approx(p_opposite, abs=1e-12) and p_opposite > ALPHA
    assert number_outcome(est, GREATER0, est.p_greater(0.0), ALPHA) == "inconclusive"  # was "refuted"


def test_an_interval_strictly_below_refutes():
    # 7 of 8 for s2: p of θ ≥ 0 = 9/256 ≤ α, so the upper bound lies below 0
    est = _diff(_pairs([("r", "w")] * 1 + [("w", "r")] * 7))
    lo, hi = est.interval(1 - 2 * ALPHA)
    assert hi < 0 and est.p_less(0.0) == pytest.approx(stats.binomtest(7, 8, 0.5, "greater").pvalue)
    assert number_outcome(est, GREATER0, est.p_greater(0.0), ALPHA) == "refuted"


@pytest.mark.slow  # random designs (23 s measured)
def test_refutation_agrees_with_the_opposite_test_over_random_small_designs():
    # 120 random compositions of 10 pairs (s1 right/wrong/tied against s2 right/wrong): refuted ⟺ p(θ ≥ 0) ≤ α,
    # the duality the sign-flip interval promises (it holds at the threshold only under the strict rule)
    kinds = [("r", "w"), ("w", "r"), ("t", "r"), ("r", "t"), ("r", "r")]
    rng = np.random.default_rng(5)
    at_bound = 0
    for _ in range(120):
        outs = [kinds[k] for k in rng.integers(0, len(kinds), 10)]
        est = _diff(_pairs(outs))
        if est.undefined is not None:
            continue
        hi = est.interval(1 - 2 * ALPHA)[1]
        at_bound += hi == 0.0
        refuted = number_outcome(est, GREATER0, est.p_greater(0.0), ALPHA) == "refuted"
        assert refuted == (est.p_less(0.0) <= ALPHA), outs
    assert at_bound > 0  # the draw holds designs whose bound lands exactly on 0 (else this tests nothing)


def test_equivalence_and_less_are_strict_too():
    est = _diff(_pairs([("r", "w")] * 2 + [("w", "r")] * 6))  # 90% interval [−1, 0]
    less = ClaimTest(kind="less", threshold=-1.0, text="difference < -1")
    assert number_outcome(est, less, est.p_less(-1.0), ALPHA) != "refuted"  # the lower bound is on −1
    eq = ClaimTest(kind="equivalence", low=0.0, high=0.5, text="difference within [0, 0.5]")
    assert number_outcome(est, eq, est.p_equivalence(0.0, 0.5), ALPHA) == "inconclusive"  # hi = low = 0
