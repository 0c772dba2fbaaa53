"""difference/ratio of probe readings: cells, pairing on prompts, tests against scipy and hand computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from scoreaudit import api
from scoreaudit.compiler.plan import build_plan
from scoreaudit.stats.bootstrap import arm_rng, count_matrix
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import evaluate_cells
from scoreaudit.stats.simulate import run_simulation

SPEC = '''audit "Probe comparisons" {{ seed: 3  bootstrap: 400  test: ttest  correction: none }}
scorer pick = pickscore(prompt: "a photo")
scorer laion = laion_aesthetic()
probe up = reno(pick, pipeline: "sd", prompts: "{pa}", iterations: 2, seeds: 0..1,
                measures: [ita, clip_attribute(labels: ["man", "woman"])])
probe down = reno(laion, pipeline: "sd", prompts: "{pb}", iterations: 2, seeds: 0..1, direction: minimize,
                  measures: [ita, clip_attribute(labels: ["man", "woman"])])
hypothesis C "t" {{
  difference(probe_drift(up, measure: ita), probe_drift(down, measure: ita)) > 0
  ratio(probe_drift(up, measure: ita), probe_drift(down, measure: ita)) > 1
  difference(probe_shift(up, label: "woman"), probe_shift(up, label: "man")) > 0
  abs(ratio(probe_drift(up, measure: score), probe_drift(down, measure: score))) < 5
}}
'''


def _ir(pa: str = "prompts.txt", pb: str = "prompts.txt"):
    c = api.check("t.audit", source=SPEC.format(pa=pa, pb=pb), tables=False)
    assert c.ok, [d.message for d in c.diagnostics]
    return c.ir


def _rows(probe: str, scorer: str, prompts: list[str], ends: dict) -> list[dict]:
    """ends: {(prompt index, seed): {(measure, label): (first, last)}} → probe table rows."""
    rows = []
    for (i, seed), vals in ends.items():
        for (measure, label), (a, b) in vals.items():
            for it, v in ((0, a), (1, (a + b) / 2), (2, b)):
                rows.append({"probe": probe, "scorer": scorer, "prompt": prompts[i], "cluster": f"p{i:04d}",
                             "seed": seed, "iteration": it, "measure": measure, "label": label, "value": v})
    return rows


def _data(rng, n: int, drift: float, common: np.ndarray | None = None) -> tuple[dict, dict]:
    """Random ends for n prompts × 2 seeds; per-prompt means of last − first for every (measure, label)."""
    ends, per = {}, {}
    for i in range(n):
        for seed in range(2):
            shared = 0.0 if common is None else common[i]
            a = rng.normal(30, 5)
            b = a + drift + shared + rng.normal(0, 1)
            w0, w1 = int(rng.random() < 0.4), int(rng.random() < 0.7)
            s0 = rng.normal(0, 1)
            s1 = s0 + 2.0 + rng.normal(0, 0.3)
            ends[(i, seed)] = {("ita", ""): (a, b), ("clip_attribute", "woman"): (w0, w1),
                               ("clip_attribute", "man"): (1 - w0, 1 - w1), ("score", ""): (s0, s1)}
            for key, (x, y) in ends[(i, seed)].items():
                per.setdefault(key, {}).setdefault(i, []).append(y - x)
    return ends, {k: np.array([np.mean(v[i]) for i in sorted(v)]) for k, v in per.items()}


def _cells(ir, table):
    ctx = StatContext(ir, {"probe": pd.DataFrame(table)})
    return {c["id"]: c for c in evaluate_cells(ctx, ir.cells())}


def test_cells_read_probes_not_arms_and_the_plan_waits_for_both_probes(tmp_path):
    ir = _ir()
    ids = [c.id for c in ir.cells()]
    assert ids == ["C.1/pick:laion/up:down", "C.2/pick:laion/up:down", "C.3/pick/up", "C.4/pick:laion/up:down"]
    cell = ir.cells()[0]
    assert cell.arm is None and cell.arms == () and cell.parts() == []
    plan = build_plan(ir, tmp_path)
    step = next(s for s in plan.steps if s.id == "statistic/C.1/pick:laion/up:down")
    assert set(step.depends_on) >= {"probe/up", "probe/down"}
    assert step.params["pairing"] == "paired: probes up and down read the same prompts"


def test_paired_difference_is_the_t_test_on_per_prompt_differences():
    rng = np.random.default_rng(1)
    prompts = [f"prompt {i}" for i in range(8)]
    common = rng.normal(0, 3, 8)  # a per-prompt effect both probes share: pairing removes it
    up, per_up = _data(rng, 8, 1.0, common)
    down, per_down = _data(rng, 8, -0.5, common)
    table = _rows("up", "pick", prompts, up) + _rows("down", "laion", prompts, down)
    c = _cells(_ir(), table)["C.1/pick:laion/up:down"]
    d = per_up[("ita", "")] - per_down[("ita", "")]
    assert c["estimate"] == pytest.approx(d.mean())
    assert c["detail"]["test"] == "paired t" and c["detail"]["paired"] is True
    assert c["p"] == pytest.approx(sps.ttest_1samp(d, 0.0, alternative="greater").pvalue, rel=1e-9)
    lo, hi = sps.t.interval(0.90, len(d) - 1, loc=d.mean(), scale=sps.sem(d))  # the (1 − 2·alpha) interval
    assert (c["ci_low"], c["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    # each reading is the probe's own probe_drift
    r = c["detail"]["readings"]
    assert r[0]["estimate"] == pytest.approx(per_up[("ita", "")].mean())
    assert r[1]["estimate"] == pytest.approx(per_down[("ita", "")].mean())
    assert r[0]["probe"] == "up" and r[1]["probe"] == "down"


def test_two_labels_of_one_probe_are_paired_on_its_own_draw():
    rng = np.random.default_rng(2)
    prompts = [f"prompt {i}" for i in range(6)]
    up, per_up = _data(rng, 6, 0.0)
    down, _ = _data(rng, 6, 0.0)
    c = _cells(_ir(), _rows("up", "pick", prompts, up) + _rows("down", "laion", prompts, down))["C.3/pick/up"]
    d = per_up[("clip_attribute", "woman")] - per_up[("clip_attribute", "man")]
    assert c["estimate"] == pytest.approx(d.mean())
    assert c["p"] == pytest.approx(sps.ttest_1samp(d, 0.0, alternative="greater").pvalue, rel=1e-9)
    assert c["detail"]["pairing"] == "paired: the same 6 prompts of probe up"


def test_disjoint_prompts_are_resampled_independently():
    rng = np.random.default_rng(3)
    up, per_up = _data(rng, 7, 1.0)
    down, per_down = _data(rng, 9, 0.0)
    table = _rows("up", "pick", [f"a {i}" for i in range(7)], up) + \
        _rows("down", "laion", [f"b {i}" for i in range(9)], down)
    ir = _ir("a.txt", "b.txt")
    c = _cells(ir, table)["C.1/pick:laion/up:down"]
    assert c["detail"]["paired"] is False and c["detail"]["test"] == "bootstrap"
    assert c["estimate"] == pytest.approx(per_up[("ita", "")].mean() - per_down[("ita", "")].mean())
    # replicates: each probe's own draw (seed, "probe:NAME") over its sorted clusters, mean of prompt means
    ctx = StatContext(ir, {"probe": pd.DataFrame(table)})
    est = ctx.evaluate(ir.cells()[0].statistic, None, "pick:laion")
    wa = count_matrix(arm_rng(3, "probe:up"), 400, 7)
    wb = count_matrix(arm_rng(3, "probe:down"), 400, 9)
    boot = wa @ per_up[("ita", "")] / wa.sum(1) - wb @ per_down[("ita", "")] / wb.sum(1)
    np.testing.assert_allclose(est.boot, boot, rtol=1e-12)
    # the percentile-inversion p of METHODS (one-sided, θ ≤ 0), with the small-sample expansion of G = 8
    assert c["p"] == pytest.approx(est.p_greater(0.0))
    assert 0 < c["p"] < 0.5


def test_partly_shared_prompts_share_one_draw_over_their_union():
    rng = np.random.default_rng(4)
    up, per_up = _data(rng, 6, 1.0)
    down, per_down = _data(rng, 6, 0.0)
    pu = [f"q {i}" for i in range(6)]
    pd_ = [f"q {i}" for i in range(3, 9)]  # q 3..5 in both
    table = _rows("up", "pick", pu, up) + _rows("down", "laion", pd_, down)
    ir = _ir("a.txt", "b.txt")
    ctx = StatContext(ir, {"probe": pd.DataFrame(table)})
    est = ctx.evaluate(ir.cells()[0].statistic, None, "pick:laion")
    assert est.detail["paired"] is True and est.detail["shared_clusters"] == 3 and est.detail["test"] == "bootstrap"
    keys = sorted(set(pu) | set(pd_))
    W = count_matrix(arm_rng(3, "pairing", "probe:down", "probe:up"), 400, len(keys))
    cols_u = [keys.index(p) for p in pu]
    cols_d = [keys.index(p) for p in pd_]
    mu = W[:, cols_u] @ per_up[("ita", "")] / W[:, cols_u].sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        md = W[:, cols_d] @ per_down[("ita", "")] / W[:, cols_d].sum(1)
    np.testing.assert_allclose(est.boot, mu - md, rtol=1e-12)


def test_ratio_and_its_undefined_denominator():
    rng = np.random.default_rng(5)
    prompts = [f"prompt {i}" for i in range(10)]
    up, per_up = _data(rng, 10, 6.0)
    down, per_down = _data(rng, 10, 3.0)
    cells = _cells(_ir(), _rows("up", "pick", prompts, up) + _rows("down", "laion", prompts, down))
    c = cells["C.2/pick:laion/up:down"]
    assert c["estimate"] == pytest.approx(per_up[("ita", "")].mean() / per_down[("ita", "")].mean())
    assert c["detail"]["test"] == "bootstrap" and c["undefined"] is None
    assert c["ci_low"] < c["estimate"] < c["ci_high"]
    # replicates: one draw over the shared prompts (sorted), each reading's mean of prompt means, their ratio
    ir = _ir()
    ctx = StatContext(ir, {"probe": pd.DataFrame(_rows("up", "pick", prompts, up) + _rows("down", "laion", prompts,
                                                                                           down))})
    est = ctx.evaluate(ir.cells()[1].statistic, None, "pick:laion")
    W = count_matrix(arm_rng(3, "pairing", "probe:down", "probe:up"), 400, 10)
    order = np.argsort(prompts)  # keys are prompt texts in sorted order
    ra = W @ per_up[("ita", "")][order] / W.sum(1)
    rb = W @ per_down[("ita", "")][order] / W.sum(1)
    np.testing.assert_allclose(est.boot, ra / rb, rtol=1e-12)
    # score changes: both probes moved their scores by about 2 → ratio near 1, inside (−5, 5)
    s = cells["C.4/pick:laion/up:down"]
    assert s["estimate"] == pytest.approx(per_up[("score", "")].mean() / per_down[("score", "")].mean())
    assert s["outcome"] == "supported"
    # a denominator whose CI includes 0: the ratio is undefined, the cell inconclusive
    flat, _ = _data(rng, 10, 0.0)
    c0 = _cells(_ir(), _rows("up", "pick", prompts, up) + _rows("down", "laion", prompts, flat))[
        "C.2/pick:laion/up:down"]
    assert "includes 0" in c0["undefined"] and c0["outcome"] == "inconclusive"


def test_simulate_truth_of_a_probe_difference_is_the_difference_of_planted_drifts():
    ir = _ir()
    truth = {"pick": {"probe_drift": 1.0, "noise": 1.0}, "laion": {"probe_drift": 0.25, "noise": 1.0}}
    rows = {r["cell"]: r for r in run_simulation(ir, 20, truth, {}, n_boot=200, seed=7)}
    diff, ratio = rows["C.1/pick:laion/up:down"], rows["C.2/pick:laion/up:down"]
    assert diff["truth"] == pytest.approx(0.75) and ratio["truth"] == pytest.approx(4.0)
    assert diff["mean_estimate"] == pytest.approx(0.75, abs=0.1)
    assert diff["hypothesis_true"] is True and diff["power"] > 0.8
    assert diff["coverage"] >= 0.8


def test_simulate_plants_two_probes_of_one_scorer_apart_by_probe_name():
    """A maximize and a minimize probe of one scorer: the probe's own truth entry overrides the scorer's."""
    c = api.check("t.audit", source=RUN, tables=False)
    assert c.ok, [d.message for d in c.diagnostics]
    truth = {"pick": {"probe_drift": 1.0, "noise": 0.2}, "down": {"probe_drift": -0.5}}
    rows = {r["cell"]: r for r in run_simulation(c.ir, 20, truth, {}, n_boot=200, seed=3)}
    cell = rows["D/pick/up:down"]
    assert cell["truth"] == pytest.approx(1.5)  # 1.0 − (−0.5); with the scorer's entry alone it would be 0
    assert cell["mean_estimate"] == pytest.approx(1.5, abs=0.15)
    assert cell["hypothesis_true"] is True and cell["power"] > 0.8
    from scoreaudit.stats.probes import planted_probe_table

    t = planted_probe_table(c.ir, truth, seed=1)
    last = t[t.iteration == 2].set_index(["probe", "prompt", "seed", "measure"])["value"]
    first = t[t.iteration == 0].set_index(["probe", "prompt", "seed", "measure"])["value"]
    drift = (last - first).groupby(level="probe").mean()
    assert drift["up"] == pytest.approx(1.0, abs=0.1) and drift["down"] == pytest.approx(-0.5, abs=0.1)


RUN = '''audit "Two probes" { seed: 1  bootstrap: 200 }
scorer pick = pickscore(prompt: "a portrait photo")
probe up = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 2, seeds: 0..1, size: 32,
                measures: [skin_exposure])
probe down = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 2, seeds: 0..1, size: 32,
                  direction: minimize, measures: [skin_exposure])
hypothesis D "Maximising PickScore moves its score more than minimising it" {
  difference(probe_drift(up, measure: score), probe_drift(down, measure: score)) > 0
}
'''


def test_two_probes_compared_end_to_end_with_report_and_verify(tmp_path):
    pytest.importorskip("diffusers")
    import json

    from probe_testutil import project

    spec = project(tmp_path, RUN)
    out = tmp_path / "out"
    api.run(spec, out=out, device="cpu", cache=tmp_path / "c.sqlite", progress=False, render_report=True)
    res = json.loads((out / "results.json").read_text())
    cell = next(c for c in res["cells"] if c["id"] == "D/pick/up:down")
    t = pd.read_parquet(out / "tables" / "probe.parquet")
    s = t[t["measure"] == "score"].pivot_table(index=["probe", "cluster", "seed"], columns="iteration",
                                               values="value")
    drift = (s[2] - s[0]).groupby(level=["probe", "cluster"]).mean()
    d = (drift["up"] - drift["down"]).to_numpy()
    assert cell["estimate"] == pytest.approx(d.mean())
    assert cell["p"] == pytest.approx(sps.ttest_1samp(d, 0.0, alternative="greater").pvalue, rel=1e-6)
    assert cell["detail"]["pairing"] == "paired: probes up and down share 2 prompts"
    assert cell["sentence"].startswith("Under probes up and down, pick's probe drift of score under up minus")
    html = "\n".join(p.read_text(encoding="utf-8") for p in out.glob("**/*.html"))
    assert "Under probes up and down" in html and "under up" in html  # the comparison's sentence and readings
    assert api.verify(out) == []  # every reported number recomputes from the bundle
