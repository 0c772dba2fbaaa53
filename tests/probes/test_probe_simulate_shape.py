"""Simulate plants each probe's own prompts × seeds (not a fixed 40 × 2), and the scorer's `score` too."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scoreaudit import api
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import evaluate_cells
from scoreaudit.stats.probes import DEFAULT_PROMPTS, planted_probe_table, probe_shapes
from scoreaudit.stats.simulate import run_simulation

SPEC = '''audit "Probe shape" {{ seed: 3  bootstrap: 200  test: ttest }}
scorer pick = pickscore(prompt: "a photo")
probe p = reno(pick, pipeline: "sd", prompts: {prompts}, iterations: 2, seeds: 0..4,
               measures: [ita, clip_attribute(labels: ["man", "woman"])])
hypothesis P1 "t" {{
  abs(probe_drift(p, measure: ita)) < 2.0
  probe_drift(p, measure: score) > 0
  probe_shift(p, label: "woman") > 0
}}
'''


def _spec(tmp_path, prompts='"prompts.txt"'):
    (tmp_path / "prompts.txt").write_text("a nurse\na doctor\n\na teacher\n")
    (tmp_path / "jobs.csv").write_text("job\nnurse\npilot\n")
    spec = tmp_path / "probe.audit"
    spec.write_text(SPEC.format(prompts=prompts))
    ir, _ = api.compile(spec)
    return spec, ir


def test_shapes_follow_the_declared_prompts_and_seeds(tmp_path):
    spec, ir = _spec(tmp_path)
    shape = probe_shapes(ir, spec)["p"]
    assert shape.prompts == ("a nurse", "a doctor", "a teacher") and shape.seeds == (0, 1, 2, 3, 4)
    assert shape.declared
    # a template expands as the run expands it: every combination of the factor levels
    (tmp_path / "t").mkdir()
    spec2, ir2 = _spec(tmp_path / "t",
                       prompts='template("a {g} {job}", g: ["man", "woman"], job: column(job, "jobs.csv"))')
    assert probe_shapes(ir2, spec2)["p"].prompts == ("a man nurse", "a man pilot", "a woman nurse",
                                                     "a woman pilot")
    # without a readable prompts file: placeholders, said so, the declared seeds kept
    (tmp_path / "prompts.txt").unlink()
    missing = probe_shapes(ir, spec)["p"]
    assert len(missing.prompts) == DEFAULT_PROMPTS and not missing.declared and missing.seeds == shape.seeds
    assert len(probe_shapes(ir, None)["p"].prompts) == DEFAULT_PROMPTS


def test_planted_table_has_one_trajectory_per_declared_prompt_and_seed(tmp_path):
    spec, ir = _spec(tmp_path)
    t = planted_probe_table(ir, {"pick": {"probe_drift": 0.5}}, seed=1, shapes=probe_shapes(ir, spec))
    for measure in ("score", "ita", "clip_attribute"):
        sub = t[t["measure"] == measure]
        assert set(zip(sub["prompt"], sub["seed"])) == {(p, s) for p in ("a nurse", "a doctor", "a teacher")
                                                        for s in range(5)}
    assert sorted(t["cluster"].unique()) == ["p0000", "p0001", "p0002"]  # the runtime's clusters: one per prompt
    ctx = StatContext(ir, {"probe": t})
    cells = {c["id"]: c for c in evaluate_cells(ctx, ir.cells())}
    for cid in ("P1.1/pick/p", "P1.2/pick/p", "P1.3/pick/p"):
        assert cells[cid]["detail"]["n_clusters"] == 3 and cells[cid]["detail"]["trajectories"] == 15, cid
    assert not cells["P1.2/pick/p"]["undefined"]  # the score is planted as well


def test_simulate_uses_the_declared_shape(tmp_path):
    spec, ir = _spec(tmp_path)
    truth = {"pick": {"probe_drift": 3.0, "probe_shift": 0.0, "noise": 1.0}}
    rows = {r["cell"]: r for r in run_simulation(ir, 20, truth, {}, n_boot=200, seed=5,
                                                 probe_shapes=probe_shapes(ir, spec))}
    assert rows["P1.2/pick/p"]["truth"] == 3.0
    assert rows["P1.2/pick/p"]["mean_estimate"] == pytest.approx(3.0, abs=0.5)
    # |3| < 2 is false; with 3 prompts the t-test over prompt means has 2 degrees of freedom
    assert rows["P1.1/pick/p"]["hypothesis_true"] is False
    out = tmp_path / "sim"
    text = api.simulate(spec, reps=3, truth=truth, out=out, progress=False, n_boot=100)
    assert "probes p (3 prompts × 5 seeds)" in text
    meta = json.loads((out / "simulation.json").read_text())
    assert meta["probes"] == {"p": {"prompts": 3, "seeds": [0, 1, 2, 3, 4], "declared": True}}
    est = np.array([r["mean_estimate"] for r in meta["cells"] if r["cell"] == "P1.2/pick/p"])
    assert np.isfinite(est).all()
