"""Two bundles compared cell by cell: outcome changes, estimate changes, and a paired interval where they share images.

The paired interval (spec/explorer.md) is for the change in a cell's estimate over the clusters both
bundles hold with the same pixels: each bundle's `tables/contrasts.parquet` keeps a cell's
per-cluster contrasts (the values whose mean is the estimate), so the change is the mean over shared
clusters of (contrast in B - contrast in A), and its interval is a percentile cluster bootstrap of
that mean (clusters drawn with replacement, the same draw for both bundles: that is what pairs them).
A statistic whose estimate is not a mean of per-cluster contrasts (selection drift, transfers,
strata, ratios, rank and pairs statistics) has no such rows, and gets the change without interval,
with the reason said.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

N_BOOT = 2000
SEED = 20261204  # fixed: the same two bundles always give the same interval
NOISE = 1e-12  # relative: two runs of the same arithmetic in another order differ by about 1e-16


@dataclass(frozen=True)
class CellChange:
    id: str
    outcome_a: str | None
    outcome_b: str | None
    estimate_a: float | None
    estimate_b: float | None
    change: float | None            # estimate_b - estimate_a
    paired: float | None = None     # mean paired contrast change over shared clusters
    ci_low: float | None = None
    ci_high: float | None = None
    ci_level: float | None = None
    n_shared: int = 0               # clusters in both, with identical images
    n_clusters_a: int = 0
    n_clusters_b: int = 0
    why_no_interval: str | None = None

    @property
    def changed(self) -> bool:
        return self.outcome_a != self.outcome_b

    def as_json(self) -> dict:
        return {"id": self.id, "outcome_a": self.outcome_a, "outcome_b": self.outcome_b, "changed": self.changed,
                "estimate_a": self.estimate_a, "estimate_b": self.estimate_b, "change": self.change,
                "paired": None if self.paired is None else {
                    "change": self.paired, "ci_low": self.ci_low, "ci_high": self.ci_high,
                    "ci_level": self.ci_level, "n_shared_clusters": self.n_shared},
                "n_clusters_a": self.n_clusters_a, "n_clusters_b": self.n_clusters_b,
                "why_no_interval": self.why_no_interval}


@dataclass(frozen=True)
class ArmOverlap:
    arm: str
    same: int          # image ids in both with the same content hash
    different: int     # image ids in both whose pixels differ
    only_a: int
    only_b: int


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    cells: list[CellChange] = field(default_factory=list)
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    images: list[ArmOverlap] = field(default_factory=list)

    @property
    def changed(self) -> list[CellChange]:
        return [c for c in self.cells if c.changed]

    def as_json(self) -> dict:
        return {"a": self.a, "b": self.b,
                "summary": {"cells_in_both": len(self.cells), "changed_outcome": len(self.changed),
                            "only_a": len(self.only_a), "only_b": len(self.only_b)},
                "changed": [c.id for c in self.changed], "only_a": self.only_a, "only_b": self.only_b,
                "images": [vars(o) for o in self.images], "cells": [c.as_json() for c in self.cells],
                "paired_interval": {"statistic": "mean over shared clusters of (contrast B - contrast A)",
                                    "resampling": f"percentile cluster bootstrap, {N_BOOT} draws, seed {SEED}"}}


def _num(x: Any) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _snap(d: float, *scale: float | None) -> float:
    """A difference below float noise of the same computation (NOISE relative) is 0: the runs agree there."""
    return 0.0 if abs(d) <= NOISE * max([1.0] + [abs(x) for x in scale if x is not None]) else d


def _images(bundle) -> pd.DataFrame:
    t = bundle.table("images")
    cols = ["arm", "image_id", "cluster", "content_hash"]
    return t[cols] if not t.empty and all(c in t for c in cols) else pd.DataFrame(columns=cols)


def image_overlap(a, b) -> list[ArmOverlap]:
    """Per arm: image ids both bundles hold with the same pixels (content hash), with other pixels, or alone."""
    ia, ib = _images(a), _images(b)
    out = []
    for arm in sorted(set(ia["arm"]) | set(ib["arm"])):
        ha = dict(zip(ia.loc[ia["arm"] == arm, "image_id"], ia.loc[ia["arm"] == arm, "content_hash"]))
        hb = dict(zip(ib.loc[ib["arm"] == arm, "image_id"], ib.loc[ib["arm"] == arm, "content_hash"]))
        both = set(ha) & set(hb)
        same = sum(1 for i in both if ha[i] is not None and ha[i] == hb[i])
        out.append(ArmOverlap(str(arm), same, len(both) - same, len(set(ha) - both), len(set(hb) - both)))
    return out


def _cluster_keys(bundle, arms: list[str]) -> dict[str, frozenset]:
    """cluster label -> the (arm, image id, content hash) of its images in the cell's arms."""
    im = _images(bundle)
    im = im[im["arm"].isin(arms)]
    out: dict[str, set] = {}
    for arm, iid, cl, h in im.itertuples(index=False):
        out.setdefault(str(cl), set()).add((str(arm), str(iid), None if h is None else str(h)))
    return {k: frozenset(v) for k, v in out.items()}


def _contrasts(bundle, cell_id: str) -> pd.Series:
    t = bundle.table("contrasts")
    if t.empty or not {"cell", "cluster", "value"} <= set(t.columns):
        return pd.Series(dtype=float)
    rows = t[t["cell"] == cell_id]
    return pd.Series(rows["value"].to_numpy(float), index=rows["cluster"].astype(str).to_numpy())


