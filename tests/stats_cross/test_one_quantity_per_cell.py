"""Issue 25: each cell's estimate, interval and test are one quantity from one method.

References: scipy's `permutation_test` (exact sign flips of the cluster sums), `binomtest` and statsmodels'
McNemar (no ties), scipy's `ttest_1samp` / `t.interval` (paired t), and a direct enumeration of all 2^20
sign vectors for the 20-pair reproduction.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scoreaudit.compiler.ir import ORIGINAL, ReadingIR
from scoreaudit.compiler.ir import TestIR as ClaimTest
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.outcomes import number_outcome

from tests.stats_cross.test_comparisons import FI, PA, _compare, _dose_tables, _ir

GREATER0 = ClaimTest(kind="greater", threshold=0.0, text="difference > 0")


def _pairs(outcomes: list[tuple[str, str]], clusters: list[str] | None = None) -> dict:
    """Pairs tables from (s1, s2) outcomes per pair: 'r' right, 't' tied, 'w' wrong."""
    gap = {"r": 1.0, "t": 0.0, "w": -1.0}
    images, scores = [], []
    for k, pair in enumerate(outcomes):
        cl = clusters[k] if clusters else f"p{k:03d}"
        for side in ("preferred", "other"):
            iid = f"p{k:03d}:{side}"
            images.append({"arm": "wide", "image_id": iid, "cluster": cl, "side": side, "pair_id": f"p{k:03d}"})
            for s, o in zip(("s1", "s2"), pair):
                scores.append({"arm": "wide", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": s,
                               "score": gap[o] if side == "preferred" else 0.0})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


def _diff(tables, **kw):
    ctx = StatContext(_ir(**kw), tables)
    return ctx.evaluate(_compare("difference", ReadingIR(statistic=PA, arm="wide", scorer="s1"),
                                 ReadingIR(statistic=PA, arm="wide", scorer="s2")), None, "s1:s2")


def _credit(o):
    return {"r": 1.0, "t": 0.5, "w": 0.0}[o]


def _enumerated_p(d: np.ndarray, delta: float) -> float:
    """P(Σ ε (d − δ) ≥ Σ (d − δ)) over all 2^n sign vectors, enumerated directly."""
    n = len(d)
    signs = 1 - 2 * ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1)
    u = d - delta
    return float(np.mean(signs @ u >= u.sum() - 1e-9))


# 6 pairs s1 right / s2 wrong; 14 pairs s1 tied / s2 right: accuracies 0.65 and 0.70, difference −0.05.
# McNemar on the pairs untied under both scorers saw 6 vs 0 discordant: p = 1/64 = 0.016, "supported".
REPRO = [("r", "w")] * 6 + [("t", "r")] * 14


def test_the_20_pair_reproduction_is_not_supported_against_its_own_estimate():
    est = _diff(_pairs(REPRO))
    d = np.array([_credit(a) - _credit(b) for a, b in REPRO])
    assert est.estimate == pytest.approx(d.mean(), abs=1e-12) == pytest.approx(-0.05, abs=1e-12)
    p = est.p_greater(0.0)
    assert p == pytest.approx(_enumerated_p(d, 0.0), abs=1e-12)
    assert p > 0.5  # the data lean the other way; McNemar without the ties said 0.016
    assert est.detail["test"] == "sign-flip (exact)"
    lo, hi = est.interval(0.90)
    assert lo < est.estimate < hi
    assert number_outcome(est, GREATER0, p, 0.05) != "supported"


@pytest.mark.parametrize("delta", [0.0, 0.05, -0.1, 0.2])
def test_sign_flip_of_cluster_sums_matches_scipy_with_ties_and_clusters(delta):
    rng = np.random.default_rng(5)
    outs = [(rng.choice(list("rtw"), p=[.6, .15, .25]), rng.choice(list("rtw"), p=[.45, .15, .4])) for _ in range(30)]
    clusters = [f"c{k % 12:02d}" for k in range(30)]  # 12 declared clusters of 2–3 pairs
    est = _diff(_pairs(outs, clusters))
    d = pd.Series([_credit(a) - _credit(b) for a, b in outs]).groupby(clusters)
    D, n = d.sum().to_numpy(), d.size().to_numpy()
    assert est.estimate == pytest.approx(D.sum() / n.sum(), abs=1e-12)
    for side in ("greater", "less"):
        ref = stats.permutation_test((D - delta * n,), lambda x, axis: np.sum(x, axis=axis),
                                     permutation_type="samples", alternative=side, n_resamples=np.inf).pvalue
        got = est.p_greater(delta) if side == "greater" else est.p_less(delta)
        assert got == pytest.approx(ref, abs=1e-12), side


def test_without_ties_the_sign_flip_is_mcnemars_exact_test():
    from statsmodels.stats.contingency_tables import mcnemar

    outs = [("r", "w")] * 9 + [("w", "r")] * 2 + [("r", "r")] * 7 + [("w", "w")] * 2
    est = _diff(_pairs(outs))
    assert est.p_greater(0.0) == pytest.approx(stats.binomtest(9, 11, 0.5, alternative="greater").pvalue, abs=1e-12)
    table = np.array([[7, 9], [2, 2]])
    assert est.detail["signflip"]["p_two_sided"] == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-12)


def test_the_interval_inverts_the_test_at_every_threshold():
    rng = np.random.default_rng(2)
    outs = [(rng.choice(list("rtw"), p=[.7, .1, .2]), rng.choice(list("rtw"), p=[.5, .1, .4])) for _ in range(60)]
    est = _diff(_pairs(outs))  # 60 clusters: Monte Carlo flips
    assert "Monte Carlo" in est.detail["test"]
    lo, hi = est.interval(0.90)
    eps = 1e-9
    assert est.p_greater(lo) > 0.05 >= est.p_greater(lo - eps)
    assert est.p_less(hi) > 0.05 >= est.p_less(hi + eps)
    for t in np.linspace(-0.3, 0.5, 41):  # p ≤ α exactly when the bound lies beyond t
        assert (est.p_greater(t) <= 0.05) == (lo > t)
        assert (est.p_less(t) <= 0.05) == (hi < t)
    # the Monte-Carlo p at 0 agrees with the exact sign-flip p of the same data (normal-free reference)
    d = np.array([_credit(a) - _credit(b) for a, b in outs])
    ref = stats.permutation_test((d,), lambda x, axis: np.sum(x, axis=axis), permutation_type="samples",
                                 alternative="greater", n_resamples=200_000, random_state=1).pvalue
    assert est.p_greater(0.0) == pytest.approx(ref, abs=0.01)


def test_paired_t_cells_take_the_t_interval_of_the_same_differences():
    ctx = StatContext(_ir(), _dose_tables(seed=1, n_clusters=40))
    ra, rb = ReadingIR(statistic=FI, arm="real", scorer="s1"), ReadingIR(statistic=FI, arm="real", scorer="s2")
    est = ctx.evaluate(_compare("difference", ra, rb), None, "s1:s2")
    a, b = ctx.evaluate(FI, "real", "s1"), ctx.evaluate(FI, "real", "s2")
    d = np.asarray(a.contrasts) - np.asarray(b.contrasts)
    lo, hi = stats.t.interval(0.90, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    assert est.interval(0.90) == pytest.approx((lo, hi), abs=1e-10)
    assert est.family == "t" and est.test_name == "paired t over clusters"
    assert est.p_greater(0.0) == pytest.approx(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue, abs=1e-12)
