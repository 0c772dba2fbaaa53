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


@pytest.mark.slow  # 13 s measured
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


def _expanded_percentile_p(boot: np.ndarray, t: float, G: int) -> float:
    """spec/methods.md small-sample expansion, by hand: the level whose expanded quantile is Φ⁻¹(p_raw)."""
    b = boot[np.isfinite(boot)]
    raw = (1 + np.sum(b <= t)) / (len(b) + 1)
    return max(stats.t.cdf(stats.norm.ppf(raw) / np.sqrt(G / (G - 1)), G - 1), 1 / (len(b) + 1))


def test_agreement_p_takes_the_small_sample_expansion_of_its_bootstrap():
    from tests.stats_cross.test_comparisons import _call, _pairs_tables

    ctx = StatContext(_ir(n_boot=2000), _pairs_tables(seed=7, n=40))
    est = ctx.evaluate(_call("agreement", label="judge", metric="accuracy", missing=-1.0, prompt=None), "wide", "s1")
    G = est.detail["n_clusters"]
    assert G == 36  # 40 pairs, 4 with the missing label
    for t in (0.4, 0.45, 0.6):
        p = est.p_greater(t)
        assert p == pytest.approx(_expanded_percentile_p(np.asarray(est.boot), t, G), rel=1e-9)
        raw = (1 + np.sum(np.asarray(est.boot) <= t)) / (len(est.boot) + 1)
        assert abs(p - 0.5) < abs(raw - 0.5)  # the expansion widens: the unexpanded p was too bold at 36 clusters


def _clustered_correlation_tables(seed=0, n_clusters=40, per=5):
    """A rating and a score that share a prompt effect: the rows of one prompt are not independent."""
    rng = np.random.default_rng(seed)
    images, scores = [], []
    for c in range(n_clusters):
        u = rng.normal()
        for k in range(per):
            iid = f"i{c}_{k}"
            images.append({"arm": "real", "image_id": iid, "cluster": f"c{c:02d}", "race": "A",
                           "rating": u + rng.normal(0, 0.3)})
            scores.append({"arm": "real", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": "s1",
                           "score": 0.25 * u + rng.normal(0, 1.0)})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


@pytest.mark.slow  # 15 s measured
def test_correlation_p_respects_declared_clusters():
    from tests.stats_cross.test_comparisons import _call

    t = _clustered_correlation_tables()
    ctx = StatContext(_ir(n_boot=2000), t)
    est = ctx.evaluate(_call("spearman", column="rating", prompt=None), "real", "s1")
    x = t["scores"]["score"].to_numpy()
    y = t["images"]["rating"].to_numpy()
    rows_p = stats.spearmanr(x, y, alternative="greater").pvalue  # 200 rows as if independent
    p = est.p_greater(0.0)
    assert p == pytest.approx(_expanded_percentile_p(np.asarray(est.boot), 0.0, 40), rel=1e-9)
    assert p != pytest.approx(rows_p, rel=0.05)
    assert est.test_name.startswith("cluster bootstrap")
    # without clusters (each image its own), the correlation's own test over images stays
    img = t["images"].assign(cluster=t["images"]["image_id"])
    est1 = StatContext(_ir(n_boot=200), {"images": img, "scores": t["scores"]}).evaluate(
        _call("spearman", column="rating", prompt=None), "real", "s1")
    assert est1.p_greater(0.0) == pytest.approx(rows_p, rel=1e-9)


def _gap_tables(clustered: bool, seed=3, n=30):
    rng = np.random.default_rng(seed)
    images, scores = [], []
    for k in range(n):
        cl = f"c{k // 3:02d}" if clustered else f"p{k:03d}"
        pref, other = rng.normal(0.4, 1.0), rng.normal(0.0, 1.0)
        for side, v in (("preferred", pref), ("other", other)):
            iid = f"p{k:03d}:{side}"
            images.append({"arm": "wide", "image_id": iid, "cluster": cl, "side": side, "pair_id": f"p{k:03d}"})
            scores.append({"arm": "wide", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": "s1",
                           "score": v})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


