"""Cross-image statistics against statsmodels, scipy and hand computations."""

import itertools

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf
from scipy import stats

from scoreaudit.stats import cross
from scoreaudit.stats.bootstrap import count_matrix


def _cf_table(seed=0, n_sets=40, effect=0.0):
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_sets):
        base = rng.normal()
        for race, gender in itertools.product(["white", "black", "asian"], ["male", "female"]):
            score = base + effect * (race == "black") + 0.2 * (gender == "female") + rng.normal(0, 0.5)
            rows.append({"set_id": f"s{s}", "race": race, "gender": gender, "score": score, "prompt": f"p{s % 5}"})
    return pd.DataFrame(rows)


def test_group_gap_matches_statsmodels_marginal_contrast():
    df = _cf_table(effect=0.7)
    est = cross.group_gap(df, "race", "black", "white", ["race", "gender"], "set_id", "prompt")
    d = df.assign(z=cross.zscore_within(df, "prompt"))
    m = smf.ols("z ~ C(race, Treatment('white')) * C(gender, Treatment('male'))", d).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(d["set_id"])[0]})
    names = m.params.index
    L = np.zeros(len(names))
    # EMM(black) - EMM(white) averaged over gender = b_black + 0.5 * b_black:female
    for i, n in enumerate(names):
        if n == "C(race, Treatment('white'))[T.black]":
            L[i] = 1.0
        if n == "C(race, Treatment('white'))[T.black]:C(gender, Treatment('male'))[T.female]":
            L[i] = 0.5
    ref = float(L @ m.params.to_numpy())
    se = float(np.sqrt(L @ m.cov_params().to_numpy() @ L))
    assert est.estimate == pytest.approx(ref, abs=1e-8)
    assert est.se == pytest.approx(se, abs=1e-8)
    # t with G − 1 degrees of freedom, as statsmodels' use_t for clustered covariances
    mt = smf.ols("z ~ C(race, Treatment('white')) * C(gender, Treatment('male'))", d).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(d["set_id"])[0]}, use_t=True)
    tt = mt.t_test(L)
    assert 2 * min(est.p_greater(0.0), est.p_less(0.0)) == pytest.approx(float(tt.pvalue), abs=1e-8)
    assert est.df == d["set_id"].nunique() - 1
    assert est.estimate > 0.4  # planted effect of 0.7 raw units ~ recovered in z units


def test_factor_effect_wald_p_matches_statsmodels_and_planted_sign():
    df = _cf_table(effect=0.8, seed=1)
    order = list(dict.fromkeys(df["set_id"]))
    idx = count_matrix(np.random.default_rng(0), 50, len(order))
    est = cross.factor_effect(df, "race", ["race", "gender"], "set_id", "prompt", idx, order)
    d = df.assign(z=cross.zscore_within(df, "prompt"))
    m = smf.ols("z ~ C(race, Treatment('white')) * C(gender, Treatment('male'))", d).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(d["set_id"])[0]})
    names = [n for n in m.params.index if "race" in n]
    R = np.array([[1.0 if n == k else 0.0 for n in m.params.index] for k in names])
    mt = smf.ols("z ~ C(race, Treatment('white')) * C(gender, Treatment('male'))", d).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(d["set_id"])[0]}, use_t=True)
    w = mt.wald_test(R, scalar=True, use_f=True)  # F(q, G − 1), not χ²
    G = d["set_id"].nunique()
    assert float(w.df_denom) == G - 1
    assert est.detail["wald_p"] == pytest.approx(float(w.pvalue), rel=1e-8, abs=1e-300)
    chi2 = m.wald_test(R, scalar=True, use_f=False)
    assert est.detail["wald_p"] > float(chi2.pvalue)  # χ² was anti-conservative
    assert est.p_greater(0.0) == est.detail["wald_p"]
    mm = est.detail["marginal_means"]
    assert mm["black"] > mm["white"] and mm["black"] > mm["asian"]


