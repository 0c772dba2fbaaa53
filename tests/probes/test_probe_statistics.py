"""probe_drift / probe_shift against hand computations on a small table; simulate recovers planted truths."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from scoreaudit import api
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import evaluate_cells
from scoreaudit.stats.simulate import run_simulation

SPEC = '''audit "Probe stats" {{ seed: 3  bootstrap: 400  test: ttest }}
scorer pick = pickscore(prompt: "a photo")
probe p = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 2, seeds: 0..1,
               measures: [ita, clip_attribute(labels: ["man", "woman"])])
hypothesis P1 "t" {{
  abs(probe_drift(p, measure: ita)) < {margin}
  probe_shift(p, label: "woman") > 0
  probe_drift(p, measure: score) > 0
}}
'''


def _ir(margin: float = 2.0):
    c = api.check("t.audit", source=SPEC.format(margin=margin), tables=False)
    assert c.ok, [d.message for d in c.diagnostics]
    return c.ir


def _table(first_last: dict) -> pd.DataFrame:
    """{(prompt, seed): {(measure, label): (first, last)}} → probe rows (with a middle iteration)."""
    rows = []
    for (prompt, seed), vals in first_last.items():
        for (measure, label), (a, b) in vals.items():
            for it, v in ((0, a), (1, (a + b) / 2), (2, b)):
                rows.append({"probe": "p", "scorer": "pick", "prompt": prompt, "cluster": f"c{prompt}",
                             "seed": seed, "iteration": it, "measure": measure, "label": label, "value": v})
    return pd.DataFrame(rows)


def test_drift_and_shift_are_the_mean_of_prompt_means_with_a_t_test():
    rng = np.random.default_rng(0)
    data, ita_d, woman_d, score_d = {}, {}, {}, {}
    for prompt in range(6):
        for seed in range(2):
            a, b = rng.normal(30, 5), rng.normal(31, 5)
            w0, w1 = int(rng.random() < 0.4), int(rng.random() < 0.7)
            s0, s1 = rng.normal(0, 1), rng.normal(1, 1)
            data[(prompt, seed)] = {("ita", ""): (a, b), ("clip_attribute", "woman"): (w0, w1),
                                    ("clip_attribute", "man"): (1 - w0, 1 - w1), ("score", ""): (s0, s1)}
            ita_d.setdefault(prompt, []).append(b - a)
            woman_d.setdefault(prompt, []).append(w1 - w0)
            score_d.setdefault(prompt, []).append(s1 - s0)
    ir = _ir()
    ctx = StatContext(ir, {"probe": _table(data)})
    cells = {c["id"]: c for c in evaluate_cells(ctx, ir.cells())}
    for cid, per in (("P1.1/pick/p", ita_d), ("P1.2/pick/p", woman_d), ("P1.3/pick/p", score_d)):
        means = np.array([np.mean(v) for v in per.values()])
        c = cells[cid]
        assert c["estimate"] == pytest.approx(means.mean())
        assert c["detail"]["n_clusters"] == 6 and c["detail"]["trajectories"] == 12
    # the one-sided claims use the t-test over prompt means
    means = np.array([np.mean(v) for v in score_d.values()])
    t = sps.ttest_1samp(means, 0.0, alternative="greater")
    assert cells["P1.3/pick/p"]["p"] == pytest.approx(t.pvalue, rel=1e-6)


def test_no_probe_rows_is_undefined_not_an_error():
    ir = _ir()
    ctx = StatContext(ir, {})
    cells = evaluate_cells(ctx, ir.cells())
    assert all(c["undefined"] and c["outcome"] == "inconclusive" for c in cells)


def test_simulate_recovers_planted_drift_and_shift():
    ir = _ir(margin=2.0)
    truth = {"pick": {"probe_drift": 0.5, "probe_shift": 0.25, "noise": 1.0}}
    rows = {r["cell"]: r for r in run_simulation(ir, 30, truth, {}, n_boot=200, seed=5)}
    drift, shift, score = rows["P1.1/pick/p"], rows["P1.2/pick/p"], rows["P1.3/pick/p"]
    assert drift["truth"] == 0.5 and shift["truth"] == 0.25
    assert drift["mean_estimate"] == pytest.approx(0.5, abs=0.1)
    assert shift["mean_estimate"] == pytest.approx(0.25, abs=0.05)
    assert drift["hypothesis_true"] is True and drift["power"] > 0.8  # |0.5| < 2 with 40 prompts
    assert shift["hypothesis_true"] is True and shift["power"] > 0.8
    assert drift["coverage"] >= 0.8