@pytest.mark.parametrize("clustered", [False, True])
@pytest.mark.parametrize("scale", ["sd", "raw"])
def test_mean_gap_is_a_t_over_pairs_or_clusters_in_pooled_sd_units(clustered, scale):
    from tests.stats_cross.test_comparisons import _call

    t = _gap_tables(clustered)
    ctx = StatContext(_ir(scale=scale, n_boot=200), t)
    est = ctx.evaluate(_call("mean_gap", prompt=None), "wide", "s1")
    s = t["scores"].set_index("image_id")["score"]
    ids = sorted(t["images"]["pair_id"].unique())
    d = np.array([s[f"{i}:preferred"] - s[f"{i}:other"] for i in ids])
    sd = np.std(s.to_numpy(), ddof=1) if scale == "sd" else 1.0  # pooled SD of both sides
    units = pd.Series(d / sd).groupby(np.arange(len(d)) // 3).mean().to_numpy() if clustered else d / sd
    assert est.estimate == pytest.approx(units.mean(), abs=1e-12)
    assert est.interval(0.90) == pytest.approx(
        stats.t.interval(0.90, len(units) - 1, loc=units.mean(), scale=stats.sem(units)), abs=1e-10)
    for thr in (0.0, 0.2):
        assert est.p_greater(thr) == pytest.approx(
            stats.ttest_1samp(units, thr, alternative="greater").pvalue, rel=1e-9)
    assert est.test_name == ("t over clusters" if clustered else "t over pairs")


def _cells(ctx, stat, test, scorer="s1:s2", arm=None):
    from scoreaudit.compiler.ir import CellIR
    from scoreaudit.stats.engine import evaluate_cells

    cell = CellIR(id="H/x/wide", hypothesis="H", claim=0, scorer=scorer, arm=arm, arms=("wide",),
                  statistic=stat, test=test)
    return evaluate_cells(ctx, [cell])


def test_a_level_the_sign_flip_cannot_reach_is_said_in_the_cell_and_warned():
    from scoreaudit.stats.engine import level_warnings

    # 10 pairs, 4 discordant (s1 right, s2 wrong), 6 judged alike: the best p is P(4 flips all +) = 2^-4
    outs = [("r", "w")] * 4 + [("r", "r")] * 6
    ctx = StatContext(_ir(), _pairs(outs))
    stat = _compare("difference", ReadingIR(statistic=PA, arm="wide", scorer="s1"),
                    ReadingIR(statistic=PA, arm="wide", scorer="s2"))
    (c,) = _cells(ctx, stat, GREATER0)
    assert c["p"] == pytest.approx(0.5 ** 4, abs=1e-12)  # the data are at the edge: every discordant pair for s1
    assert c["detail"]["smallest_p"] == pytest.approx(0.0625, abs=1e-12)
    assert c["outcome"] != "supported"
    (w,) = level_warnings([c], 0.05)
    assert w["code"] == "W0423" and w["smallest_p"] == pytest.approx(0.0625) and "0.0625" in w["message"]
    # one more discordant pair brings the floor to 2^-5 = 0.031 < 0.05: no warning
    ctx5 = StatContext(_ir(), _pairs([("r", "w")] * 5 + [("r", "r")] * 5))
    assert level_warnings(_cells(ctx5, stat, GREATER0), 0.05) == []


def test_a_level_the_exact_binomial_cannot_reach_is_warned():
    from scoreaudit.compiler.ir import TestIR as T
    from scoreaudit.stats.engine import level_warnings

    # 4 untied pairs (and 3 ties) against 0.5: the best p is binomtest(4, 4, 0.5, "greater") = 0.0625
    outs = [("r", "r")] * 4 + [("t", "t")] * 3
    ctx = StatContext(_ir(), _pairs(outs))
    (c,) = _cells(ctx, PA, T(kind="greater", threshold=0.5, text="pairwise_accuracy() > 0.5"), scorer="s1",
                  arm="wide")
    best = stats.binomtest(4, 4, 0.5, alternative="greater").pvalue
    assert c["detail"]["smallest_p"] == pytest.approx(best, abs=1e-12)
    assert c["method"] == "exact binomial (untied pairs)"
    assert [w["code"] for w in level_warnings([c], 0.05)] == ["W0423"]


def _rated_images(seed=4, n=240, k=3):
    """Images with an ordered judge label 0..k−1 and a score that tracks it (clusters of 3 images)."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, k, n)
    score = label + rng.normal(0, 0.8, n)
    images = pd.DataFrame({"arm": "real", "image_id": [f"i{j:03d}" for j in range(n)],
                           "cluster": [f"c{j // 3:03d}" for j in range(n)], "race": "A",
                           "judge": np.where(np.arange(n) % 40 == 0, -1, label)})
    scores = pd.DataFrame({"arm": "real", "image_id": images["image_id"], "operator": ORIGINAL, "dose": 0.0,
                           "scorer": "s1", "score": score})
    return {"images": images, "scores": scores}, label, score


@pytest.mark.parametrize("metric,weights,cuts", [
    ("accuracy", None, 1.0), ("f1", None, 1.0), ("kappa", None, 1.0),
    ("kappa", None, [0.5, 1.5]), ("kappa", "quadratic", [0.5, 1.5]), ("kappa", "linear", [0.5, 1.5]),
    ("accuracy", None, [0.5, 1.5])])
def test_agreement_on_an_images_arm_calls_at_the_declared_threshold(metric, weights, cuts):
    from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score

    from tests.stats_cross.test_comparisons import _call

    k = 2 if np.ndim(cuts) == 0 else len(cuts) + 1
    t, label, score = _rated_images(k=k)
    ctx = StatContext(_ir(n_boot=300), t)
    est = ctx.evaluate(_call("agreement", label="judge", metric=metric, missing=-1, prompt=None,
                             threshold=cuts, weights=weights), "real", "s1")
    keep = np.arange(len(label)) % 40 != 0
    y = label[keep]
    call = np.searchsorted(np.atleast_1d(cuts), score[keep], side="right")  # classes under the cut points
    ref = {"accuracy": lambda: accuracy_score(y, call), "f1": lambda: f1_score(y, call),
           "kappa": lambda: cohen_kappa_score(y, call, weights=weights)}[metric]()
    assert est.estimate == pytest.approx(ref, abs=1e-12)
    assert est.detail["excluded_label"] == int((~keep).sum()) and est.detail["classes"] == k
    assert est.detail["n_clusters"] == 80
    lo, hi = est.interval(0.90)
    assert lo <= est.estimate <= hi