def test_rank_spread_friedman_p_matches_scipy():
    df = _cf_table(effect=0.5, seed=2)
    order = list(dict.fromkeys(df["set_id"]))
    idx = count_matrix(np.random.default_rng(0), 20, len(order))
    est = cross.rank_spread(df, "race", "set_id", idx, order)
    r = df.assign(rank=df.groupby("set_id")["score"].rank(ascending=False))
    per = r.groupby(["set_id", "race"])["rank"].mean().unstack("race")
    ref = stats.friedmanchisquare(*[per[c].to_numpy() for c in per.columns]).pvalue
    assert est.detail["friedman_p"] == pytest.approx(ref, rel=1e-10)
    means = per.mean()
    assert est.estimate == pytest.approx((means.max() - means.min()) / 5, abs=1e-12)


@pytest.mark.parametrize("method", ["pearson", "spearman", "kendall"])
def test_agreement_against_scipy(method):
    rng = np.random.default_rng(3)
    n = 60
    rating = rng.normal(size=n)
    df = pd.DataFrame({"score": rating + rng.normal(size=n), "human_rating": rating, "c": [f"c{i}" for i in range(n)]})
    order = list(df["c"])
    idx = count_matrix(np.random.default_rng(0), 200, n)
    est = cross.agreement(df, "human_rating", method, "c", idx, order)
    fn = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}[method]
    ref = fn(df["score"], df["human_rating"])
    assert est.estimate == pytest.approx(ref.statistic, abs=1e-12)
    assert est.p_greater(0.0) == pytest.approx(fn(df["score"], df["human_rating"], alternative="greater").pvalue, rel=1e-10)
    assert est.detail["variance_explained"] == pytest.approx(ref.statistic ** 2)
    lo, hi = est.interval(0.95)
    assert lo < est.estimate < hi


def test_pairwise_accuracy_wilson_and_binomial_by_hand():
    pref = np.array([3, 2, 5, 1, 4, 4, 0.5, 7])
    oth = np.array([1, 2, 3, 2, 1, 3, 0.1, 9])
    est = cross.pairwise_accuracy(pref, oth)
    # wins: 3>1, 5>3, 4>1, 4>3, .5>.1 = 5; ties: 1; losses: 2
    assert est.estimate == pytest.approx((5 + 0.5) / 8)
    z = stats.norm.ppf(0.975)
    p, n = 5.5 / 8, 8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert est.interval(0.95) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert est.p_greater(0.5) == pytest.approx(stats.binomtest(5, 7, 0.5, alternative="greater").pvalue)


def test_planted_preference_for_other_image_is_refuted_direction():
    rng = np.random.default_rng(4)
    base = rng.normal(size=200)
    est = cross.pairwise_accuracy(base + rng.normal(0, 0.3, 200), base + 1 + rng.normal(0, 0.3, 200))
    lo, hi = est.interval(0.90)
    assert hi < 0.5 and est.p_greater(0.5) > 0.5


def test_recall_by_hand():
    df = pd.DataFrame({
        "prompt": ["a"] * 3 + ["b"] * 3,
        "score": [0.9, 0.2, 0.5, 0.1, 0.8, 0.3],
        "human_rank": [1, 2, 3, 3, 2, 1],
    })
    best = cross.ranked_recall(df, "human_rank", "prompt", k=1, worst=False)
    assert best.estimate == pytest.approx(0.5)  # a: human best scored top; b: human best (0.3) not top
    worst = cross.ranked_recall(df, "human_rank", "prompt", k=1, worst=True)
    # a: human worst is 0.5 (not bottom: 0.2 is); b: human worst 0.1 is the bottom
    assert worst.estimate == pytest.approx(0.5)


def test_rank_bootstrap_keeps_duplicated_clusters_apart():
    """A cluster drawn twice is two clusters of ranks, never one of twice the size (spread stays ≤ 1)."""
    df = _cf_table(effect=0.3, seed=7, n_sets=12)
    order = list(dict.fromkeys(df["set_id"]))
    W = count_matrix(np.random.default_rng(1), 200, len(order))
    est = cross.rank_spread(df, "race", "set_id", W, order)
    assert np.nanmax(est.boot) <= 1.0
    lo, hi = est.interval(0.95)
    assert lo <= est.estimate <= hi
    mr = cross.mean_rank(df, "race", "black", "set_id", W, order)
    assert np.nanmax(mr.boot) <= 6  # ranks within a set of six images
