"""Penalty index, trend, transfer as equivalence, homogeneity by design, pairs in SD units, simulate's designs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from scipy import stats
from stats_helpers import only_hypotheses, with_settings

from scoreaudit.compiler.ir import StatCallIR
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.planted import ArmShape, planted_tables
from scoreaudit.stats.transfer import classify, outcome

SHAPES = {"real": ArmShape(40, 1, {"race": ("A", "B")}), "synthetic": ArmShape(12, 3)}


def _ctx(ir, truth, shapes=SHAPES, seed=3, **settings):
    ir = with_settings(ir, **settings) if settings else ir
    return StatContext(ir, planted_tables(ir, shapes, truth, seed=seed)), ir


def test_penalty_index_of_a_one_sided_operator(skin_ir):
    ctx, _ = _ctx(skin_ir, {"*": {"fidelity": 0.8, "noise": 0.3}}, scale="raw")
    est = ctx.evaluate(StatCallIR(name="fidelity_index", version="1", params={"operator": "blur"}), "real", "pick")
    s = ctx.tables["scores"].query("arm == 'real' and scorer == 'pick' and operator == 'blur'")
    wide = s.pivot(index="image_id", columns="dose", values="score")
    penalty = -(wide[[1.0, 2.0, 4.0]].sub(wide[0.0], axis=0)).mean(axis=1)  # one image per cluster
    assert est.estimate == pytest.approx(penalty.mean(), abs=1e-12)
    assert est.detail["kind"].startswith("penalty index")
    assert est.p_greater(0.0) == pytest.approx(stats.ttest_1samp(penalty, 0, alternative="greater").pvalue, abs=1e-8)
    from scoreaudit.stats.truth import TruthContext, true_value

    u = np.array([1, 2, 4]) / 4
    tc = TruthContext({"*": {"fidelity": 0.8, "noise": 0.3}}, "pick", "real", raw=True)
    assert true_value(skin_ir, StatCallIR(name="fidelity_index", version="1", params={"operator": "blur"}), tc) \
        == pytest.approx(0.8 * np.mean(u ** 2))


def test_trend_matches_statsmodels_cluster_robust_ols(skin_ir):
    ctx, _ = _ctx(skin_ir, {"*": {"asymmetry": 0.5, "noise": 0.5}}, scale="raw")
    est = ctx.evaluate(StatCallIR(name="trend", version="1", params={"operator": "light"}), "synthetic", "ir")
    s = ctx.tables["scores"].query("arm == 'synthetic' and scorer == 'ir' and operator == 'light'")
    wide = s.pivot(index="image_id", columns="dose", values="score")
    d = wide.sub(wide[0.0], axis=0).drop(columns=[0.0]).stack().rename("y").reset_index()
    cl = ctx.tables["images"].set_index("image_id")["cluster"]
    fit = sm.OLS(d.y.to_numpy(), sm.add_constant(d.dose.to_numpy())).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(cl.reindex(d.image_id))[0]}, use_t=True)
    assert est.estimate == pytest.approx(fit.params[1], abs=1e-10)
    assert est.se == pytest.approx(fit.bse[1], abs=1e-10)
    assert 2 * min(est.p_greater(0.0), est.p_less(0.0)) == pytest.approx(fit.pvalues[1], abs=1e-8)
    assert est.estimate > 0  # planted asymmetry: the score rises with the dose


def test_transfer_outcome_is_an_equivalence_claim():
    base = {"theta_source": 0.3, "theta_target": 0.1, "null": 0.0, "margin": 2.0}
    # collapse (target not significant) with a wide ratio interval: never a refutation by itself
    det = {**base, "ratio_ci_low": -0.2, "ratio_ci_high": 1.1}
    assert classify(det, 0.001, 0.4, 0.05) == "collapse"
    assert outcome(det, 0.4, 0.05) == "inconclusive"
    # ratio interval entirely below 1/k: refuted (attenuated beyond the margin)
    det = {**base, "ratio_ci_low": 0.1, "ratio_ci_high": 0.4}
    assert classify(det, 0.001, 0.01, 0.05) == "attenuation" and outcome(det, 0.3, 0.05) == "refuted"
    # reversal: ρ's interval entirely below 0
    det = {**base, "theta_target": -0.3, "ratio_ci_low": -1.4, "ratio_ci_high": -0.6}
    assert classify(det, 0.001, 0.001, 0.05) == "reversal" and outcome(det, 1.0, 0.05) == "refuted"
    # within the margin and both significant with one sign: supported
    det = {**base, "theta_target": 0.28, "ratio_ci_low": 0.7, "ratio_ci_high": 1.3}
    assert classify(det, 0.001, 0.001, 0.05) == "consistent" and outcome(det, 0.01, 0.05) == "supported"


def test_transfer_ratio_is_centred_on_the_null_value(skin_ir):
    from scoreaudit.stats import transfer

    assert transfer.null_of("pairwise_accuracy") == 0.5 and transfer.null_of("asymmetry") == 0.0
    ir = only_hypotheses(skin_ir, "H4")
    ctx, _ = _ctx(ir, {"*": {"noise": 0.5, "asymmetry": 0.5, "arms": {"real": {"asymmetry": 0.25}}}},
                  shapes={"real": ArmShape(150, 1), "synthetic": ArmShape(60, 2)})
    cell = ir.cells()[0]
    est = ctx.evaluate(cell.statistic, None, cell.scorer)
    d = est.detail
    assert est.estimate == pytest.approx(d["theta_target"] / d["theta_source"])
    assert 0.25 < est.estimate < 0.8 and d["margin"] == 2.0
    with pytest.raises(Exception, match="no null value"):
        transfer.null_of("mean_rank")


def test_homogeneity_crossed_strata_use_friedman_and_margin_supports(skin_ir):
    ir = only_hypotheses(skin_ir, "H6")
    shapes = {"real": ArmShape(40, 3, {"race": ("A", "B", "C")}, crossed=("race",)), "synthetic": ArmShape(5, 2)}
    ctx, _ = _ctx(ir, {"*": {"fidelity": 0.5, "noise": 0.5}}, shapes=shapes, scale="raw")
    cell = ir.cells()[0]
    est = ctx.evaluate(cell.statistic, "real", cell.scorer)
    d = est.detail
    assert d["design"] == "crossed" and d["test"] == "friedman"
    # reference: Friedman over per-cluster contrasts of the three strata, blocked by cluster
    s = ctx.tables["scores"].query("arm == 'real' and scorer == @cell.scorer and operator == 'light'")
    wide = s.pivot(index="image_id", columns="dose", values="score")
    dlt = wide.sub(wide[0.0], axis=0)
    fi = -np.mean([(dlt[t] + dlt[-t]) / 2 for t in (5.0, 10.0, 15.0)], axis=0)
    img = ctx.tables["images"].query("arm == 'real'").set_index("image_id").reindex(wide.index)
    table = pd.DataFrame({"fi": fi, "c": img["cluster"].to_numpy(), "r": img["race"].to_numpy()})
    M = table.pivot_table(index="c", columns="r", values="fi")
    assert d["omnibus_p"] == pytest.approx(stats.friedmanchisquare(*M.to_numpy().T).pvalue, abs=1e-8)
    assert len(d["pairs"]) == 3 and all("inside_margin" in p for p in d["pairs"])
    # with a margin the cell's p is the intersection–union p of the pairwise equivalence tests
    assert est.p_fixed == pytest.approx(max(p["p_equivalence"] for p in d["pairs"]), abs=1e-12)
    assert d["margin"] == 0.1


def test_homogeneity_without_contrasts_uses_the_bootstrap_wald_test(body_ir):
    from scoreaudit.stats import strata

    boots = [np.random.default_rng(k).normal(m, 0.1, 4000) for k, m in enumerate((0.0, 0.0, 0.6))]
    w, p, q = strata._wald(boots, [0.0, 0.0, 0.6], G=30)
    assert q == 2 and p < 0.05
    cov = np.cov(np.column_stack([boots[1] - boots[0], boots[2] - boots[0]]), rowvar=False)
    dvec = np.array([0.0, 0.6])
    assert w == pytest.approx(dvec @ np.linalg.inv(cov) @ dvec / 2, rel=1e-6)
    assert p == pytest.approx(stats.f.sf(w, 2, 29))


def test_simulate_reproduces_crossed_strata_and_reports_false_refutation(skin_ir, tmp_path):
    from scoreaudit.stats.simulate import arm_shapes, run_simulation

    ids = [f"i{k}" for k in range(12)]
    pd.DataFrame({"image_id": ids, "path": [f"{i}.png" for i in ids], "set": np.repeat(["a", "b", "c", "d"], 3),
                  "race": ["A", "B", "C"] * 4}).to_csv(tmp_path / "real.csv", index=False)
    arm = skin_ir.arms["real"]
    call = arm.call.model_copy(update={"params": {**arm.call.params, "manifest": "real.csv"}})
    ir = skin_ir.model_copy(update={"arms": {**skin_ir.arms, "real": arm.model_copy(
        update={"cluster": "set", "call": call})}})
    shapes = arm_shapes(ir, tmp_path / "spec.audit")
    assert shapes["real"].crossed == ("race",) and shapes["real"].n_clusters == 4
    rows = run_simulation(only_hypotheses(with_settings(skin_ir, bootstrap=200), "H1"), 2,
                          {"*": {"fidelity": 0.5, "noise": 0.5}}, {"real": ArmShape(30, 1), "synthetic": ArmShape(8, 2)})
    assert all("false_refutation_rate" in r and r["hypothesis_true"] for r in rows)

