"""Within-image dose response: fidelity index, asymmetry, curves, placebo ratio (METHODS)."""

from __future__ import annotations

import numpy as np

from scoreaudit.compiler.doses import dose_key
from scoreaudit.compiler.ir import StatCallIR
from scoreaudit.stats.bootstrap import percentile_ci
from scoreaudit.stats.context import ArmData, StatContext, StatError, _dose_index, ci_contains
from scoreaudit.stats.estimate import Estimate, estimator


def even_odd(ctx: StatContext, arm, scorer: str, operator: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-image (FI_i, A_i) and the offsets t used: FI_i = −mean_t E_i(t), A_i = mean_t O_i(t).

    An image lacking any Δ of the symmetric pairs gets NaN (it is left out).
    """
    op = ctx.operator(operator)
    doses, D = ctx.deltas(arm, scorer, operator)
    offsets = sorted({dose_key(d - op.identity) for d in doses if dose_key(d) > dose_key(op.identity)})
    pairs = []
    for t in offsets:
        jp, jm = _dose_index(doses, op.identity + t), _dose_index(doses, op.identity - t)
        if jp is None or jm is None:
            raise StatError(f"operator {operator!r}: doses are not symmetric around {op.identity:g} "
                            f"(no {op.identity - t:g} to pair with {op.identity + t:g})")
        pairs.append((jp, jm))
    if not pairs:
        raise StatError(f"operator {operator!r} has no dose other than its identity")
    plus = D[:, [p for p, _ in pairs]]
    minus = D[:, [m for _, m in pairs]]
    E = (plus + minus) / 2
    O = (plus - minus) / 2
    return -E.mean(axis=1), O.mean(axis=1), np.array(offsets)


def _op_params(call: StatCallIR) -> tuple[str, str | None]:
    return call.params["operator"], call.params.get("test")


@estimator("fidelity_index")
def fidelity_index(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    operator, test = _op_params(call)
    fi, _, offs = even_odd(ctx, arm, scorer, operator)
    return ctx.mean_estimate(arm, fi, test, detail={"operator": operator, "offsets": offs.tolist()})


@estimator("asymmetry")
def asymmetry(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    operator, test = _op_params(call)
    _, a, offs = even_odd(ctx, arm, scorer, operator)
    return ctx.mean_estimate(arm, a, test, detail={"operator": operator, "offsets": offs.tolist()})


@estimator("curve")
def curve(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    operator = call.params["operator"]
    op = ctx.operator(operator)
    doses, D = ctx.deltas(arm, scorer, operator)
    dose = call.params.get("dose")
    if dose is None:
        dose = float(doses[np.argmax(np.abs(doses - op.identity))]) if len(doses) else float("nan")
    j = _dose_index(doses, float(dose))
    if j is None:
        raise StatError(f"operator {operator!r} has no dose {dose:g}")
    return ctx.mean_estimate(arm, D[:, j], call.params.get("test"), detail={"operator": operator, "dose": dose})


@estimator("placebo_ratio")
def placebo_ratio(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    operator, placebo = call.params["operator"], call.params["placebo"]
    fo = ctx.evaluate(StatCallIR(name="fidelity_index", version="1", params={"operator": operator}), arm, scorer)
    fp = ctx.evaluate(StatCallIR(name="fidelity_index", version="1", params={"operator": placebo}), arm, scorer)
    level = 1 - ctx.alpha
    lo, hi = fp.interval(level)
    det = {"fi_operator": fo.estimate, "fi_operator_ci": list(fo.interval(level)),
           "fi_placebo": fp.estimate, "fi_placebo_ci": [lo, hi], "ci_level": level,
           "operator": operator, "placebo": placebo}
    if fo.undefined or fp.undefined:
        return Estimate(float("nan"), "bootstrap", undefined=fo.undefined or fp.undefined, detail=det)
    if not (np.isfinite(lo) and np.isfinite(hi)) or ci_contains(lo, hi, 0.0):
        return Estimate(float("nan"), "bootstrap", detail=det,
                        undefined=f"the placebo's fidelity index CI [{lo:.3g}, {hi:.3g}] contains 0: "
                                  "the ratio is undefined")
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = fo.boot / fp.boot
    return Estimate(fo.estimate / fp.estimate, "bootstrap", boot=boot, detail=det)


# ---------------------------------------------------------------- section data


def curve_rows(ctx: StatContext, arm: str, scorer: str, operator: str) -> list[dict]:
    """Fidelity curve c(d) per dose: mean of cluster means of Δ, percentile CI (1 − alpha)."""
    a: ArmData = ctx.arm(arm)
    doses, D = ctx.deltas(a, scorer, operator)
    if D.size == 0:
        return []
    cm = np.column_stack([a.cluster_means(D[:, j]) for j in range(D.shape[1])])
    ok = np.isfinite(cm)
    with np.errstate(invalid="ignore"):
        mean = np.where(ok.any(0), np.nansum(np.where(ok, cm, 0), 0) / np.maximum(ok.sum(0), 1), np.nan)
    boot = a.boot_mean_of_cluster_means(cm)
    lo, hi = percentile_ci(boot, 1 - ctx.alpha, axis=0)
    return [{"arm": arm, "scorer": scorer, "operator": operator, "dose": float(d), "mean": float(mean[j]),
             "ci_low": float(lo[j]), "ci_high": float(hi[j]), "n_clusters": int(ok[:, j].sum()),
             "ci_level": 1 - ctx.alpha}
            for j, d in enumerate(doses)]


def uniformity_rows(ctx: StatContext, arm: str, scorer: str) -> list[dict]:
    """Operator uniformity: FI and its test (FI > 0) for every symmetric operator, side by side."""
    rows = []
    for name, op in sorted(ctx.ir.operators.items()):
        if not op.symmetric:
            continue
        est = ctx.evaluate(StatCallIR(name="fidelity_index", version="1", params={"operator": name}), arm, scorer)
        asym = ctx.evaluate(StatCallIR(name="asymmetry", version="1", params={"operator": name}), arm, scorer)
        lo, hi = est.interval(1 - ctx.alpha)
        alo, ahi = asym.interval(1 - ctx.alpha)
        p_asym = 2 * min(asym.p_greater(0.0), asym.p_less(0.0))
        rows.append({"arm": arm, "scorer": scorer, "operator": name, "placebo_of": op.placebo_of,
                     "fi": est.estimate, "ci_low": lo, "ci_high": hi, "p": est.p_greater(0.0),
                     "asymmetry": asym.estimate, "asym_ci_low": alo, "asym_ci_high": ahi,
                     "asym_p": min(1.0, p_asym) if np.isfinite(p_asym) else float("nan"),
                     "ci_level": 1 - ctx.alpha, "p_sided": "greater", "asym_p_sided": "two-sided",
                     "n_clusters": est.detail.get("n_clusters"), "undefined": est.undefined})
    return rows
