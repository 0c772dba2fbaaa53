"""Best-of-n selection drift (spec/methods.md, "Best-of-n selection").

Groups under an operator are n dose variants of one image (all doses, the
identity included): every n-subset of the doses when there are at most
`max_groups`, otherwise `max_groups` random subsets per image. Without an
operator, groups are n original images of one cluster (every n-subset of the
cluster's images up to `max_groups`, else random ones). The groups depend only
on (seed, arm, selection), so every scorer is judged on the same groups.

For a group g: a_g = m(argmax of s over g) − mean of m over g, where tied
top scores share the pick equally. The seed paper's null, a uniform random
pick, has expected drift exactly 0 given the group, so it enters in
expectation (Rao–Blackwellised) instead of as a simulated draw:
net = Σ_g a_g / #groups. `directional_drift` (under an operator with
symmetric doses) averages (m(d*) − m(2·d0 − d*)) / 2 at the picked dose d*,
which is 0 in expectation for a scorer symmetric in the dose; net −
directional is the fidelity part. Cluster bootstrap replicates are
Σ_c W_bc·sum_c / Σ_c W_bc·count_c with the arm's shared count matrix; the
p-value inverts the interval.
"""

from __future__ import annotations

from itertools import combinations
from math import comb

import numpy as np
import pandas as pd

from scoreaudit import numfmt
from scoreaudit.compiler.doses import dose_keys
from scoreaudit.compiler.ir import ORIGINAL, StatCallIR
from scoreaudit.stats.bootstrap import weighted_ratio
from scoreaudit.stats.context import ArmData, StatContext, StatError, _dose_index
from scoreaudit.stats.estimate import Estimate


def _subsets(rng: np.random.Generator, k: int, n: int, max_groups: int, rows: int) -> np.ndarray:
    """(rows, G, n) index array: all n-subsets of range(k) if few enough, else random ones per row."""
    if comb(k, n) <= max_groups:
        base = np.array(list(combinations(range(k), n)), dtype=int)
        return np.broadcast_to(base, (rows, *base.shape))
    keys = rng.random((rows, max_groups, k))
    return np.sort(np.argsort(keys, axis=2)[:, :, :n], axis=2)


def _pick_weights(Sg: np.ndarray) -> np.ndarray:
    """Share of the pick each candidate gets: 1/#ties for the top-scoring ones, 0 otherwise."""
    top = Sg == Sg.max(axis=-1, keepdims=True)
    return top / top.sum(axis=-1, keepdims=True)


def _drifts(S: np.ndarray, M: np.ndarray, groups: np.ndarray, mirror: np.ndarray | None = None):
    """Per (row, group): argmax drift a and, with `mirror` (dose index → its mirror), the directional drift.

    S, M: rows × k; groups: rows × G × n (indices into the k columns).
    """
    rows = np.arange(S.shape[0])[:, None, None]
    Sg, Mg = S[rows, groups], M[rows, groups]
    w = _pick_weights(Sg)
    a = (w * Mg).sum(axis=2) - Mg.mean(axis=2)
    if mirror is None:
        return a, None
    Mm = M[rows, mirror[groups]]
    return a, (w * (Mg - Mm)).sum(axis=2) / 2


def drift_components(ctx: StatContext, arm, scorer: str, selection: str):
    """(cluster sums of a, of the directional drift (None without a symmetric operator), group counts)."""
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
        ok = np.isfinite(S).all(1) & np.isfinite(M).all(1)
        mirror = _mirror(doses, ctx.operator(sel.operator).identity)
        a, dd = _drifts(np.where(ok[:, None], S, 0), np.where(ok[:, None], M, 0), groups, mirror)
        codes = a_.codes[ok]
        ng = groups.shape[1]
        sa = np.bincount(codes, a[ok].sum(1), minlength=C)
        sd_ = np.bincount(codes, dd[ok].sum(1), minlength=C) if dd is not None else None
        cnt = np.bincount(codes, minlength=C).astype(float) * ng
        return sa, sd_, cnt
    # cross-image: n original images of one cluster
    s = ctx.original_scores(a_, scorer)
    m = _original_measure(ctx, a_, sel.measure)
    sa, cnt = np.zeros(C), np.zeros(C)
    ok = np.isfinite(s) & np.isfinite(m)
    for c in range(C):
        idx = np.flatnonzero((a_.codes == c) & ok)
        if len(idx) < n:
            continue
        groups = _subsets(rng, len(idx), n, G, 1)
        a, _ = _drifts(s[idx][None], m[idx][None], groups)
        sa[c], cnt[c] = a.sum(), a.size
    return sa, None, cnt


