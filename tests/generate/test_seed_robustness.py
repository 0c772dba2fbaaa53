"""Robustness over generation seeds: per-seed estimates, same-sign and same-outcome rates, by hand."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from scoreaudit import api
from scoreaudit.compiler.ir import ORIGINAL
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import evaluate_cells
from scoreaudit.stats.seeds import generation_seeds, seed_robustness

SPEC = '''audit "Seeds" { seed: 1  scale: raw  bootstrap: 200 }
scorer p = planted(fidelity: 0.5)
arm gen = generate("pipe", prompts: template("a photo of a {gender}", gender: ["man", "woman"]), seeds: 3,
                   steps: 1, size: 32)
hypothesis H "men score higher" {
  group_gap(gender, "man", "woman") > 0 on gen for each scorer
}
'''

# per seed, (man, woman) scores of two images each: gaps +2, +0.5, -1 (raw units)
SCORES = {0: ((3.0, 3.0), (1.0, 1.0)), 1: ((2.0, 2.0), (1.5, 1.5)), 2: ((1.0, 1.0), (2.0, 2.0))}


def _tables(layout: str = "hand"):
    """layout "hand": clusters shared across seeds; "runtime": a template arm's, one cluster (set) per seed."""
    images, scores = [], []
    for seed, (man, woman) in SCORES.items():
        for g, vals in (("man", man), ("woman", woman)):
            for k, v in enumerate(vals):
                iid = f"p{k:02d}{g}_s{seed}"
                cluster = f"{g}{k}" if layout == "hand" else f"s{seed}"
                images.append({"arm": "gen", "image_id": iid, "cluster": cluster, "gender": g})
                scores.append({"arm": "gen", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": "p",
                               "score": v})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


def test_generation_seed_of_an_id():
    assert list(generation_seeds(["p0003_s2", "p0000_s10", "x", "a_s-1"])) == [2, 10, -1, -1]


@pytest.mark.parametrize("layout", ["hand", "runtime"])
def test_same_sign_and_same_outcome_rates_match_a_hand_computation(tmp_path, layout):
    """Also with the runtime's clusters of a template arm (one per seed): each seed alone is one cluster, so
    its images are its clusters; the per-seed point estimates are the same as with any clusters."""
    spec = tmp_path / "s.audit"
    spec.write_text(SPEC)
    ir, _ = api.compile(spec)
    ctx = StatContext(ir, _tables(layout))
    cells = ir.cells()
    out = evaluate_cells(ctx, cells)
    # group_gap z-scores the scores of the images it is given (SD ddof=1), then man mean − woman mean.
    # All seeds: raw gap 2 − 1.5 = 0.5; the 12 scores have SD sqrt(5.75 / 11).
    assert out[0]["estimate"] == pytest.approx(0.5 / math.sqrt(5.75 / 11))
    seed_robustness(ctx, cells, out)
    r = out[0]["seed_robustness"]
    assert r["seeds"] == 3
    assert [p["seed"] for p in r["per_seed"]] == [0, 1, 2]
    # each seed alone: two values ±h around the mean, SD = h·sqrt(4/3), so the z gap is ±2/sqrt(4/3) = ±sqrt(3)
    assert [p["estimate"] for p in r["per_seed"]] == pytest.approx([math.sqrt(3), math.sqrt(3), -math.sqrt(3)])
    assert r["same_sign_rate"] == pytest.approx(2 / 3)  # seeds 0 and 1 agree with the + of all seeds
    expected = sum(p["outcome"] == out[0]["outcome"] for p in r["per_seed"]) / 3
    assert r["same_outcome_rate"] == pytest.approx(expected)
    assert r["per_seed"][2]["outcome"] != "supported"  # a negative gap never supports "> 0"
    if layout == "runtime":  # four images as four clusters: the interval exists, t(G − 1) with G = 4
        sub = ctx._arms["gen"].subset("generation_seed=0", generation_seeds(ctx.arm("gen").image_ids) == 0)
        assert sub.n_clusters == 1


def test_only_generated_arms_get_seed_robustness(tmp_path):
    spec = tmp_path / "s.audit"
    spec.write_text(SPEC.replace('arm gen = generate("pipe", prompts: template("a photo of a {gender}", gender: '
                                 '["man", "woman"]), seeds: 3,\n                   steps: 1, size: 32)',
                                 'arm gen = images("imgs", manifest: "m.csv", cluster: cluster, factors: [gender])'))
    ir, _ = api.compile(spec)
    ctx = StatContext(ir, _tables())
    out = evaluate_cells(ctx, ir.cells())
    seed_robustness(ctx, ir.cells(), out)
    assert "seed_robustness" not in out[0]