def paired_interval(da: np.ndarray, db: np.ndarray, level: float, n_boot: int = N_BOOT,
                    seed: int = SEED) -> tuple[float, float, float]:
    """(mean of db - da, percentile interval): clusters resampled with replacement, one draw for both."""
    d = np.asarray(db, float) - np.asarray(da, float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(d), size=(n_boot, len(d)))
    boot = d[idx].mean(axis=1)
    tail = (1.0 - level) / 2.0
    return float(d.mean()), float(np.quantile(boot, tail)), float(np.quantile(boot, 1.0 - tail))


def compare_cell(a, b, ca: dict, cb: dict) -> CellChange:
    cid = str(ca.get("id"))
    ea, eb = _num(ca.get("estimate")), _num(cb.get("estimate"))
    change = None if ea is None or eb is None else _snap(eb - ea, ea, eb)
    base = dict(id=cid, outcome_a=ca.get("outcome"), outcome_b=cb.get("outcome"), estimate_a=ea, estimate_b=eb,
                change=change)
    sa, sb = _contrasts(a, cid), _contrasts(b, cid)
    if sa.empty or sb.empty:
        return CellChange(**base, n_clusters_a=len(sa), n_clusters_b=len(sb),
                          why_no_interval=f"{ca.get('statistic')} keeps no per-cluster contrasts in the bundle, "
                                          "so no paired interval is computed")
    arms = [str(x) for x in (ca.get("arms") or [ca.get("arm")]) if x]
    ka, kb = _cluster_keys(a, arms), _cluster_keys(b, arms)
    shared = [c for c in sa.index if c in sb.index and c in ka and ka[c] == kb.get(c)]
    level = _num(ca.get("ci_level")) or 0.95
    if len(shared) < 2:
        return CellChange(**base, n_shared=len(shared), n_clusters_a=len(sa), n_clusters_b=len(sb), ci_level=level,
                          why_no_interval=f"{len(shared)} cluster(s) with the same images in both bundles: "
                                          "too few for a paired interval")
    va, vb = sa[shared].to_numpy(float), sb[shared].to_numpy(float)
    vb = np.where(np.abs(vb - va) <= NOISE * np.maximum(1.0, np.maximum(np.abs(va), np.abs(vb))), va, vb)
    mean, lo, hi = paired_interval(va, vb, level)
    return CellChange(**base, paired=mean, ci_low=lo, ci_high=hi, ci_level=level, n_shared=len(shared),
                      n_clusters_a=len(sa), n_clusters_b=len(sb))


def compare(a, b) -> Comparison:
    """Every cell of `a` and `b` matched by id (order: `a`'s, then cells only `b` has)."""
    by_b = {c.get("id"): c for c in b.cells}
    ids_a = [c.get("id") for c in a.cells]
    cells = [compare_cell(a, b, c, by_b[c.get("id")]) for c in a.cells if c.get("id") in by_b]
    return Comparison(a=str(a.path), b=str(b.path), cells=cells,
                      only_a=[str(i) for i in ids_a if i not in by_b],
                      only_b=[str(i) for i in by_b if i not in set(ids_a)], images=image_overlap(a, b))


def moved_estimate(c: CellChange) -> bool:
    """Whether the estimate changed beyond float noise (or became defined / undefined)."""
    if (c.estimate_a is None) != (c.estimate_b is None):
        return True
    return c.change is not None and c.change != 0.0


def triggers_fail_on(cmp: Comparison) -> list[str]:
    """`--fail-on changed`: cells whose outcome changed, and cells only one bundle has."""
    return [c.id for c in cmp.changed] + cmp.only_a + cmp.only_b


def text_lines(cmp: Comparison) -> list[str]:
    """What `scoreaudit diff` prints for people."""
    from scoreaudit.numfmt import ci, num, plain, signed

    lines = [f"A: {cmp.a}", f"B: {cmp.b}"]
    for o in cmp.images:
        lines.append(f"images of arm {o.arm}: {o.same} in both with the same pixels, {o.different} with other "
                     f"pixels, {o.only_a} only in A, {o.only_b} only in B")
    lines.append(f"{len(cmp.cells)} cells in both: {len(cmp.changed)} changed outcome; "
                 f"{len(cmp.only_a)} only in A, {len(cmp.only_b)} only in B")

    def one(c: CellChange) -> str:
        s = f"  {c.id}: {c.outcome_a} -> {c.outcome_b}; estimate {num(c.estimate_a)} -> {num(c.estimate_b)} " \
            f"(change {signed(c.change)}"
        if c.paired is not None:
            s += f"; paired {plain(100 * (c.ci_level or 0))}% interval {ci(c.ci_low, c.ci_high)} over " \
                 f"{c.n_shared} shared clusters"
        return s + ")"
    if cmp.changed:
        lines.append("changed outcome:")
        lines += [one(c) for c in cmp.changed]
    moved = [c for c in cmp.cells if not c.changed and moved_estimate(c)]
    if moved:
        lines.append("same outcome, estimate changed:")
        lines += [one(c) for c in moved]
    for label, ids in (("only in A", cmp.only_a), ("only in B", cmp.only_b)):
        if ids:
            lines.append(f"{label}: " + ", ".join(ids))
    return lines


def diff_bundles(a_dir, b_dir) -> Comparison:
    """`scoreaudit diff A B`: both bundles read (contained, not verified: `scoreaudit verify` does that)."""
    from scoreaudit.reports.context import BundleError
    from scoreaudit.view.bundle import open_bundle

    a, b = open_bundle(a_dir, "A", verify=False), open_bundle(b_dir, "B", verify=False)
    for x in (a, b):
        if x.error:
            raise BundleError(x.error)
    return compare(a, b)
