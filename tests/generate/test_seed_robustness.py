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

# per seed, (man, woman) scores of two images each, ±D around the group's mean: gaps +2, +0.5, -1 (raw units).
# (Not two equal scores per group: zero variance within the groups makes the gap's SE 0, a degenerate cell.)
D = 0.5
GAPS = (2.0, 0.5, -1.0)
SCORES = {0: ((3.0 + D, 3.0 - D), (1.0 + D, 1.0 - D)), 1: ((2.0 + D, 2.0 - D), (1.5 + D, 1.5 - D)),
          2: ((1.0 + D, 1.0 - D), (2.0 + D, 2.0 - D))}


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
    # All seeds: raw gap 2 − 1.5 = 0.5; the 12 scores have SD sqrt((5.75 + 12 D²) / 11).
    assert out[0]["estimate"] == pytest.approx(0.5 / math.sqrt((5.75 + 12 * D * D) / 11))
    seed_robustness(ctx, cells, out)
    r = out[0]["seed_robustness"]
    assert r["seeds"] == 3
    assert [p["seed"] for p in r["per_seed"]] == [0, 1, 2]
    # each seed alone: four values ±g/2 ± D around the mean, SD = sqrt((g² + 4D²)/3), z gap g / SD
    assert [p["estimate"] for p in r["per_seed"]] == pytest.approx([g / math.sqrt((g * g + 4 * D * D) / 3)
                                                                    for g in GAPS])
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


def test_a_rank_statistic_on_one_seed_alone_is_undefined_not_supported(tmp_path):
    """A template arm's seed alone is one counterfactual set, evaluated with its images as clusters: every
    'cluster' then holds one image, which ranks first whatever it scores. Before, every seed's mean rank was
    1 with a bootstrap that never moved, so each seed was "supported" against the pooled outcome; now those
    clusters are left out (named) and each seed's cell is undefined with the reason."""
    spec = tmp_path / "s.audit"
    spec.write_text(SPEC.replace('group_gap(gender, "man", "woman") > 0', 'mean_rank(gender, "man") < 1.6'))
    ir, _ = api.compile(spec)
    ctx = StatContext(ir, _tables("runtime"))
    cells = ir.cells()
    out = evaluate_cells(ctx, cells)
    assert out[0]["undefined"] is None  # all seeds: three sets of four images
    seed_robustness(ctx, cells, out)
    per = out[0]["seed_robustness"]["per_seed"]
    assert [p["outcome"] for p in per] == ["inconclusive"] * 3
    assert all(p["estimate"] is None and "two or more scored images" in p["undefined"] for p in per)
