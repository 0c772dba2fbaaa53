"""Comparisons between readings, stratum gaps, decomposition, agreement: planted truths and references.

Planted: a known FI ratio and difference between two scorers, a known accuracy
difference on the same pairs, and a known split of a group gap into attribute
and confound are recovered inside their CIs. References (to 1e-8): McNemar's
exact test (statsmodels) for the sign-flip test without ties, the paired t-test (scipy), accuracy, F1, Cohen's
kappa and AUROC (scikit-learn).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from scoreaudit.compiler.ir import (ORIGINAL, ArmIR, AuditIR, MeasureIR, OperatorIR, PluginCall, ReadingIR,
                                    ScorerIR, Settings, StatCallIR)
from scoreaudit.stats import comparisons  # noqa: F401  (registers the estimators)
from scoreaudit.stats import cross_estimators, dose, regression  # noqa: F401
from scoreaudit.stats.context import StatContext

DOSES = (-10.0, -5.0, 0.0, 5.0, 10.0)


def _ir(scale="raw", n_boot=1000, seed=3, alpha=0.05):
    def images(name, kind, **kw):
        return ArmIR(name=name, call=PluginCall(plugin="images", version="1", params={"folder": "x", "manifest": name}),
                     source="images", kind=kind, cluster="cluster", **kw)

    return AuditIR(
        settings=Settings(title="t", seed=seed, bootstrap=n_boot, scale=scale, alpha=alpha),
        scorers={k: ScorerIR(name=k, call=PluginCall(plugin="planted", version="1")) for k in ("s1", "s2")},
        arms={"real": images("real", "real", strata=("race",)),
              "syn": images("syn", "synthetic", strata=("tone",)),
              "wide": ArmIR(name="wide", call=PluginCall(plugin="pairs", version="1", params={"manifest": "p.csv"}),
                            source="pairs"),
              "orig": ArmIR(name="orig", call=PluginCall(plugin="pairs", version="1", params={"manifest": "p.csv"}),
                            source="pairs")},
        regions={},
        measures={"ita": MeasureIR(name="ita", call=PluginCall(plugin="ita", version="1"), role="measure")},
        operators={"light": OperatorIR(name="light", call=PluginCall(plugin="lab_shift", version="1"), doses=DOSES,
                                       identity=0.0, pixel_local=True, symmetric=True)},
    )


def _call(name, **params):
    return StatCallIR(name=name, version="1", params=params)


def _compare(kind, a: ReadingIR, b: ReadingIR):
    return StatCallIR(name=kind, version="1", params={"readings": [a.model_dump(mode="json"), b.model_dump(mode="json")]})


FI = _call("fidelity_index", operator="light")
F1, F2 = 1.0, 0.25  # planted curvature of s1 and s2: FI_raw = F × mean(u²) over the positive doses = 0.625 F


def _dose_tables(seed=0, n_clusters=120, per=2):
    rng = np.random.default_rng(seed)
    images, scores = [], []
    for c in range(n_clusters):
        race = "A" if c % 2 else "B"
        for k in range(per):
            iid = f"r{c}_{k}"
            images.append({"arm": "real", "image_id": iid, "cluster": f"c{c}", "race": race})
            base = {"s1": rng.normal(), "s2": rng.normal()}
            for d in DOSES:
                u = d / 10
                for s, F in (("s1", F1), ("s2", F2)):
                    v = base[s] - F * u * u + 0.2 * u + rng.normal(0, 0.3)
                    scores.append({"arm": "real", "image_id": iid, "operator": "light", "dose": d, "scorer": s,
                                   "score": v})
                    if d == 0:
                        scores.append({"arm": "real", "image_id": iid, "operator": ORIGINAL, "dose": 0.0,
                                       "scorer": s, "score": v})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


def test_planted_ratio_and_difference_of_fidelity_indices_are_recovered():
    ra, rb = ReadingIR(statistic=FI, arm="real", scorer="s2"), ReadingIR(statistic=FI, arm="real", scorer="s1")
    cover_ratio = cover_diff = 0
    for seed in range(10):
        ctx = StatContext(_ir(n_boot=400), _dose_tables(seed=seed))
        ratio = ctx.evaluate(_compare("ratio", ra, rb), None, "s2:s1")
        lo, hi = ratio.interval(0.95)
        cover_ratio += lo < F2 / F1 < hi
        assert hi - lo < 0.3
        assert ratio.detail["paired"] and ratio.detail["shared_clusters"] == 120
        diff = ctx.evaluate(_compare("difference", rb, ra), None, "s1:s2")
        lo, hi = diff.interval(0.95)
        cover_diff += lo < 0.625 * (F1 - F2) < hi
        # raw scale, same clusters, cluster-mean contrasts: the paired t-test
        assert diff.detail["test"] == "paired t"
        assert diff.p_greater(0.0) < 1e-6
    # 95% intervals: at least 8 of 10 cover the planted truth (P(fewer) < 0.012 if they are right)
    assert cover_ratio >= 8 and cover_diff >= 8, (cover_ratio, cover_diff)


def test_paired_t_matches_scipy():
    from scipy import stats

    ctx = StatContext(_ir(), _dose_tables(seed=1, n_clusters=40))
    ra, rb = ReadingIR(statistic=FI, arm="real", scorer="s1"), ReadingIR(statistic=FI, arm="real", scorer="s2")
    est = ctx.evaluate(_compare("difference", ra, rb), None, "s1:s2")
    a, b = ctx.evaluate(FI, "real", "s1"), ctx.evaluate(FI, "real", "s2")
    assert list(a.detail["_clusters"]) == list(b.detail["_clusters"])
    for t, side in ((0.0, "greater"), (0.3, "less"), (0.1, "greater")):
        ref = stats.ttest_rel(a.contrasts, b.contrasts + t, alternative=side).pvalue
        got = est.p_greater(t) if side == "greater" else est.p_less(t)
        assert got == pytest.approx(ref, abs=1e-8, rel=1e-8)
    assert est.estimate == pytest.approx(a.estimate - b.estimate, abs=1e-12)


def test_sd_scale_uses_the_bootstrap_and_where_strata_are_independent_when_nested():
    ctx = StatContext(_ir(scale="sd"), _dose_tables(seed=2))
    ra = ReadingIR(statistic=FI, arm="real", scorer="s1", where=(("race", "A"),))
    rb = ReadingIR(statistic=FI, arm="real", scorer="s1", where=(("race", "B"),))
    est = ctx.evaluate(_compare("difference", ra, rb), None, "s1")
    assert est.detail["test"] == "bootstrap" and not est.detail["paired"]  # each cluster holds one race
    lo, hi = est.interval(0.90)
    assert lo < 0 < hi  # the planted penalty does not depend on race
    assert est.p_equivalence(-0.5, 0.5) < 0.05


def test_ratio_with_a_denominator_ci_across_zero_is_undefined():
    t = _dose_tables(seed=4)
    s = t["scores"]
    d = s["dose"].to_numpy() / 10
    # s2 loses its curvature: FI(s2) ≈ 0 and its CI includes 0
    s.loc[s["scorer"] == "s2", "score"] += (F2 * d * d)[s["scorer"].to_numpy() == "s2"] * \
        (s.loc[s["scorer"] == "s2", "operator"] == "light").to_numpy()
    ctx = StatContext(_ir(), t)
    est = ctx.evaluate(_compare("ratio", ReadingIR(statistic=FI, arm="real", scorer="s1"),
                                ReadingIR(statistic=FI, arm="real", scorer="s2")), None, "s1:s2")
    assert est.undefined and "denominator" in est.undefined and "includes 0" in est.undefined


# ---------------------------------------------------------------- pairs: accuracy differences, McNemar


def _pairs_tables(seed=0, n=400, p1=0.8, p2=0.6, arms=("wide",)):
    rng = np.random.default_rng(seed)
    images, scores = [], []
    for k in range(n):
        right = {"s1": rng.random() < p1, "s2": rng.random() < p2}
        for arm in arms:
            for side in ("preferred", "other"):
                iid = f"p{k}:{side}"
                images.append({"arm": arm, "image_id": iid, "cluster": f"p{k}", "side": side, "pair_id": f"p{k}",
                               "judge": (1 if rng.random() < 0.7 else 0) if k % 10 else -1})
                for s in ("s1", "s2"):
                    win = right[s] == (side == "preferred")
                    scores.append({"arm": arm, "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": s,
                                   "score": float(win) + rng.normal(0, 0.01)})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


PA = _call("pairwise_accuracy", prompt=None)


def test_planted_accuracy_difference_on_the_same_pairs_uses_the_sign_flip_test():
    from statsmodels.stats.contingency_tables import mcnemar

    ctx = StatContext(_ir(), _pairs_tables())
    est = ctx.evaluate(_compare("difference", ReadingIR(statistic=PA, arm="wide", scorer="s1"),
                                ReadingIR(statistic=PA, arm="wide", scorer="s2")), None, "s1:s2")
    lo, hi = est.interval(0.95)
    assert lo < 0.8 - 0.6 < hi
    assert est.detail["test"].startswith("sign-flip (Monte Carlo")  # 400 pairs: more than 2^20 sign vectors
    a = ctx.evaluate(PA, "wide", "s1")
    b = ctx.evaluate(PA, "wide", "s2")
    assert est.estimate == pytest.approx(a.estimate - b.estimate, abs=1e-12)
    m = est.detail["signflip"]
    # the 2×2 table of (s1 right?, s2 right?) over the pairs, from the data directly (no ties here)
    t = ctx.tables["scores"]
    w = t.pivot_table(index=t["image_id"].str.split(":").str[0], columns=["scorer", t["image_id"].str.split(":").str[1]],
                      values="score")
    r1 = (w[("s1", "preferred")] > w[("s1", "other")]).to_numpy()
    r2 = (w[("s2", "preferred")] > w[("s2", "other")]).to_numpy()
    table = [[np.sum(r1 & r2), np.sum(r1 & ~r2)], [np.sum(~r1 & r2), np.sum(~r1 & ~r2)]]
    assert (m["a_better"], m["b_better"]) == (table[0][1], table[1][0])
    # with no ties the sign-flip test is McNemar's exact test; Monte Carlo over 19,999 flips is within 0.01
    ref = mcnemar(np.array(table), exact=True).pvalue
    assert m["p_two_sided"] == pytest.approx(ref, abs=0.01)
    from scipy import stats

    k, n = int(table[0][1]), int(table[0][1] + table[1][0])
    assert est.p_less(0.02) == pytest.approx(1.0, abs=1e-3)
    assert est.p_greater(0.0) <= 1e-4  # the planted difference is large: at the Monte-Carlo floor
    assert stats.binomtest(k, n, 0.5, alternative="greater").pvalue < 1e-4


def test_two_arms_over_the_same_pairs_are_paired_and_disjoint_arms_are_not():
    t = _pairs_tables(arms=("wide", "orig"))
    # s2 judges most pairs as s1 does (correlated correctness), so pairing narrows the interval
    sc = t["scores"]
    pair = sc["image_id"].str.split(":").str[0].str[1:].astype(int)
    same = (sc["scorer"] == "s2") & (pair % 4 != 0)
    s1 = sc[sc["scorer"] == "s1"].set_index(["arm", "image_id"])["score"]
    sc.loc[same, "score"] = [s1[(a, i)] for a, i in zip(sc.loc[same, "arm"], sc.loc[same, "image_id"])]
    ctx = StatContext(_ir(), t)
    est = ctx.evaluate(_compare("difference", ReadingIR(statistic=PA, arm="wide", scorer="s1"),
                                ReadingIR(statistic=PA, arm="orig", scorer="s2")), None, "s1:s2")
    assert est.detail["paired"] and est.detail["test"].startswith("sign-flip")
    img = t["images"]
    img.loc[img["arm"] == "orig", "image_id"] = "o" + img.loc[img["arm"] == "orig", "image_id"]
    img.loc[img["arm"] == "orig", "cluster"] = "o" + img.loc[img["arm"] == "orig", "cluster"]
    img.loc[img["arm"] == "orig", "pair_id"] = "o" + img.loc[img["arm"] == "orig", "pair_id"]
    s = t["scores"]
    s.loc[s["arm"] == "orig", "image_id"] = "o" + s.loc[s["arm"] == "orig", "image_id"]
    ctx = StatContext(_ir(), t)
    est2 = ctx.evaluate(_compare("difference", ReadingIR(statistic=PA, arm="wide", scorer="s1"),
                                 ReadingIR(statistic=PA, arm="orig", scorer="s2")), None, "s1:s2")
    assert not est2.detail["paired"] and est2.detail["test"] == "bootstrap"
    assert est2.estimate == pytest.approx(est.estimate)
    # independent resampling gives a wider interval than the paired one on the same numbers
    assert np.diff(est2.interval(0.95))[0] > np.diff(est.interval(0.95))[0]


# ---------------------------------------------------------------- agreement with labels


def test_agreement_metrics_match_scikit_learn_and_count_exclusions():
    from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score, roc_auc_score

    t = _pairs_tables(seed=7, n=300)
    ctx = StatContext(_ir(), t)
    pref = t["images"][(t["images"]["side"] == "preferred")].set_index("pair_id")
    sc = t["scores"][t["scores"]["scorer"] == "s1"].set_index("image_id")["score"]
    d = np.array([sc[f"{p}:preferred"] - sc[f"{p}:other"] for p in pref.index])
    y = pref["judge"].to_numpy()
    keep = y != -1
    y, d = y[keep], d[keep]
    call = (d > 0).astype(int)
    for metric, ref in (("accuracy", accuracy_score(y, call)), ("f1", f1_score(y, call)),
                        ("kappa", cohen_kappa_score(y, call)), ("auroc", roc_auc_score(y, d))):
        est = ctx.evaluate(_call("agreement", label="judge", metric=metric, missing=-1.0, prompt=None), "wide", "s1")
        assert est.estimate == pytest.approx(ref, abs=1e-8), metric
        assert est.detail["excluded_label"] == int((~keep).sum()) == 30
        lo, hi = est.interval(0.95)
        assert lo <= est.estimate <= hi
    notes = [n for n in ctx.notes if n["reason"].startswith("agreement: label judge is the missing value -1")]
    assert len({n["image_id"] for n in notes}) == 30


def test_auroc_on_an_images_arm_matches_scikit_learn_with_ties():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(11)
    n = 250
    label = rng.integers(0, 2, n)
    score = np.round(label * 0.8 + rng.normal(0, 1, n), 1)  # rounding makes ties
    images = pd.DataFrame({"arm": "real", "image_id": [f"i{k}" for k in range(n)],
                           "cluster": [f"c{k // 2}" for k in range(n)], "race": "A",
                           "judge": np.where(np.arange(n) % 25 == 0, "", label.astype(str))})
    scores = pd.DataFrame({"arm": "real", "image_id": images["image_id"], "operator": ORIGINAL, "dose": 0.0,
                           "scorer": "s1", "score": score})
    ctx = StatContext(_ir(), {"images": images, "scores": scores})
    est = ctx.evaluate(_call("agreement", label="judge", metric="auroc", missing=None, prompt=None), "real", "s1")
    keep = np.arange(n) % 25 != 0
    assert est.estimate == pytest.approx(roc_auc_score(label[keep], score[keep]), abs=1e-8)
    assert est.detail["excluded_label"] == 10
    # the weighted AUROC of one replicate equals scikit-learn's on the resampled rows
    from scoreaudit.stats.comparisons import auroc_weighted

    w = rng.integers(0, 3, n).astype(float)
    rows = np.repeat(np.arange(n), w.astype(int))
    assert auroc_weighted(score, label, w[None, :])[0] == pytest.approx(roc_auc_score(label[rows], score[rows]),
                                                                       abs=1e-8)


# ---------------------------------------------------------------- group gap on strata, decomposition


BETA, GAMMA = 0.05, -1.0  # score per ITA degree (within image), and the confound of the dark group (raw)


def _decomp_tables(seed=0, n_clusters=150):
    rng = np.random.default_rng(seed)
    images, scores, measures = [], [], []
    for c in range(n_clusters):
        tone = "dark" if c % 2 else "light"
        for k in range(2):
            iid = f"y{c}_{k}"
            images.append({"arm": "syn", "image_id": iid, "cluster": f"c{c}", "tone": tone})
            m0 = (10.0 if tone == "dark" else 30.0) + rng.normal(0, 3)
            b = rng.normal(0, 0.5) + BETA * m0 + (GAMMA if tone == "dark" else 0.0)
            for d in DOSES:
                m = m0 + 2.0 * d + rng.normal(0, 0.5)
                measures.append({"arm": "syn", "image_id": iid, "operator": "light", "dose": d, "name": "ita",
                                 "value": m})
                for s in ("s1", "s2"):
                    v = b + BETA * (m - m0) + rng.normal(0, 0.1)
                    scores.append({"arm": "syn", "image_id": iid, "operator": "light", "dose": d, "scorer": s,
                                   "score": v})
                    if d == 0:
                        scores.append({"arm": "syn", "image_id": iid, "operator": ORIGINAL, "dose": 0.0,
                                       "scorer": s, "score": v})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores), "measures": pd.DataFrame(measures)}


GAP = _call("group_gap", factor="tone", a="dark", b="light")
VIA = _call("attribute_effect", operator="light", measure="ita", controlling=None)
DEC = StatCallIR(name="decompose", version="1", params={"gap": "group_gap", "via": VIA.model_dump(mode="json")},
                 inner=GAP)


def test_planted_decomposition_is_recovered():
    ctx = StatContext(_ir(), _decomp_tables())
    gap = ctx.evaluate(GAP, "syn", "s1")
    attribute, confound = BETA * (10 - 30), GAMMA
    lo, hi = gap.interval(0.95)
    assert lo < attribute + confound < hi
    dec = ctx.evaluate(DEC, "syn", "s1")
    lo, hi = dec.interval(0.95)
    assert lo < attribute < hi
    clo, chi = dec.detail["confound_ci"]
    assert clo < confound < chi
    assert dec.detail["observed"] == pytest.approx(gap.estimate, abs=1e-9)
    beta = ctx.evaluate(VIA, "syn", "s1")
    assert dec.detail["beta"] == pytest.approx(beta.estimate, rel=1e-9)
    for part, truth in (("attribute", 0.5), ("confound", 0.5)):
        share = ctx.evaluate(StatCallIR(name="share", version="1", params={"statistic": "decompose", "part": part},
                                        inner=DEC), "syn", "s1")
        lo, hi = share.interval(0.95)
        assert lo < truth < hi, (part, share.estimate, lo, hi)


def test_stratum_gap_in_sd_units_recomputes_the_sd_per_replicate():
    t = _decomp_tables(seed=1)
    ctx = StatContext(_ir(scale="sd"), t)
    gap = ctx.evaluate(GAP, "syn", "s1")
    s0 = t["scores"][(t["scores"]["operator"] == ORIGINAL) & (t["scores"]["scorer"] == "s1")]
    tone = t["images"].set_index("image_id")["tone"]
    dark = s0["image_id"].map(tone) == "dark"
    ref = (s0["score"][dark].mean() - s0["score"][~dark].mean()) / s0["score"].std(ddof=1)
    assert gap.estimate == pytest.approx(ref, abs=1e-10)
    assert gap.detail["crossed"] is False


def test_cross_arm_paired_views_redraw_the_sd_jointly_with_their_own_counts():
    """scale: sd, two arms over the same ids: replicate b of a reading = (mean of the clusters the joint draw
    picked) / (SD of the whole arm's images under the same draw), by hand from the union count matrix."""
    from scoreaudit.stats.bootstrap import arm_rng, count_matrix

    t = _dose_tables(n_clusters=30, per=2)
    syn = t["images"].assign(arm="syn")
    t = {"images": pd.concat([t["images"], syn], ignore_index=True),
         "scores": pd.concat([t["scores"], t["scores"].assign(arm="syn")], ignore_index=True)}
    ir = _ir(scale="sd", n_boot=300)
    ctx = StatContext(ir, t)
    ra = ReadingIR(statistic=FI, arm="real", scorer="s1", where=(("race", "A"),))
    rb = ReadingIR(statistic=FI, arm="syn", scorer="s2")
    va, vb, pairing = comparisons.pair_views(ctx, ra, rb)
    assert pairing.paired and va.name == "real" and vb.name == "syn"
    A = comparisons.read(ctx, ra, va)
    # by hand: per-cluster raw FI means of the race-A clusters, the whole real arm's original scores per cluster
    s = t["scores"].query("arm == 'real' and scorer == 's1'")
    w = s[s.operator == "light"].pivot(index="image_id", columns="dose", values="score")
    d = w.sub(w[0.0], axis=0)
    fi = -(((d[5.0] + d[-5.0]) / 2 + (d[10.0] + d[-10.0]) / 2) / 2)
    img = t["images"].query("arm == 'real'").set_index("image_id")
    clusters = sorted(img["cluster"].unique())
    union = sorted(set(clusters))  # the syn arm holds the same clusters
    W = count_matrix(arm_rng(ir.settings.seed, "pairing", "real", "syn"), 300, len(union))
    cm = fi.groupby(img["cluster"].reindex(fi.index)).mean()
    orig = s[s.operator == ORIGINAL].set_index("image_id")["score"]
    by_cluster = {c: orig[img.index[img["cluster"] == c]].to_numpy() for c in clusters}
    a_clusters = sorted(img.loc[img["race"] == "A", "cluster"].unique())
    for b in (0, 7, 123):
        counts = dict(zip(union, W[b]))
        num = sum(counts[c] * cm[c] for c in a_clusters) / sum(counts[c] for c in a_clusters)
        drawn = np.concatenate([np.tile(by_cluster[c], int(counts[c])) for c in clusters])
        assert A.boot[b] == pytest.approx(num / np.std(drawn, ddof=1), abs=1e-10)
    # the SD replicates are the joint draw's, not the real arm's own matrix
    own = ctx.sd_weighted("real", "s1", ctx.arm("real").W)
    joint = ctx.sd_weighted("real", "s1", va.sd_W)
    assert not np.allclose(own, joint)


def test_mean_gap_readings_redraw_the_pooled_sd_with_the_pairs_draw():
    """scale: sd: a mean_gap reading's replicate = weighted mean difference / pooled SD of both sides, one draw."""
    t = _pairs_tables(n=60)
    ir = _ir(scale="sd", n_boot=200)
    ctx = StatContext(ir, t)
    MG = _call("mean_gap", prompt=None)
    r = ReadingIR(statistic=MG, arm="wide", scorer="s1")
    view = ctx.arm("wide")
    got = comparisons.read(ctx, r, view)
    pt = comparisons.pair_table(ctx, view, "s1")
    for b in (0, 5, 199):
        wts = view.W[b][pt["cidx"].to_numpy()]
        diff = np.sum(wts * (pt["preferred"] - pt["other"])) / wts.sum()
        both = np.concatenate([np.repeat(pt["preferred"].to_numpy(), wts.astype(int)),
                               np.repeat(pt["other"].to_numpy(), wts.astype(int))])
        assert got.boot[b] == pytest.approx(diff / np.std(both, ddof=1), abs=1e-10)
