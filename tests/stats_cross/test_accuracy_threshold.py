"""Issue 25: `pairwise_accuracy()` against any threshold is tested on the credit the estimate counts.

METHODS: "a threshold other than 0.5 is tested on the same credit as the estimate (ties half), never on the
untied pairs alone". The test at t ≠ 0.5 is the Wilson score test that the cell's Wilson interval inverts;
references: statsmodels' `proportions_ztest(prop_var=t)` (the score test) and `proportion_confint(method=
"wilson")`, scipy's `binomtest` for the exact test at 0.5, and a Monte Carlo size check with clusters.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint, proportions_ztest

from scoreaudit.compiler.ir import TestIR as ClaimTest
from scoreaudit.stats import cross
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.outcomes import wrong_side

from tests.stats_cross.test_comparisons import PA, _ir
from tests.stats_cross.test_one_quantity_per_cell import _cells, _pairs


def _scores(wins: int, ties: int, losses: int) -> tuple[np.ndarray, np.ndarray]:
    pref = np.r_[np.ones(wins), np.zeros(ties), -np.ones(losses)]
    return pref, np.zeros_like(pref)


# 26 pairs right, 68 tied, 6 wrong: the untied pairs are 26/32 = 0.81 right (binomtest vs 0.6: p = 0.009),
# but the estimate, ties half, is (26 + 34)/100 = 0.60: not above 0.6.
TIED = (26, 68, 6)


def test_many_ties_do_not_support_a_threshold_the_half_credit_estimate_does_not_exceed():
    wins, ties, losses = TIED
    untied_p = stats.binomtest(wins, wins + losses, 0.6, alternative="greater").pvalue
    assert untied_p < 0.01  # what the untied-only test said: "supported" (the failure before)
    est = cross.pairwise_accuracy(*_scores(*TIED))
    assert est.estimate == pytest.approx(0.60, abs=1e-12)
    p = est.p_greater(0.6)
    assert p >= 0.5
    # the cell: not supported, and by its p, not by the estimate's veto
    ctx = StatContext(_ir(), _pairs([("r", "r")] * wins + [("t", "t")] * ties + [("w", "w")] * losses))
    test = ClaimTest(kind="greater", threshold=0.6, text="pairwise_accuracy() > 0.6")
    (c,) = _cells(ctx, PA, test, scorer="s1", arm="wide")
    assert c["p"] == pytest.approx(p, abs=1e-12) and c["p"] >= 0.5
    assert c["outcome"] != "supported"
    assert c["method"] == "Wilson score (ties half)"


@pytest.mark.parametrize("counts,t", [(TIED, 0.6), (TIED, 0.55), ((40, 50, 10), 0.6), ((12, 3, 5), 0.3),
                                      ((5, 2, 13), 0.45), ((70, 20, 10), 0.75)])
def test_the_p_is_the_score_test_of_the_half_credit_and_inverts_the_wilson_interval(counts, t):
    wins, ties, losses = counts
    n, k = sum(counts), wins + 0.5 * ties
    est = cross.pairwise_accuracy(*_scores(*counts))
    for side, alt in (("greater", "larger"), ("less", "smaller")):
        ref = proportions_ztest(k, n, value=t, alternative=alt, prop_var=t)[1]
        assert est._one_sided(t, side) == pytest.approx(ref, rel=1e-9)
    lo, hi = est.interval(0.90)
    assert (lo, hi) == pytest.approx(proportion_confint(k, n, alpha=0.10, method="wilson"), abs=1e-12)


def _credit_sets(seed: int, n_sets: int):
    rng = np.random.default_rng(seed)
    for _ in range(n_sets):
        n = int(rng.integers(5, 80))
        probs = rng.dirichlet([1, 1, 1])
        yield rng.choice([1.0, 0.0, -1.0], size=n, p=probs), np.array([f"c{j}" for j in rng.integers(0, max(n // 3, 2), n)])


@pytest.mark.slow  # 47 s measured
@pytest.mark.parametrize("clustered", [False, True])
def test_p_at_most_alpha_exactly_when_the_interval_bound_is_beyond_the_threshold(clustered):
    """At every threshold but 0.5 (and at 0.5 too with clusters) support and the interval are one method."""
    alpha = 0.05
    checked = 0
    for d, labels in _credit_sets(1, 150):
        est = cross.pairwise_accuracy(d, np.zeros_like(d), labels if clustered else None)
        lo, hi = est.interval(1 - 2 * alpha)
        for t in np.linspace(0.02, 0.98, 49):
            if t == 0.5 and not clustered:
                continue
            pg, pl = est.p_greater(t), est.p_less(t)
            if min(abs(lo - t), abs(hi - t)) < 1e-9:  # on the bound itself: p = alpha up to rounding
                continue
            assert (pg <= alpha) == (lo > t), (t, pg, lo)
            assert (pl <= alpha) == (hi < t), (t, pl, hi)
            # the estimate's veto never has to act: a p below ½ is on the estimate's side
            for side, p in (("greater", pg), ("less", pl)):
                claim = ClaimTest(kind=side, threshold=float(t), text="")
                if p < 0.5:
                    assert not wrong_side(est.estimate, claim), (t, side, p, est.estimate)
            checked += 1
    assert checked > 5000


@pytest.mark.slow  # 9 s measured
def test_at_half_the_untied_binomial_and_the_half_credit_estimate_agree_in_direction():
    """Every (wins, ties, losses) with n ≤ 30: the exact binomial on untied pairs (scipy) and the estimate
    (ties half) are on the same side of 0.5, so the estimate's veto never overrides the test there."""
    for n in range(1, 31):
        for wins in range(n + 1):
            for ties in range(n - wins + 1):
                losses = n - wins - ties
                est = cross.pairwise_accuracy(*_scores(wins, ties, losses))
                m = wins + losses
                for side, alt in (("greater", "greater"), ("less", "less")):
                    p = est._one_sided(0.5, side)
                    ref = 1.0 if m == 0 else stats.binomtest(wins, m, 0.5, alternative=alt).pvalue
                    assert p == pytest.approx(ref, rel=1e-12)
                    if p < 0.5:
                        assert not wrong_side(est.estimate, ClaimTest(kind=side, threshold=0.5, text="")), \
                            (wins, ties, losses, side)


