"""Auditability verdict per (measure, operator) axis (spec/methods.md).

Axes: every (measure, operator) named by a `validate` statement or a cell's
`axis`, plus those implied by `attribute_effect(o, measure: m)` and by
best-of-n selections under an operator. Conditions:
1. pixel isolation: the operator is declared pixel-local AND the mean of the
   builtin `leakage` over its non-identity rows (all arms) is ≤ max_leakage;
   unmeasured leakage does not hold.
2. measurement validity: a `validate m under o` exists and passes on every
   arm where it was evaluated (and was evaluated on at least one).
3. real-data arm: some `kind: real` images arm has ≥ min_real_clusters
   clusters with at least one image whose measure is finite at every dose of o.
"""

from __future__ import annotations

import numpy as np

from scoreaudit import numfmt
from scoreaudit.compiler.doses import is_dose
from scoreaudit.stats.context import StatContext

_OPS = {">=": "\u2265", "<=": "\u2264", "!=": "\u2260"}  # as the report prints comparisons


def _shown(x, style) -> str:
    """A check's number in the report's style (a yes/no check's value as 1 or 0)."""
    return str(int(x)) if isinstance(x, bool) else style(x)


def axes(ctx: StatContext) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []

    def add(m, o):
        if m and o and (m, o) not in found:
            found.append((m, o))

    for v in ctx.ir.validations:
        add(v.measure, v.operator)
    for cell in ctx.ir.cells():
        if cell.axis:
            add(*cell.axis)
        call = cell.statistic.inner or cell.statistic
        p = call.params
        if call.name == "attribute_effect":
            add(p.get("measure"), p.get("operator"))
        if call.name == "net_drift":
            sel = ctx.ir.selections.get(p.get("selection"))
            if sel is not None and sel.operator:
                add(sel.measure, sel.operator)
    return found


def _leakage(ctx: StatContext, operator: str) -> float:
    t = ctx.tables["measures"]
    if not len(t):
        return float("nan")
    op = ctx.operator(operator)
    rows = t[(t["name"] == "leakage") & (t["operator"] == operator) & ~is_dose(t["dose"], op.identity)]
    v = rows["value"].to_numpy(dtype=float)
    v = v[np.isfinite(v)]
    return float(v.mean()) if len(v) else float("nan")


def _usable_real_clusters(ctx: StatContext, measure: str, operator: str) -> tuple[int, str | None]:
    best, best_arm = 0, None
    for name, arm in sorted(ctx.ir.arms.items()):
        if arm.kind != "real" or arm.source != "images":
            continue
        a = ctx.arm(name)
        _, M = ctx.measure_matrix(a, operator, measure)
        if M.shape[1] == 0:
            continue
        ok = np.isfinite(M).all(axis=1)
        n = int(len(np.unique(a.codes[ok])))
        if best_arm is None or n > best:
            best, best_arm = n, name
    return best, best_arm


def verdicts(ctx: StatContext, validations: list[dict]) -> list[dict]:
    s = ctx.settings
    out = []
    for measure, operator in axes(ctx):
        if operator not in ctx.ir.operators:
            continue
        op = ctx.ir.operators[operator]
        leak = _leakage(ctx, operator)
        leak_ok = bool(np.isfinite(leak) and leak <= s.max_leakage)
        iso = bool(op.pixel_local and leak_ok)
        if not op.pixel_local:
            iso_detail = f"{op.call.plugin} is geometric (not pixel-local): pixels outside its region move"
        elif not np.isfinite(leak):
            iso_detail = "leakage was not measured for this operator"
        else:
            iso_detail = (f"mean leakage {numfmt.pct(leak)} of pixels outside the region "  # the report's number style
                          f"{'≤' if leak_ok else '>'} {numfmt.plain(100 * s.max_leakage)}%")
        rows = [v for v in validations if v["measure"] == measure and v["operator"] == operator]
        declared = any(v.measure == measure and v.operator == operator for v in ctx.ir.validations)
        valid = bool(rows) and all(v["passed"] for v in rows)
        if not declared:
            val_detail = f"no `validate {measure} under {operator}` statement"
        elif not rows:
            val_detail = f"`validate {measure} under {operator}` could not be evaluated (no measure values)"
        else:
            parts = []
            for v in rows:
                checks = ", ".join(f"{c['statistic']} = {_shown(c['value'], numfmt.num)} {_OPS.get(c['op'], c['op'])} {_shown(c['threshold'], numfmt.plain)}"
                                   f" {'held' if c['held'] else 'failed'}" for c in v["checks"])
                parts.append(f"on {v['arm']}: {checks}")
            val_detail = "; ".join(parts)
        n_real, real_arm = _usable_real_clusters(ctx, measure, operator)
        real_ok = real_arm is not None and n_real >= s.min_real_clusters
        real_detail = (f"no real arm measures {measure} under {operator}" if real_arm is None else
                       f"{n_real} usable clusters on real arm {real_arm} "
                       f"({'≥' if real_ok else '<'} {s.min_real_clusters} required)")
        conds = [
            {"name": "pixel isolation", "held": iso, "value": leak if np.isfinite(leak) else None,
             "detail": iso_detail},
            {"name": "measurement validity", "held": valid,
             "value": {v["arm"]: {"r2": v["r2"], "monotonic": v["monotonic"]} for v in rows} or None,
             "detail": val_detail},
            {"name": "real-data arm", "held": bool(real_ok), "value": n_real if real_arm else None,
             "detail": real_detail},
        ]
        out.append({"measure": measure, "operator": operator,
                    "verdict": "bias-measurement" if all(c["held"] for c in conds) else "stress-test-only",
                    "failed": [c["name"] for c in conds if not c["held"]], "conditions": conds})
    return out
