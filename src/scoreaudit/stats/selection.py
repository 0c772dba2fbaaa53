"""Best-of-n selection drift (METHODS: amplification).

Groups under an operator are n dose variants of one image (all doses, the
identity included): every n-subset of the doses when there are at most
`max_groups`, otherwise `max_groups` random subsets per image. Without an
operator, groups are n original images of one cluster (every n-subset of the
cluster's images up to `max_groups`, else random ones). The groups and the
random picks depend only on (seed, arm, selection), so every scorer is judged
on the same groups and the same random picks (a paired comparison).

net = Σ_g (a_g − r_g) / #groups over all groups (group-weighted); the cluster
bootstrap replicates are Σ_c W_bc·sum_c / Σ_c W_bc·count_c with the arm's
shared count matrix, and the p-value inverts the percentile interval.
"""

from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np
import pandas as pd

from scoreaudit.compiler.doses import dose_keys
from scoreaudit.compiler.ir import ORIGINAL, StatCallIR
from scoreaudit.stats.bootstrap import percentile_ci, weighted_ratio
from scoreaudit.stats.context import ArmData, StatContext, StatError, _dose_index
from scoreaudit.stats.estimate import Estimate, estimator


def _subsets(rng: np.random.Generator, k: int, n: int, max_groups: int, rows: int) -> np.ndarray:
    """(rows, G, n) index array: all n-subsets of range(k) if few enough, else random ones per row."""
    if comb(k, n) <= max_groups:
        base = np.array(list(combinations(range(k), n)), dtype=int)
        return np.broadcast_to(base, (rows, *base.shape))
    keys = rng.random((rows, max_groups, k))
    return np.sort(np.argsort(keys, axis=2)[:, :, :n], axis=2)


def _drifts(S: np.ndarray, M: np.ndarray, groups: np.ndarray, picks: np.ndarray):
    """Per (row, group): argmax drift a and random-pick drift r. S, M: rows × k; groups rows × G × n."""
    rows = np.arange(S.shape[0])[:, None, None]
    Sg, Mg = S[rows, groups], M[rows, groups]
    mean = Mg.mean(axis=2)
    best = np.argmax(Sg, axis=2)
    a = np.take_along_axis(Mg, best[..., None], 2)[..., 0] - mean
    r = np.take_along_axis(Mg, picks[..., None], 2)[..., 0] - mean
    return a, r


def drift_components(ctx: StatContext, arm, scorer: str, selection: str):
    """(cluster sums of a, of r, group counts per cluster) for a selection on an arm."""
    a_: ArmData = ctx.arm(arm)
    sel = ctx.ir.selections.get(selection)
    if sel is None:
        raise StatError(f"selection {selection!r} is not declared")
    n, G = sel.n, ctx.settings.max_groups
    rng = a_.rng("selection", selection)
    C = a_.n_clusters
    if sel.operator is not None:
        doses, S = ctx.score_matrix(a_, scorer, sel.operator)
        mdoses, M = ctx.measure_matrix(a_, sel.operator, sel.measure)
        if S.shape[1] < n:
            raise StatError(f"selection {selection!r}: operator {sel.operator!r} has fewer than {n} doses")
        M = np.column_stack([M[:, k] if (k := _dose_index(mdoses, d)) is not None else np.full(len(M), np.nan)
                             for d in doses]) if M.shape[1] else np.full_like(S, np.nan)
        groups = _subsets(rng, S.shape[1], n, G, a_.n_images)
        picks = rng.integers(0, n, size=groups.shape[:2])
        ok = np.isfinite(S).all(1) & np.isfinite(M).all(1)
        a, r = _drifts(np.where(ok[:, None], S, 0), np.where(ok[:, None], M, 0), groups, picks)
        codes = a_.codes[ok]
        ng = groups.shape[1]
        sa = np.bincount(codes, a[ok].sum(1), minlength=C)
        sr = np.bincount(codes, r[ok].sum(1), minlength=C)
        cnt = np.bincount(codes, minlength=C).astype(float) * ng
        return sa, sr, cnt
    # cross-image: n original images of one cluster
    s = ctx.original_scores(a_, scorer)
    m = _original_measure(ctx, a_, sel.measure)
    sa, sr, cnt = np.zeros(C), np.zeros(C), np.zeros(C)
    ok = np.isfinite(s) & np.isfinite(m)
    for c in range(C):
        idx = np.flatnonzero((a_.codes == c) & ok)
        if len(idx) < n:
            continue
        groups = _subsets(rng, len(idx), n, G, 1)
        picks = rng.integers(0, n, size=groups.shape[:2])
        a, r = _drifts(s[idx][None], m[idx][None], groups, picks)
        sa[c], sr[c], cnt[c] = a.sum(), r.sum(), a.size
    return sa, sr, cnt


def _original_measure(ctx: StatContext, a: ArmData, name: str) -> np.ndarray:
    t = ctx.tables["measures"]
    t = t[(t["arm"] == a.name) & (t["name"] == name)] if len(t) else t
    rows = t[t["operator"] == ORIGINAL] if len(t) else t
    if not len(rows) and len(t):
        ident = t["operator"].map({k: op.identity for k, op in ctx.ir.operators.items()})
        rows = t[dose_keys(t["dose"]) == dose_keys(ident)]
    v = rows.groupby("image_id")["value"].first() if len(rows) else pd.Series(dtype=float)
    return v.reindex(a.image_ids).to_numpy(dtype=float)


@estimator("net_drift")
def net_drift(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    selection = call.params["selection"]
    a_ = ctx.arm(arm)
    sa, sr, cnt = drift_components(ctx, a_, scorer, selection)
    if (cnt > 0).sum() < 2:
        raise StatError(f"selection {selection!r}: fewer than 2 clusters have a full group on {a_.key}")
    total = cnt.sum()
    est_a, est_r = sa.sum() / total, sr.sum() / total
    boot = weighted_ratio(a_.W, np.column_stack([sa - sr, sa, sr]), np.column_stack([cnt, cnt, cnt]))
    level = 1 - ctx.alpha
    lo, hi = percentile_ci(boot, level, axis=0)
    det = {"selection": selection, "argmax_drift": est_a, "random_drift": est_r,
           "argmax_ci": [float(lo[1]), float(hi[1])], "random_ci": [float(lo[2]), float(hi[2])],
           "ci_level": level, "n_groups": int(total), "n_clusters": int((cnt > 0).sum())}
    return Estimate(est_a - est_r, "bootstrap", boot=boot[:, 0], detail=det)