@pytest.mark.slow  # calibration (23 s measured)
def test_clustered_accuracy_keeps_its_level_where_the_pairwise_test_does_not():
    """Planted: 30 clusters of 8 pairs; a cluster's untied pairs are right with its own probability
    p_c ~ Beta(1.25, 0.75) (mean 0.625, strong within-cluster correlation) and 20% of pairs tie, so the mean
    credit is 0.2·½ + 0.8·0.625 = 0.6 exactly: H0 θ ≤ 0.6 holds at its boundary and every rejection is false.
    Per-cluster credit holds α; counting the 240 pairs as independent does not."""
    rng = np.random.default_rng(11)
    G, m, reps = 30, 8, 1500
    labels = np.repeat([f"c{g}" for g in range(G)], m)
    clustered, naive = [], []
    for _ in range(reps):
        pc = rng.beta(1.25, 0.75, G)
        right = rng.random((G, m)) < pc[:, None]
        tie = rng.random((G, m)) < 0.2
        d = np.where(tie, 0.0, np.where(right, 1.0, -1.0)).ravel()
        clustered.append(cross.pairwise_accuracy(d, np.zeros_like(d), labels).p_greater(0.6) <= 0.05)
        naive.append(cross.pairwise_accuracy(d, np.zeros_like(d)).p_greater(0.6) <= 0.05)
    band = 0.05 + 3 * np.sqrt(0.05 * 0.95 / reps)
    assert np.mean(clustered) <= band, np.mean(clustered)
    assert np.mean(naive) > band, np.mean(naive)  # 0.13 here: pairs of one cluster are not independent


def test_clustered_interval_and_design_effect_by_hand():
    d = np.array([1, 1, 0, 1, -1, -1, 0, 1, 1, 1, -1, 0], float)
    labels = np.array(["a", "a", "a", "b", "b", "b", "c", "c", "c", "d", "d", "d"])
    est = cross.pairwise_accuracy(d, np.zeros_like(d), labels)
    credit = np.where(d > 0, 1.0, np.where(d == 0, 0.5, 0.0))
    p_hat = credit.mean()
    sums = pd.Series(credit).groupby(labels).sum().to_numpy()
    var_c = 4 / 3 * np.sum((sums - 3 * p_hat) ** 2) / 12**2
    deff = max(1.0, var_c / (p_hat * (1 - p_hat) / 12))
    n_eff = 12 / deff
    assert est.detail["design_effect"] == pytest.approx(deff) and est.detail["n_clusters"] == 4
    # Wilson on n_eff with t(3) quantiles: solve |p̂ − t| = q·sqrt(t(1 − t)/n_eff) numerically
    q = stats.t.ppf(0.95, 3)
    from scipy.optimize import brentq

    def f(t):
        return (p_hat - t) ** 2 - q * q * t * (1 - t) / n_eff
    lo, hi = brentq(f, 1e-9, p_hat), brentq(f, p_hat, 1 - 1e-9)
    assert est.interval(0.90) == pytest.approx((lo, hi), abs=1e-9)
    z = (p_hat - 0.5) / np.sqrt(0.25 / n_eff)
    assert est.p_greater(0.5) == pytest.approx(stats.t.sf(z, 3), rel=1e-9)  # clusters: no binomial at 0.5


def test_a_level_the_score_test_cannot_reach_is_its_smallest_p():
    from scoreaudit.stats.engine import level_warnings

    # 3 pairs, all right, against 0.6: the best score-test p is that of 3/3 (statsmodels), 0.079 > 0.05
    ctx = StatContext(_ir(), _pairs([("r", "r")] * 3))
    (c,) = _cells(ctx, PA, ClaimTest(kind="greater", threshold=0.6, text="pairwise_accuracy() > 0.6"),
                  scorer="s1", arm="wide")
    best = proportions_ztest(3, 3, value=0.6, alternative="larger", prop_var=0.6)[1]
    assert c["detail"]["smallest_p"] == pytest.approx(best, rel=1e-9) and best > 0.05
    assert c["p"] == pytest.approx(best, rel=1e-9)
    assert [w["code"] for w in level_warnings([c], 0.05)] == ["W0423"]
