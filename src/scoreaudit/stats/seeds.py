"""Robustness over generation seeds (METHODS: Robustness) for cells on generated arms.

A generated arm's image ids end in `_sSEED` (runtime/generation.py). Each cell
is evaluated again on the images of each generation seed alone; the cell gets
`seed_robustness`: the per-seed estimates and outcomes, the same-sign rate
(share of seeds whose estimate has the sign of the all-seeds estimate; an
undefined estimate counts as a different sign) and the same-outcome rate
(share of seeds with the all-seeds outcome; a seed's outcome uses its own
unadjusted p, as one repeat of the study would). The seed paper's "100%
same-sign over five seeds" is `same_sign_rate == 1.0` with five seeds.

A template arm's cluster is its counterfactual set of one seed, so one seed's
images are one cluster, on which no cluster-level interval exists: such a
seed is evaluated with each image as its own cluster (a one-seed study's units
are its images). The point estimate is the same either way; only the
interval, p and so the per-seed outcome depend on it.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from scoreaudit import registry
from scoreaudit.compiler.ir import CellIR
from scoreaudit.stats.context import ArmData, StatContext, index_clusters
from scoreaudit.stats.outcomes import cell_p, number_outcome

_SEED_ID = re.compile(r"_s(-?\d+)$")


def generation_seeds(ids) -> np.ndarray:
    """The generation seed of each image id (`p0003_s2` → 2); -1 where the id has none."""
    out = []
    for i in ids:
        m = _SEED_ID.search(str(i))
        out.append(int(m.group(1)) if m else -1)
    return np.asarray(out, dtype=int)


def _sign(x: float | None) -> float:
    return float(np.sign(x)) if x is not None and math.isfinite(x) else float("nan")


def seed_arm(arm: ArmData, seed: int, mask: np.ndarray) -> ArmData:
    """The images of one generation seed; with fewer than two clusters there, each image is a cluster."""
    sub = arm.subset(f"generation_seed={seed}", mask)
    if sub.n_clusters >= 2:
        return sub
    imgs, clusters = index_clusters(sub.images.assign(cluster=sub.images["image_id"].astype(str)))
    return ArmData(arm.name, arm.kind, imgs, clusters, arm.seed, arm.n_boot,
                   label=f"generation_seed={seed},images as clusters")


def seed_robustness(ctx: StatContext, cells: list[CellIR], cells_out: list[dict]) -> None:
    """Add `seed_robustness` to every cell on a generated arm with two or more generation seeds."""
    for cell, c in zip(cells, cells_out):
        arm_ir = ctx.ir.arms.get(cell.arm) if cell.arm else None
        if arm_ir is None or not registry.generated_arm(arm_ir.call.plugin):
            continue
        arm = ctx.arm(cell.arm)
        seeds = generation_seeds(arm.image_ids)
        uniq = sorted({int(s) for s in seeds if s >= 0})
        if len(uniq) < 2:
            continue
        full = _sign(c["estimate"])
        per: list[dict[str, Any]] = []
        for s in uniq:
            sub = seed_arm(arm, s, seeds == s)
            est = ctx.evaluate(cell.statistic, sub, cell.scorer)
            if cell.test.kind == "claim":
                outcome = est.claim_outcome or "inconclusive"
            else:
                outcome = number_outcome(est, cell.test, cell_p(est, cell.test), ctx.alpha)
            value = float(est.estimate) if math.isfinite(est.estimate) else None
            per.append({"seed": s, "estimate": value, "outcome": outcome, "undefined": est.undefined})
        same_sign = [(_sign(p["estimate"]) == full) for p in per] if math.isfinite(full) else None
        c["seed_robustness"] = {
            "seeds": len(per), "per_seed": per,
            "same_sign_rate": float(np.mean(same_sign)) if same_sign is not None else None,
            "same_outcome_rate": float(np.mean([p["outcome"] == c["outcome"] for p in per])),
        }
