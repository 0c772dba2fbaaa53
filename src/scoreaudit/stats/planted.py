"""In-memory bundle tables from planted scorers (the formula below; spec/methods.md), for `simulate`, tests and the benchmark.

No images: the planted formula needs only ids, doses and measures.

    s(i, o, d) = b_i − F·u² + A·u + K·(m(i, o, d) − m(i, d0)) + E·[factor = level] + ε

with u = (d − d0)/t_max, b_i ~ N(0, 1), ε ~ N(0, S²) (the identity dose and
the `original` row share one ε, so the identity score equals the original's),
placebo operators responding with F·P and A·P. Two optional parts for the cross-image
kinds (spec/methods-choices.md): a manifest rating column `rated_by` (an arm-level
h_i = sqrt(icc)·a_c + sqrt(1 − icc)·e_i, a_c, e_i ~ N(0, 1), so Var h = 1 and
images of one cluster share a part) entering the scores as R·h_i (`rating` R);
and a score resolution `step` on pairs arms (scores rounded to multiples of step,
as 1–5 star ratings are, so pairs tie). Labels need no new part: a stratum
column with levels "0"/"1" and E·[column = "1"] (`factor`, `level`, `effect`)
is a judge label the scores track. Noise is drawn from one numpy
generator per (seed, scorer) rather than per-id hashes: replications only need
independence, not the runtime's exact draws.

Measure model (documented in spec/methods-choices.md): for every declared
measure, m(i, d0) ~ N(mean, sd) per image and, under a non-placebo operator,
m(i, o, d) = m(i, d0) + slope·(d − d0) + N(0, noise²); under a placebo the
measure does not move (slope 0, noise 0). Covariates: value = cov_scale·u²
(e.g. gamut clipping grows with the dose). Builtin leakage: 0 for pixel-local
operators, `geometric_leakage` for the others.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from scoreaudit.compiler.doses import is_dose
from scoreaudit.compiler.ir import ORIGINAL, AuditIR
from scoreaudit.stats.bootstrap import stable_hash

TRUTH_KEYS = ("fidelity", "asymmetry", "noise", "placebo", "slope_by", "slope", "factor", "level", "effect", "gap",
              "rated_by", "rating", "step")


@dataclass(frozen=True)
class ArmShape:
    """How many clusters, images per cluster, and stratum levels an arm has."""

    n_clusters: int
    per_cluster: int = 1
    strata: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    crossed: tuple[str, ...] = ()  # strata crossed with clusters: every cluster holds every level


@dataclass(frozen=True)
class MeasureModel:
    mean: float = 30.0
    sd: float = 10.0
    slope: float = 1.0  # measure units per dose unit
    noise: float = 0.5
    cov_scale: float = 0.05
    geometric_leakage: float = 0.05
    rating_icc: float = 0.5  # share of a planted rating column's variance (1) that its cluster shares


def truth_for(truth: Mapping[str, Any], scorer: str, arm: str | None = None, stratum: str | None = None) -> dict:
    """Planted parameters of a scorer, with optional per-arm ("arms") and per-stratum ("strata") overrides."""
    t = dict(truth.get(scorer, truth.get("*", {})))
    base = {"fidelity": 0.0, "asymmetry": 0.0, "noise": 1.0, "placebo": 1.0, "slope_by": None, "slope": 0.0,
            "factor": None, "level": None, "effect": 0.0, "gap": 0.0, "rated_by": None, "rating": 0.0, "step": 0.0}
    base.update({k: v for k, v in t.items() if k in TRUTH_KEYS})
    if arm is not None:
        base.update((t.get("arms") or {}).get(arm, {}))
    if stratum is not None:
        base.update((t.get("strata") or {}).get(stratum, {}))
    return base


def planted_tables(ir: AuditIR, shapes: Mapping[str, ArmShape], truth: Mapping[str, Any], seed: int = 0,
                   model: MeasureModel = MeasureModel(), sort: bool = True) -> dict[str, pd.DataFrame]:
    """images, scores, measures (and empty regions/exclusions) tables for the images arms in `shapes`."""
    images, scores, measures = [], [], []
    for arm_name, shape in shapes.items():
        arm = ir.arms[arm_name]
        if arm.source == "pairs":
            img, sc = _pairs_arm(ir, arm_name, shape.n_clusters, truth, seed)
            images.append(img)
            scores.extend(sc)
            continue
        rng = np.random.default_rng(np.random.SeedSequence([seed, stable_hash(arm_name)]))
        n = shape.n_clusters * shape.per_cluster
        ids = np.array([f"{arm_name[:3]}{k:06d}" for k in range(n)], dtype=object)
        clusters = np.array([f"c{k // shape.per_cluster:05d}" for k in range(n)], dtype=object)
        img = {"arm": arm_name, "image_id": ids, "row": np.arange(1, n + 1), "cluster": clusters,
               "content_hash": [f"h{stable_hash(arm_name + i):08x}" for i in ids], "width": 64, "height": 64,
               "side": None, "pair_id": None}
        cluster_codes = np.arange(n) // shape.per_cluster
        strata_of = {}
        for col, levels in shape.strata.items():
            if col in shape.crossed:  # image j of every cluster gets level j mod L (counterfactual sets)
                strata_of[col] = np.array(levels, dtype=object)[(np.arange(n) % shape.per_cluster) % len(levels)]
            else:  # nested: one level per cluster
                per_cluster = rng.integers(0, len(levels), shape.n_clusters)
                strata_of[col] = np.array(levels, dtype=object)[per_cluster[cluster_codes]]
            img[col] = strata_of[col]
        ratings = _rating_columns(ir, truth, arm_name, shape, model, seed)
        img.update(ratings)
        images.append(pd.DataFrame(img))
        # measures: base values per image and per (operator, dose)
        m0 = {m: rng.normal(model.mean, model.sd, n) for m, mi in ir.measures.items() if mi.role == "measure"}
        mvals: dict[tuple[str, str], np.ndarray] = {}
        for oname, op in sorted(ir.operators.items()):
            doses = np.array(op.doses)
            tmax = np.max(np.abs(doses - op.identity)) or 1.0
            u = (doses - op.identity) / tmax
            for m, base in m0.items():
                if op.placebo_of:
                    M = np.repeat(base[:, None], len(doses), 1)
                else:
                    M = base[:, None] + model.slope * (doses - op.identity)[None, :] + rng.normal(0, model.noise, (n, len(doses)))
                    M[:, is_dose(doses, op.identity)] = base[:, None]
                mvals[(oname, m)] = M
                measures.append(_long(arm_name, ids, oname, doses, m, "measure", M))
            for c, mi in sorted(ir.measures.items()):
                if mi.role == "covariate":
                    measures.append(_long(arm_name, ids, oname, doses, c, "covariate",
                                          np.repeat((model.cov_scale * u**2)[None, :], n, 0)))
            leak = 0.0 if op.pixel_local else model.geometric_leakage
            measures.append(_long(arm_name, ids, oname, doses, "leakage", "builtin",
                                  np.repeat(np.where(is_dose(doses, op.identity), 0.0, leak)[None, :], n, 0)))
        for m, base in m0.items():
            measures.append(_long(arm_name, ids, ORIGINAL, np.array([0.0]), m, "measure", base[:, None]))
        # scores
        for sname in sorted(ir.scorers):
            srng = np.random.default_rng(np.random.SeedSequence([seed, stable_hash(arm_name), stable_hash(sname)]))
            b = srng.normal(0, 1, n)
            params = [truth_for(truth, sname, arm_name, None)] * n
            if any(col for col in strata_of):
                params = [truth_for(truth, sname, arm_name, _stratum_label(strata_of, k)) for k in range(n)]
            P = {k: np.array([p[k] for p in params], dtype=float) for k in ("fidelity", "asymmetry", "noise",
                                                                            "placebo", "slope", "effect")}
            eff = np.zeros(n)
            p0 = params[0]
            if p0.get("factor") and p0["factor"] in img:
                eff = P["effect"] * (np.asarray(img[p0["factor"]]) == p0.get("level"))
            eps0 = srng.normal(0, 1, n) * P["noise"]
            s0 = b + eff + eps0
            if p0.get("rated_by") in ratings:  # drawn after every other draw: other kinds' data unchanged
                s0 = s0 + float(p0["rating"]) * ratings[p0["rated_by"]]
            scores.append(_long(arm_name, ids, ORIGINAL, np.array([0.0]), sname, None, s0[:, None], score=True))
            for oname, op in sorted(ir.operators.items()):
                doses = np.array(op.doses)
                tmax = np.max(np.abs(doses - op.identity)) or 1.0
                u = (doses - op.identity) / tmax
                mult = P["placebo"] if op.placebo_of else np.ones(n)
                S = (s0[:, None] - (P["fidelity"] * mult)[:, None] * u**2 + (P["asymmetry"] * mult)[:, None] * u
                     + srng.normal(0, 1, (n, len(doses))) * P["noise"][:, None])
                slope_by = p0.get("slope_by")
                if slope_by and (oname, slope_by) in mvals:
                    M = mvals[(oname, slope_by)]
                    j0 = np.flatnonzero(is_dose(doses, op.identity))
                    S = S + P["slope"][:, None] * (M - M[:, j0])
                S[:, is_dose(doses, op.identity)] = s0[:, None]
                scores.append(_long(arm_name, ids, oname, doses, sname, None, S, score=True))
    sc = _concat(scores, ["arm", "image_id", "operator", "dose", "scorer"] if sort else [])
    me = _concat(measures, ["arm", "image_id", "operator", "dose", "name"] if sort else [])
    return {"images": pd.concat(images, ignore_index=True), "scores": sc, "measures": me,
            "regions": pd.DataFrame(columns=["arm", "image_id", "region", "coverage"]),
            "exclusions": pd.DataFrame(columns=["arm", "image_id", "row", "stage", "reason"])}


def _pairs_arm(ir: AuditIR, arm_name: str, n: int, truth: Mapping[str, Any], seed: int):
    """A pairs arm of n pairs (one cluster each): s(preferred) = b + G + ε, s(other) = b' + ε.

    b, b' ~ N(0, 1) per image and ε ~ N(0, noise²), so the pairwise accuracy is
    Φ(G / sqrt(2(1 + noise²))) and the mean gap G (raw) or G / sqrt(1 + noise² + G²/4)
    (pooled SD of both sides); stats/truth.py.
    """
    ids = np.array([f"{arm_name[:3]}{k:06d}:{side}" for k in range(n) for side in ("preferred", "other")],
                   dtype=object)
    pair = np.repeat(np.array([f"p{k:06d}" for k in range(n)], dtype=object), 2)
    side = np.tile(np.array(["preferred", "other"], dtype=object), n)
    img = pd.DataFrame({"arm": arm_name, "image_id": ids, "row": np.repeat(np.arange(1, n + 1), 2), "cluster": pair,
                        "content_hash": [f"h{stable_hash(arm_name + i):08x}" for i in ids], "width": 64,
                        "height": 64, "side": side, "pair_id": pair})
    scores = []
    for sname in sorted(ir.scorers):
        srng = np.random.default_rng(np.random.SeedSequence([seed, stable_hash(arm_name), stable_hash(sname)]))
        t = truth_for(truth, sname, arm_name, None)
        s = srng.normal(0, 1, 2 * n) + srng.normal(0, 1, 2 * n) * t["noise"] + t["gap"] * (side == "preferred")
        if t["step"]:  # a discrete score: ties between the two sides (stats/truth.py counts them half)
            s = t["step"] * np.round(s / t["step"])
        scores.append(_long(arm_name, ids, ORIGINAL, np.array([0.0]), sname, None, s[:, None], score=True))
    return img, scores


def _rating_columns(ir: AuditIR, truth: Mapping[str, Any], arm_name: str, shape: ArmShape,
                    model: MeasureModel, seed: int) -> dict[str, np.ndarray]:
    """Each rating column some scorer's `rated_by` names: h = sqrt(icc)·a_cluster + sqrt(1 − icc)·e_image.

    One draw per arm and column (from its own generator), shared by every scorer: a manifest column."""
    cols = sorted({c for s in ir.scorers if (c := truth_for(truth, s, arm_name).get("rated_by"))})
    out = {}
    n = shape.n_clusters * shape.per_cluster
    for col in cols:
        rng = np.random.default_rng(np.random.SeedSequence([seed, stable_hash(arm_name), stable_hash("rating:" + col)]))
        a = rng.normal(0, 1, shape.n_clusters)[np.arange(n) // shape.per_cluster]
        out[col] = math.sqrt(model.rating_icc) * a + math.sqrt(1 - model.rating_icc) * rng.normal(0, 1, n)
    return out


def _stratum_label(strata_of: Mapping[str, np.ndarray], k: int) -> str:
    return ",".join(f"{col}={vals[k]}" for col, vals in strata_of.items())


def _long(arm, ids, operator, doses, name, role, M, score: bool = False) -> dict[str, np.ndarray]:
    """Columns of a long table for one (operator, name) matrix (concatenated once per table)."""
    n, D = M.shape
    cols = {"arm": np.full(n * D, arm, dtype=object), "image_id": np.repeat(ids, D),
            "operator": np.full(n * D, operator, dtype=object), "dose": np.tile(doses.astype(float), n)}
    if score:
        cols["scorer"] = np.full(n * D, name, dtype=object)
        cols["score"] = M.ravel()
    else:
        cols["name"] = np.full(n * D, name, dtype=object)
        cols["role"] = np.full(n * D, role, dtype=object)
        cols["value"] = M.ravel()
    return cols


def _concat(parts: list[dict[str, np.ndarray]], keys: list[str]) -> pd.DataFrame:
    if not parts:  # e.g. no measures when only pairs arms are planted
        return pd.DataFrame(columns=["arm", "image_id", "operator", "dose", "name", "role", "value"])
    df = pd.DataFrame({k: np.concatenate([p[k] for p in parts]) for k in parts[0]})
    if not keys:
        return df
    return df.sort_values(keys, kind="stable").reset_index(drop=True)
