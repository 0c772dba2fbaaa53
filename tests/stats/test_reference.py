"""Reference tests: every number against a hand computation, scipy or statsmodels."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats
from statsmodels.stats.multitest import multipletests

from scoreaudit.compiler.ir import StatCallIR
from scoreaudit.compiler.ir import TestIR as CellTest
from scoreaudit.stats.bootstrap import arm_rng
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import compute
from scoreaudit.stats.outcomes import adjust, number_outcome
from scoreaudit.stats.planted import ArmShape, planted_tables
from scoreaudit.stats.regression import fe_ols_cluster
from scoreaudit.stats.validity import validity_numbers

from stats_helpers import with_settings

TRUTH = {"*": {"fidelity": 0.4, "asymmetry": 0.2, "noise": 0.5}}


@pytest.fixture(scope="module")
def small(skin_ir):
    ir = with_settings(skin_ir, bootstrap=300)
    tables = planted_tables(ir, {"real": ArmShape(12, 1, {"race": ("A", "B")}), "synthetic": ArmShape(6, 3)},
                            TRUTH, seed=5)
    return ir, tables


def _hand_contrasts(ir, tables, arm, scorer, operator, raw=False):
    """FI_i and A_i by pandas joins (independent of the engine's matrix code), then cluster means."""
    s = tables["scores"]
    s = s[(s.arm == arm) & (s.scorer == scorer) & (s.operator == operator)]
    base = s[s.dose == 0].set_index("image_id")["score"]
    sd = 1.0 if raw else np.std(
        tables["scores"].query("arm == @arm and scorer == @scorer and operator == 'original'")["score"], ddof=1)
    fi, asym = {}, {}
    for img, g in s.groupby("image_id"):
        d = g.set_index("dose")["score"] - base[img]
        d = d / sd
        ts = [5.0, 10.0, 15.0]
        fi[img] = -np.mean([(d[t] + d[-t]) / 2 for t in ts])
        asym[img] = np.mean([(d[t] - d[-t]) / 2 for t in ts])
    imgs = tables["images"][tables["images"].arm == arm].set_index("image_id")["cluster"]
    df = pd.DataFrame({"fi": pd.Series(fi), "a": pd.Series(asym), "cluster": imgs})
    cm = df.groupby("cluster")[["fi", "a"]].mean().sort_index()
    return cm, sd


@pytest.mark.parametrize("arm", ["real", "synthetic"])
def test_fi_asymmetry_and_tests_match_hand_computation(small, arm):
    """scale: raw — the t-test over cluster means and its own t interval (one family), against scipy."""
    ir, tables = small
    ir = with_settings(ir, scale="raw")
    ctx = StatContext(ir, tables)
    cm, _ = _hand_contrasts(ir, tables, arm, "pick", "light", raw=True)
    fi = ctx.evaluate(StatCallIR(name="fidelity_index", version="1", params={"operator": "light"}), arm, "pick")
    a = ctx.evaluate(StatCallIR(name="asymmetry", version="1", params={"operator": "light"}), arm, "pick")
    assert fi.estimate == pytest.approx(cm["fi"].mean(), abs=1e-12)
    assert a.estimate == pytest.approx(cm["a"].mean(), abs=1e-12)
    np.testing.assert_allclose(fi.contrasts, cm["fi"].to_numpy(), atol=1e-12)
    # t-test over cluster means, against scipy
    assert fi.p_greater(0.0) == pytest.approx(stats.ttest_1samp(cm["fi"], 0, alternative="greater").pvalue, abs=1e-8)
    assert a.p_less(0.05) == pytest.approx(stats.ttest_1samp(cm["a"], 0.05, alternative="less").pvalue, abs=1e-8)
    # support and refutation use one family: the t interval of the same test
    t_lo, t_hi = stats.t.interval(0.9, len(cm) - 1, loc=cm["fi"].mean(), scale=stats.sem(cm["fi"]))
    assert fi.family == "t" and fi.interval(0.9) == pytest.approx((t_lo, t_hi), abs=1e-10)
    # the bootstrap: one index matrix per arm, replicate b = mean of the drawn clusters' means
    C = len(cm)
    idx = arm_rng(ir.settings.seed, arm).integers(0, C, size=(ir.settings.bootstrap, C))
    manual = np.array([cm["fi"].to_numpy()[row].mean() for row in idx])
    np.testing.assert_allclose(fi.boot, manual, atol=1e-12)
    pct = replace(fi, method="bootstrap", ci="percentile")
    # the expanded percentile interval: quantile levels Φ(sqrt(C/(C − 1))·t_{C−1}(q)) (Hesterberg)
    levels = stats.norm.cdf(np.sqrt(C / (C - 1)) * stats.t.ppf([0.025, 0.975], C - 1))
    assert pct.interval(0.95) == pytest.approx(tuple(np.quantile(manual, levels)), abs=1e-12)
    # its p inverts the same interval: F = (1 + #{θ*_b ≤ t})/(B + 1) mapped back to the nominal level
    for t in (0.0, float(np.quantile(manual, 0.1))):
        F = (1 + np.sum(manual <= t)) / (len(manual) + 1)
        expect = stats.t.cdf(stats.norm.ppf(F) / np.sqrt(C / (C - 1)), C - 1)
        assert pct.p_greater(t) == pytest.approx(max(expect, 1 / (len(manual) + 1)), abs=1e-12)


def _hand_bca(theta, boot, jack, level):
    """Efron & Tibshirani (1993, ch. 14) BCa limits from replicates and jackknife values, with the nominal
    normal quantile replaced by the expanded one sqrt(G/(G − 1))·t_{G−1}(q) (Hesterberg), G = len(jack)."""
    G = len(jack)
    z0 = stats.norm.ppf(np.mean(boot < theta) + 0.5 * np.mean(boot == theta))
    d = jack.mean() - jack
    acc = (d ** 3).sum() / (6 * ((d ** 2).sum()) ** 1.5)
    out = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        z = np.sqrt(G / (G - 1)) * stats.t.ppf(q, G - 1)
        out.append(np.quantile(boot, stats.norm.cdf(z0 + (z0 + z) / (1 - acc * (z0 + z)))))
    return tuple(out)


@pytest.mark.parametrize("arm", ["real", "synthetic"])
def test_sd_is_re_estimated_in_every_replicate_and_bca_matches_hand(small, arm):
    """scale: sd — replicate b = (mean of drawn cluster means of raw FI) / (SD of the drawn images' scores)."""
    ir, tables = small
    ctx = StatContext(ir, tables)
    cm, _ = _hand_contrasts(ir, tables, arm, "pick", "light", raw=True)
    fi = ctx.evaluate(StatCallIR(name="fidelity_index", version="1", params={"operator": "light"}), arm, "pick")
    orig = tables["scores"].query("arm == @arm and scorer == 'pick' and operator == 'original'")
    imgs = tables["images"].query("arm == @arm").set_index("image_id")["cluster"]
    by_cluster = orig.assign(cluster=imgs.reindex(orig.image_id).to_numpy()).groupby("cluster")["score"]
    scores = [by_cluster.get_group(c).to_numpy() for c in cm.index]
    sd = np.std(np.concatenate(scores), ddof=1)
    assert fi.estimate == pytest.approx(cm["fi"].mean() / sd, abs=1e-12)
    C = len(cm)
    idx = arm_rng(ir.settings.seed, arm).integers(0, C, size=(ir.settings.bootstrap, C))
    manual = np.array([cm["fi"].to_numpy()[row].mean() / np.std(np.concatenate([scores[k] for k in row]), ddof=1)
                       for row in idx])
    np.testing.assert_allclose(fi.boot, manual, atol=1e-10)
    jack = np.array([np.delete(cm["fi"].to_numpy(), k).mean()
                     / np.std(np.concatenate([x for j, x in enumerate(scores) if j != k]), ddof=1) for k in range(C)])
    np.testing.assert_allclose(fi.jack, jack, atol=1e-10)
    assert fi.method == "bootstrap" and fi.family == "bca"
    assert fi.interval(0.9) == pytest.approx(_hand_bca(fi.estimate, manual, jack, 0.9), abs=1e-10)


def test_bca_p_inverts_the_bca_bound():
    """p(θ ≤ t) ≤ alpha exactly when the one-sided BCa lower bound (two-sided 1 − 2α) lies above t."""
    from scoreaudit.stats.estimate import Estimate

    rng = np.random.default_rng(3)
    boot = rng.gamma(4, 0.05, 4000)
    jack = rng.normal(0.2, 0.02, 30) + np.linspace(0, 0.03, 30) ** 2
    e = Estimate(0.2, "bootstrap", boot=boot, jack=jack, ci="bca")
    lo, hi = e.interval(0.9)
    for t in np.linspace(lo - 0.05, hi + 0.05, 41):
        assert (e.p_greater(t) <= 0.05) == (t < lo - 1e-9) or abs(t - lo) < 2e-3
        assert (e.p_less(t) <= 0.05) == (t > hi + 1e-9) or abs(t - hi) < 2e-3
    st = Estimate(0.2, "bootstrap", boot=boot, jack=jack, ci="studentized", detail={"n_clusters": 30})
    se = np.std(boot, ddof=1) * np.sqrt(30 / 29)  # the bootstrap SD made unbiased for G = 30 clusters
    assert st.interval(0.9) == pytest.approx((0.2 - stats.t.ppf(0.95, 29) * se, 0.2 + stats.t.ppf(0.95, 29) * se))
    assert st.p_greater(0.0) == pytest.approx(stats.t.sf(0.2 / se, 29))


def test_curve_matches_hand_computation(small):
    ir, tables = small
    res, derived, ctx = compute(ir, tables)
    s = tables["scores"]
    s = s[(s.arm == "synthetic") & (s.scorer == "ir") & (s.operator == "light")]
    _, sd = _hand_contrasts(ir, tables, "synthetic", "ir", "light")
    wide = s.pivot(index="image_id", columns="dose", values="score")
    delta = wide.sub(wide[0.0], axis=0) / sd
    cl = tables["images"].set_index("image_id")["cluster"]
    expect = delta.groupby(cl.reindex(delta.index)).mean().mean()
    got = derived["curves"].query("arm == 'synthetic' and scorer == 'ir' and operator == 'light'")
    np.testing.assert_allclose(got["mean"].to_numpy(), expect.to_numpy(), atol=1e-12)


def _within(v, codes):
    """Demean v (rows) within `codes` by pandas, independently of the implementation."""
    return (pd.DataFrame(v).groupby(codes).transform(lambda c: c - c.mean())).to_numpy()


def test_fe_regression_matches_statsmodels_on_within_data():
    """Images nested in clusters: coefficients = OLS with dummies; SEs = statsmodels' clustered OLS on the
    within-transformed data (absorbed image effects not counted in K, as Stata's xtreg fe)."""
    rng = np.random.default_rng(0)
    n_img, per, G = 40, 6, 13
    img = np.repeat(np.arange(n_img), per)
    grp = img % G
    X = rng.normal(size=(len(img), 2))
    y = 0.7 * X[:, 0] - 0.3 * X[:, 1] + rng.normal(size=n_img)[img] + rng.normal(size=len(img))
    r = fe_ols_cluster(y, X, img, grp)
    D = (img[:, None] == np.arange(n_img)[None, :]).astype(float)
    dummies = sm.OLS(y, np.column_stack([X, D])).fit(cov_type="cluster", cov_kwds={"groups": grp}, use_t=True)
    np.testing.assert_allclose(r.params, dummies.params[:2], atol=1e-8)
    fit = sm.OLS(_within(y, img)[:, 0], _within(X, img)).fit(cov_type="cluster", cov_kwds={"groups": grp},
                                                           use_t=True)
    np.testing.assert_allclose(r.params, fit.params, atol=1e-8)
    np.testing.assert_allclose(r.bse, fit.bse, atol=1e-8)
    # the dummies convention differs only by the K of the small-sample factor
    N = len(y)
    np.testing.assert_allclose(r.bse * np.sqrt((N - 2) / (N - 2 - n_img)), dummies.bse[:2], atol=1e-8)
    # fixed effects not nested in the clusters count in K (statsmodels with dummies)
    grp2 = np.arange(len(img)) % G
    r2 = fe_ols_cluster(y, X, img, grp2)
    d2 = sm.OLS(y, np.column_stack([X, D])).fit(cov_type="cluster", cov_kwds={"groups": grp2}, use_t=True)
    np.testing.assert_allclose(r2.bse, d2.bse[:2], atol=1e-8)
    from scoreaudit.stats.estimate import Estimate

    e = Estimate(float(r.params[0]), "normal", se=float(r.bse[0]), df=G - 1)
    two_sided = 2 * min(e.p_greater(0.0), e.p_less(0.0))
    assert two_sided == pytest.approx(fit.pvalues[0], abs=1e-8)


def test_attribute_effect_cell_matches_statsmodels(body_ir):
    tables = planted_tables(body_ir, {"bodies": ArmShape(15, 2)},
                            {"*": {"slope_by": "width", "slope": 0.8, "noise": 0.3}}, seed=3)
    ctx = StatContext(with_settings(body_ir, scale="raw"), tables)
    call = body_ir.cells()[0].statistic
    est = ctx.evaluate(call, "bodies", "laion")
    # independent build of the design with pandas, then statsmodels with dummies
    s = tables["scores"].query("arm == 'bodies' and scorer == 'laion' and operator == 'widen'")
    m = tables["measures"].query("arm == 'bodies' and operator == 'widen'")
    w = m[m.name == "width"].set_index(["image_id", "dose"])["value"]
    c = m[m.name == "deformation"].set_index(["image_id", "dose"])["value"]
    sc = s.set_index(["image_id", "dose"])["score"]
    sd = np.std(tables["scores"].query("arm == 'bodies' and scorer == 'laion' and operator == 'original'")["score"], ddof=1)
    sd_est = StatContext(body_ir, tables).evaluate(call, "bodies", "laion")  # scale: sd, bootstrap-tested
    df = pd.DataFrame({"s": sc, "w": w, "c": c}).reset_index()
    base = df[df.dose == 1.0].set_index("image_id")
    df = df[df.dose != 1.0]
    df["y"] = df.s - base.loc[df.image_id, "s"].to_numpy()
    df["dw"] = df.w - base.loc[df.image_id, "w"].to_numpy()
    clusters = tables["images"].set_index("image_id")["cluster"]
    dummies = pd.get_dummies(df.image_id).astype(float)
    groups = pd.factorize(clusters.loc[df.image_id])[0]
    fit = sm.OLS(df.y.to_numpy(), np.column_stack([df[["dw", "c"]].to_numpy(), dummies.to_numpy()])).fit(
        cov_type="cluster", cov_kwds={"groups": groups})
    assert est.estimate == pytest.approx(fit.params[0], abs=1e-8)
    within = sm.OLS(_within(df[["y"]].to_numpy(), df.image_id.to_numpy())[:, 0],
                    _within(df[["dw", "c"]].to_numpy(), df.image_id.to_numpy())).fit(
        cov_type="cluster", cov_kwds={"groups": groups})
    assert est.se == pytest.approx(within.bse[0], abs=1e-8)
    assert sd_est.estimate == pytest.approx(fit.params[0] / sd, abs=1e-8) and sd_est.method == "bootstrap"
    # replicate 0 by weighted least squares with the drawn clusters' counts, divided by the replicate's SD
    W = StatContext(body_ir, tables).arm("bodies").W[0]
    cl = clusters.reindex(df.image_id).to_numpy()
    order = np.array(sorted(set(clusters.astype(str))))
    w_rows = W[np.searchsorted(order, cl.astype(str))]
    kept = w_rows > 0  # clusters drawn in replicate 0 (with their multiplicity as weights)
    dk = dummies.to_numpy()[kept]
    dk = dk[:, dk.sum(0) > 0]
    wls = sm.WLS(df.y.to_numpy()[kept], np.column_stack([df[["dw", "c"]].to_numpy()[kept], dk]),
                 weights=w_rows[kept]).fit()
    orig = tables["scores"].query("arm == 'bodies' and scorer == 'laion' and operator == 'original'")
    reps = W[np.searchsorted(order, clusters.reindex(orig.image_id).astype(str).to_numpy())]
    sd0 = np.std(np.repeat(orig.score.to_numpy(), reps.astype(int)), ddof=1)
    assert sd_est.boot[0] == pytest.approx(wls.params[0] / sd0, abs=1e-8)


@pytest.mark.parametrize("method,sm_name", [("bh", "fdr_bh"), ("by", "fdr_by"), ("holm", "holm"),
                                             ("bonferroni", "bonferroni")])
def test_q_values_match_multipletests(method, sm_name):
    p = np.random.default_rng(1).uniform(0, 0.2, 17)
    q = adjust(list(p) + [float("nan")], method)
    np.testing.assert_allclose(q[:-1], multipletests(p, alpha=0.05, method=sm_name)[1], atol=1e-12)
    assert np.isnan(q[-1])
    assert adjust([0.2, 0.01], "none") == [0.2, 0.01]
    # what real families hold: ties (discrete tests), p = 1, a single cell, large p's capped at 1, NaNs between
    rng = np.random.default_rng(7)
    cases = [np.array([0.5]), np.array([0.01, 0.01, 0.01]), np.array([1.0, 1.0, 0.04, 0.04, 0.2]),
             np.round(rng.uniform(0, 1, 40), 2), rng.uniform(0, 1, 300), np.array([0.9, 0.95, 0.99, 0.6])]
    for p in cases:
        mixed = list(p)
        mixed.insert(len(mixed) // 2, float("nan"))
        q = np.array(adjust(mixed, method))
        np.testing.assert_allclose(np.delete(q, len(p) // 2), multipletests(p, alpha=0.05, method=sm_name)[1],
                                   atol=1e-12, err_msg=str(p))


def test_outcome_rule():
    from scoreaudit.stats.estimate import Estimate

    boot = np.linspace(-0.5, -0.1, 1001)  # entirely below 0
    e = Estimate(-0.3, "bootstrap", boot=boot)
    gt = CellTest(kind="greater", threshold=0.0, text="x > 0")
    assert e.p_greater(0.0) == pytest.approx(1.0)
    assert number_outcome(e, gt, 1.0, 0.05) == "refuted"
    eq = CellTest(kind="equivalence", low=-0.05, high=0.05, text="abs(x) < 0.05")
    assert number_outcome(e, eq, 1.0, 0.05) == "refuted"
    assert number_outcome(e, CellTest(kind="less", threshold=0.0, text="x < 0"), 0.001, 0.05) == "supported"
    wide = Estimate(0.0, "bootstrap", boot=np.linspace(-1, 1, 1001))
    assert number_outcome(wide, gt, 0.5, 0.05) == "inconclusive"
    # bootstrap p inverts the percentile bound: p <= alpha iff the one-sided bound is above t
    p = Estimate(0.3, "bootstrap", boot=np.linspace(0.01, 0.6, 999)).p_greater(0.0)
    assert p == pytest.approx(1 / 1000)


def test_validity_r2_matches_linregress(small):
    ir, tables = small
    ctx = StatContext(ir, tables)
    v = validity_numbers(ctx, "real", "light", "ita")
    m = tables["measures"].query("arm == 'real' and operator == 'light' and name == 'ita'")
    w = m.pivot(index="image_id", columns="dose", values="value")
    d = w.sub(w[0.0], axis=0).drop(columns=[0.0])
    x = np.tile(d.columns.to_numpy(), len(d))
    lr = stats.linregress(x, d.to_numpy().ravel())
    assert v["r2"] == pytest.approx(lr.rvalue ** 2, abs=1e-10)
    inc = (np.diff(w.to_numpy(), axis=1) > 0).all(1)
    assert v["monotonic"] == pytest.approx(inc.mean())


def test_homogeneity_omnibus_matches_scipy_kruskal_and_anova(small, skin_ir):
    ir, tables = small
    ctx = StatContext(ir, tables)
    cell = next(c for c in ir.cells() if c.hypothesis == "H6" and c.scorer == "hps")
    est = ctx.evaluate(cell.statistic, "real", "hps")
    cm, _ = _hand_contrasts(ir, tables, "real", "hps", "light")
    race = tables["images"].query("arm == 'real'").set_index("cluster")["race"]
    groups = [cm["fi"][race.reindex(cm.index) == lv].to_numpy() for lv in ("A", "B")]
    assert est.detail["design"] == "nested" and est.detail["test"] == "kruskal"  # chosen from the design
    assert est.detail["omnibus_p"] == pytest.approx(stats.kruskal(*groups).pvalue, abs=1e-8)
    anova = cell.statistic.model_copy(update={"params": {**cell.statistic.params, "test": "anova"}})
    assert ctx.evaluate(anova, "real", "hps").detail["omnibus_p"] == pytest.approx(stats.f_oneway(*groups).pvalue,
                                                                                  abs=1e-8)
    # with a margin the cell's p is the intersection–union p of the pairwise equivalence tests
    if est.detail["margin"]:
        assert est.p_fixed == pytest.approx(max(r["p_equivalence"] for r in est.detail["pairs"]), abs=1e-12)
    else:
        assert est.p_fixed == est.detail["omnibus_p"]
    lc = est.detail["largest_contrast"]
    by = {s["stratum"]: s["estimate"] for s in est.detail["strata"]}
    assert lc["difference"] == pytest.approx(by[lc["a"]] - by[lc["b"]], abs=1e-12)
    assert lc["label"].startswith("selected after the fact")


@pytest.mark.parametrize("df", [1, 2, 5.5, 30, 1e6, float("inf"), None])
def test_t_quantiles_and_tails_match_scipy_stats(df):
    """The intervals and Wald/studentized p's read Student's t through scipy.special (estimate.py), not
    scipy.stats: the same numbers as scipy.stats.t (the normal without df), far tails included."""
    from scipy import stats

    from scoreaudit.stats.estimate import _t_cdf, _t_ppf

    dist = stats.t(df) if df else stats.norm
    for q in (1e-6, 0.025, 0.05, 0.5, 0.95, 0.975):
        assert _t_ppf(q, df) == pytest.approx(dist.ppf(q), rel=1e-12, abs=1e-12)
    for x in (-40.0, -3.0, -0.1, 0.0, 2.0, 50.0):
        assert _t_cdf(x, df) == pytest.approx(dist.cdf(x), rel=1e-12, abs=1e-300)
        assert _t_cdf(-x, df) == pytest.approx(dist.sf(x), rel=1e-12, abs=1e-300)


def _omnibus_cases():
    """What real strata hold: ties (discrete scores), tiny groups, unequal sizes, constant groups."""
    rng = np.random.default_rng(11)
    return [
        [rng.normal(0, 1, 30), rng.normal(0.4, 1, 25), rng.normal(-0.2, 2, 40)],
        [np.round(rng.normal(0, 1, 50), 1), np.round(rng.normal(0.2, 1, 7), 1)],
        [rng.integers(0, 4, 20).astype(float), rng.integers(0, 4, 3).astype(float), rng.integers(1, 5, 12).astype(float)],
        [np.array([1.0, 2.0]), np.array([3.0]), np.array([2.0, 2.0, 5.0])],
        [np.array([1.0, 1.0, 1.0]), np.array([2.0, 2.0])],
        [rng.normal(0, 1, 400), rng.normal(0.05, 1, 600), rng.normal(0, 1, 500), rng.normal(0.1, 1, 300)],
    ]


@pytest.mark.parametrize("case", range(6))
def test_written_out_kruskal_and_anova_match_scipy(case):
    from scoreaudit.stats import omnibus

    groups = _omnibus_cases()[case]
    h, p = omnibus.kruskal(*groups)
    ref = stats.kruskal(*groups)
    assert h == pytest.approx(ref.statistic, rel=1e-12) and p == pytest.approx(ref.pvalue, rel=1e-10, abs=1e-300)
    f, p = omnibus.f_oneway(*groups)
    ref = stats.f_oneway(*groups)
    assert f == pytest.approx(ref.statistic, rel=1e-10) and p == pytest.approx(ref.pvalue, rel=1e-8, abs=1e-300)


def test_written_out_omnibus_tests_where_scipy_gives_nan():
    from scoreaudit.stats import omnibus

    with np.errstate(all="ignore"):
        ref = stats.kruskal([2.0, 2.0], [2.0, 2.0, 2.0])
    assert np.isnan(ref.pvalue) and all(np.isnan(omnibus.kruskal([2.0, 2.0], [2.0, 2.0, 2.0])))
    assert all(np.isnan(omnibus.kruskal([1.0, np.nan], [2.0, 3.0])))
    assert all(np.isnan(omnibus.f_oneway([1.0, 1.0], [1.0, 1.0, 1.0])))
    assert omnibus.f_oneway([1.0, 1.0], [2.0, 2.0, 2.0]) == (float("inf"), 0.0)
    assert tuple(stats.f_oneway([1.0, 1.0], [2.0, 2.0, 2.0])) == (np.inf, 0.0)
    with np.errstate(all="ignore"):
        ref = stats.friedmanchisquare([1.0, 1.0], [1.0, 1.0], [1.0, 1.0])
    assert np.isnan(ref.pvalue) and all(np.isnan(omnibus.friedman(np.ones((2, 3)))))


@pytest.mark.parametrize("shape,discrete", [((12, 3), False), ((40, 5), True), ((2, 3), True), ((300, 4), True)])
def test_written_out_friedman_matches_scipy(shape, discrete):
    from scoreaudit.stats import omnibus

    rng = np.random.default_rng(shape[0])
    m = rng.integers(0, 3, shape).astype(float) if discrete else rng.normal(0, 1, shape) + np.arange(shape[1]) * 0.3
    m[0] = 1.0  # one block tied throughout
    chisq, p = omnibus.friedman(m)
    ref = stats.friedmanchisquare(*m.T)
    assert chisq == pytest.approx(ref.statistic, rel=1e-12) and p == pytest.approx(ref.pvalue, rel=1e-10, abs=1e-300)


def test_written_out_sign_test_and_f_tail_match_scipy():
    from scoreaudit.stats import omnibus

    for n in (1, 2, 5, 10, 11, 40, 301):
        for k in range(n + 1):
            assert omnibus.sign_test(k, n) == pytest.approx(stats.binomtest(k, n, 0.5).pvalue, rel=1e-10), (k, n)
    assert omnibus.sign_test(0, 0) == 1.0
    for x, q, d in [(0.0, 1, 5), (2.5, 2, 30), (40.0, 3, 1469), (1e-9, 4, 2), (np.inf, 2, 9)]:
        assert omnibus.f_sf(x, q, d) == pytest.approx(stats.f.sf(x, q, d), rel=1e-10, abs=1e-300)
    assert np.isnan(omnibus.f_sf(float("nan"), 2, 9))
