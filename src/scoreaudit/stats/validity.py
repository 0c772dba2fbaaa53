"""Measurement validity of a measure under an operator (spec/methods.md: r2, monotonic).

Choices (spec/methods-choices.md): the pooled OLS of Δm = m(i, d) − m(i, d0) on
(d − d0) has an intercept and uses the rows d ≠ d0 (the identity rows are 0 by
construction and would inflate R²); `monotonic` is the share, among images
with a finite measure at every dose, whose measure strictly increases (fitted
slope > 0) or strictly decreases (slope < 0) along the sorted doses. A
`validate` statement is evaluated on every images arm where the measure has
values under the operator, and passes only when it passes on each of them.
"""

from __future__ import annotations

import operator as _op

import numpy as np

from scoreaudit.stats.context import StatContext, _dose_index

COMPARE = {">": _op.gt, ">=": _op.ge, "<": _op.lt, "<=": _op.le}


def validity_numbers(ctx: StatContext, arm: str, operator: str, measure: str) -> dict | None:
    """r2, slope, monotonic share and counts; None when the arm has no values for the axis."""
    op = ctx.operator(operator)
    doses, M = ctx.measure_matrix(arm, operator, measure)
    if M.shape[1] == 0 or not np.isfinite(M).any():
        return None
    j0 = _dose_index(doses, op.identity)
    if j0 is None:
        return None
    dM = M - M[:, [j0]]
    keep = np.array([j != j0 for j in range(len(doses))])
    x = np.broadcast_to(doses[keep] - op.identity, dM[:, keep].shape).ravel()
    y = dM[:, keep].ravel()
    ok = np.isfinite(y)
    x, y = x[ok], y[ok]
    r2 = slope = float("nan")
    if len(y) >= 3 and np.ptp(x) > 0:
        xc, yc = x - x.mean(), y - y.mean()
        slope = float((xc @ yc) / (xc @ xc))
        sst = float(yc @ yc)
        r2 = float(1 - ((yc - slope * xc) @ (yc - slope * xc)) / sst) if sst > 0 else float("nan")
    complete = np.isfinite(M).all(axis=1)
    steps = np.diff(M[complete], axis=1)
    if np.isfinite(slope) and slope != 0 and complete.any():
        mono = (steps > 0).all(1) if slope > 0 else (steps < 0).all(1)
        share = float(mono.mean())
    else:
        share = float("nan")
    return {"r2": r2, "slope": slope, "monotonic": share, "n_images": int(complete.sum()),
            "n_rows": int(len(y))}


def r2(ctx: StatContext, arm: str, operator: str, measure: str) -> float:
    """The `r2` validation check (registry estimator of the `r2` statistic)."""
    nums = validity_numbers(ctx, arm, operator, measure)
    return float("nan") if nums is None else nums["r2"]


def monotonic(ctx: StatContext, arm: str, operator: str, measure: str) -> float:
    """The `monotonic` validation check (registry estimator of the `monotonic` statistic)."""
    nums = validity_numbers(ctx, arm, operator, measure)
    return float("nan") if nums is None else nums["monotonic"]


def validations(ctx: StatContext) -> list[dict]:
    """One row per (validate statement, arm where the axis is measured)."""
    rows = []
    for v in ctx.ir.validations:
        for arm_name, arm in sorted(ctx.ir.arms.items()):
            if arm.source != "images":
                continue
            nums = validity_numbers(ctx, arm_name, v.operator, v.measure)
            if nums is None:
                continue
            checks = []
            for stat, cmp, value in v.checks:
                got = nums.get(stat, float("nan"))
                held = bool(np.isfinite(got) and COMPARE[cmp](got, value))
                checks.append({"statistic": stat, "op": cmp, "threshold": value, "value": got, "held": held})
            rows.append({"measure": v.measure, "operator": v.operator, "arm": arm_name,
                         "r2": nums["r2"], "monotonic": nums["monotonic"], "slope": nums["slope"],
                         "n_images": nums["n_images"], "passed": all(c["held"] for c in checks),
                         "checks": checks})
    return rows