def _original_measure(ctx: StatContext, a: ArmData, name: str) -> np.ndarray:
    t = ctx.tables["measures"]
    t = t[(t["arm"] == a.name) & (t["name"] == name)] if len(t) else t
    rows = t[t["operator"] == ORIGINAL] if len(t) else t
    if not len(rows) and len(t):
        ident = t["operator"].map({k: op.identity for k, op in ctx.ir.operators.items()})
        rows = t[dose_keys(t["dose"]) == dose_keys(ident)]
    v = rows.groupby("image_id")["value"].first() if len(rows) else pd.Series(dtype=float)
    return v.reindex(a.image_ids).to_numpy(dtype=float)


def _mirror(doses: np.ndarray, identity: float) -> np.ndarray | None:
    """Index of each dose's mirror 2·d0 − d, or None when the doses are not symmetric."""
    out = []
    for d in doses:
        k = _dose_index(doses, 2 * identity - float(d))
        if k is None:
            return None
        out.append(k)
    return np.array(out, dtype=int)


def _drift_estimate(ctx: StatContext, a_: ArmData, selection: str, sums: np.ndarray, cnt: np.ndarray,
                    detail: dict) -> Estimate:
    if (cnt > 0).sum() < 2:
        raise StatError(f"selection {selection!r}: fewer than 2 clusters have a full group on {a_.key}")
    boot = weighted_ratio(a_.W, sums, cnt)
    jack = weighted_ratio(a_.jackknife, sums, cnt)
    det = {"selection": selection, "n_groups": int(cnt.sum()), "n_clusters": int((cnt > 0).sum()), **detail}
    return Estimate(float(sums.sum() / cnt.sum()), "bootstrap", boot=boot, jack=jack, detail=det)


def net_drift(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    """mean_g [m(argmax) − mean_g m]: the random pick enters in expectation (0), not as a draw."""
    selection = call.params["selection"]
    a_ = ctx.arm(arm)
    sa, sd_, cnt = drift_components(ctx, a_, scorer, selection)
    det: dict = {"random_drift": 0.0, "random_pick": "in expectation (exactly 0 given the group)"}
    sel = ctx.ir.selections[selection]
    if sd_ is not None and cnt.sum() > 0:
        det["directional_drift"] = float(sd_.sum() / cnt.sum())
        det["fidelity_part"] = float((sa.sum() - sd_.sum()) / cnt.sum())
        det["note"] = (f"under {sel.operator}, net drift includes a fidelity part (net − directional = "
                       f"{numfmt.signed(det['fidelity_part'])}): a scorer that only prefers the unaltered image still "
                       f"moves a non-linear measure")
    est = _drift_estimate(ctx, a_, selection, sa, cnt, det)
    return est


def directional_drift(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    """mean_g (m(d*) − m(2·d0 − d*)) / 2 at the picked dose d* (0 in expectation for a dose-symmetric scorer)."""
    selection = call.params["selection"]
    sel = ctx.ir.selections.get(selection)
    if sel is None or sel.operator is None:
        raise StatError(f"directional_drift needs a selection under an operator; {selection!r} picks among images")
    a_ = ctx.arm(arm)
    _, sd_, cnt = drift_components(ctx, a_, scorer, selection)
    if sd_ is None:
        raise StatError(f"directional_drift needs symmetric doses; {sel.operator!r} has a dose without its mirror")
    return _drift_estimate(ctx, a_, selection, sd_, cnt, {})
