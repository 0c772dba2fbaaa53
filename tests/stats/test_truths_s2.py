"""Simulate truths for pairs statistics and comparison forms, and the homogeneity margin rule.

Truths are checked against the planted data themselves (large samples drawn by
stats/planted.py, summarised with numpy/scipy here), never against the
estimator that is being calibrated.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from scoreaudit import api
from scoreaudit.compiler.ir import readings_of
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.planted import ArmShape, planted_tables
from scoreaudit.stats.simulate import arm_shapes, run_simulation
from scoreaudit.stats.truth import TruthContext, true_value

HEAD = """audit "t" {{ seed: 1  alpha: 0.05  correction: none  bootstrap: 400  scale: {scale} }}
scorer s1 = planted()
scorer s2 = planted()
arm real = images("r", manifest: "r.csv", kind: real, strata: g)
arm wide = pairs("p.csv", preferred: a, other: b)
region skin = skin()
operator light = lab_shift(channel: L, region: skin) doses -15, -10, -5, 0, 5, 10, 15
"""


def _ir(claims: str, scale: str = "sd"):
    checked = api.check("t.audit", source=HEAD.format(scale=scale) + claims)
    assert checked.ok, [d.message for d in checked.diagnostics]
    return checked.ir


@pytest.mark.parametrize("scale", ["sd", "raw"])
def test_pairs_truths_match_the_planted_pairs(scale):
    ir = _ir('hypothesis A "a" {\n  pairwise_accuracy() > 0.5 on wide for each scorer\n'
             '  mean_gap() > 0 on wide for each scorer\n}\n', scale)
    truth = {"*": {"gap": 0.8, "noise": 0.5}}
    t = planted_tables(ir, {"wide": ArmShape(40000, 2)}, truth, seed=5)
    img = t["images"].set_index("image_id")
    s = t["scores"].query("scorer == 's1'").set_index("image_id")["score"]
    pref = s[img.index[img.side == "preferred"]].to_numpy()
    other = s[img.index[img.side == "other"]].to_numpy()
    acc_cell, gap_cell = (c for c in ir.cells() if c.scorer == "s1")
    tc = TruthContext(truth, "s1", "wide", raw=scale == "raw")
    acc = true_value(ir, acc_cell.statistic, tc)
    assert acc == pytest.approx(stats.norm.cdf(0.8 / np.sqrt(2 * 1.25)), abs=1e-12)
    assert np.mean(pref > other) == pytest.approx(acc, abs=4 * np.sqrt(acc * (1 - acc) / len(pref)))
    gap = true_value(ir, gap_cell.statistic, tc)
    d = pref - other
    sd = np.std(np.concatenate([pref, other]), ddof=1) if scale == "sd" else 1.0
    assert np.mean(d) / sd == pytest.approx(gap, abs=4 * np.std(d) / sd / np.sqrt(len(d)) + 5e-3)


def test_simulate_plants_pairs_arms_and_recovers_their_truths():
    ir = _ir('hypothesis A "a" {\n  pairwise_accuracy() > 0.5 on wide for each scorer\n}\n')
    shapes = arm_shapes(ir, None)
    assert shapes["wide"].n_clusters == 200 and shapes["wide"].per_cluster == 2
    rows = run_simulation(ir, 30, {"*": {"gap": 0.6, "noise": 0.5}}, {"wide": ArmShape(200, 2)}, n_boot=400,
                          seed=3)
    for r in rows:
        assert r["truth"] == pytest.approx(stats.norm.cdf(0.6 / np.sqrt(2.5)))
        assert abs(r["bias"]) < 0.02 and r["coverage"] >= 0.8 and r["power"] > 0.9


def test_difference_and_ratio_truths_are_those_of_their_readings():
    ir = _ir('hypothesis D "d" {\n'
             '  difference(fidelity_index(light) where g = "b", fidelity_index(light) where g = "a") > 0 on real for each scorer\n'
             '  abs(ratio(fidelity_index(light) for s1, fidelity_index(light) for s2)) < 3 on real\n}\n')
    truth = {"s1": {"fidelity": 0.6, "noise": 0.5, "strata": {"g=b": {"fidelity": 0.9}}},
             "s2": {"fidelity": 0.3, "noise": 1.0}, "_levels": {"g": ("a", "b")}}
    diff = next(c for c in ir.cells() if c.statistic.name == "difference" and c.scorer == "s1")
    rat = next(c for c in ir.cells() if c.statistic.name == "ratio")
    fi = readings_of(diff.statistic)[0].statistic
    # FI of the planted scorer: F × mean over t of (t/15)² for t = 5, 10, 15, divided by sqrt(1 + noise²)
    unit = np.mean((np.array([5.0, 10.0, 15.0]) / 15) ** 2)
    assert true_value(ir, fi, TruthContext(truth, "s1", "real", stratum="g=b")) == pytest.approx(
        0.9 * unit / np.sqrt(1.25))
    assert true_value(ir, diff.statistic, TruthContext(truth, diff.scorer, "real")) == pytest.approx(
        (0.9 - 0.6) * unit / np.sqrt(1.25))
    assert true_value(ir, rat.statistic, TruthContext(truth, rat.scorer, "real")) == pytest.approx(
        (0.6 / np.sqrt(1.25)) / (0.3 / np.sqrt(2.0)))


def test_planted_difference_between_strata_is_recovered_by_simulate():
    ir = _ir('hypothesis D "d" {\n'
             '  difference(fidelity_index(light) where g = "b", fidelity_index(light) where g = "a") > 0 on real for each scorer\n}\n')
    truth = {"*": {"fidelity": 0.5, "noise": 0.5, "strata": {"g=b": {"fidelity": 1.0}}}}
    rows = run_simulation(ir, 25, truth, {"real": ArmShape(120, 1, {"g": ("a", "b")})}, n_boot=400, seed=4)
    unit = np.mean((np.array([5.0, 10.0, 15.0]) / 15) ** 2) / np.sqrt(1.25)
    for r in rows:
        assert r["truth"] == pytest.approx(0.5 * unit)
        assert abs(r["bias"]) < 0.03 and r["coverage"] >= 0.8


def test_homogeneity_with_a_margin_is_not_refuted_by_the_omnibus_test_inside_the_margin():
    """A true stratum difference of δ/2 lies inside the claim: with many clusters the omnibus test of exact
    equality rejects it, but the margin claim is supported, never refuted."""
    from scoreaudit.stats.engine import evaluate_cells

    ir = _ir('hypothesis H "h" {\n  homogeneous(fidelity_index(light), by: g, margin: 0.1) on real for each scorer\n}\n')
    unit = np.mean((np.array([5.0, 10.0, 15.0]) / 15) ** 2) / np.sqrt(1.25)
    truth = {"*": {"fidelity": 0.5, "noise": 0.5, "strata": {"g=b": {"fidelity": 0.5 + 0.05 / unit}}}}
    t = planted_tables(ir, {"real": ArmShape(3000, 1, {"g": ("a", "b")})}, truth, seed=2)
    cells = evaluate_cells(StatContext(ir, t, n_boot=400), list(ir.cells()))
    for c in cells:
        assert c["detail"]["omnibus_p"] < 0.05  # the strata do differ (by δ/2)
        assert c["outcome"] == "supported"
        assert c["p"] == pytest.approx(max(r["p_equivalence"] for r in c["detail"]["pairs"]))
    # a difference of 3δ: the Bonferroni interval of the pair lies outside the margin -> refuted
    truth["*"]["strata"]["g=b"]["fidelity"] = 0.5 + 0.3 / unit
    t = planted_tables(ir, {"real": ArmShape(400, 1, {"g": ("a", "b")})}, truth, seed=2)
    cells = evaluate_cells(StatContext(ir, t, n_boot=400), list(ir.cells()))
    assert all(c["outcome"] == "refuted" and c["detail"]["exceeds_margin"] for c in cells)


def test_transfer_ratio_expansion_follows_the_welch_degrees_of_freedom():
    """ρ's interval expansion uses 1 + Welch–Satterthwaite df of the two independently resampled arms."""
    from scoreaudit.stats.estimate import Estimate
    from scoreaudit.stats.transfer import _welch_clusters

    rng = np.random.default_rng(1)
    bs, br = rng.normal(0.3, 0.05, 2000), rng.normal(0.6, 0.02, 2000)
    es = Estimate(0.3, "bootstrap", boot=bs, detail={"n_clusters": 10})
    er = Estimate(0.6, "bootstrap", boot=br, detail={"n_clusters": 200})
    vs = (0.6 / 0.3) ** 2 * np.var(bs) / 0.3**2
    vr = np.var(br) / 0.3**2
    df = (vs + vr) ** 2 / (vs**2 / 9 + vr**2 / 199)
    assert _welch_clusters(es, er, bs, br, 0.0) == int(round(df)) + 1
    assert 10 <= _welch_clusters(es, er, bs, br, 0.0) < 30  # the small arm carries the variance
