"""Within-image dose response: fidelity (penalty) index, asymmetry, curves, trend, placebo ratio.

Estimators pass per-image contrasts in raw score units to
`ctx.mean_estimate(..., scorer=...)`, which standardises them (scale: sd) with
an SD re-estimated in every bootstrap replicate (spec/methods.md).
"""

from __future__ import annotations

import numpy as np

from scoreaudit import numfmt
from scoreaudit.compiler.doses import dose_keys
from scoreaudit.compiler.ir import StatCallIR
from scoreaudit.stats.context import ArmData, StatContext, StatError, _dose_index
from scoreaudit.stats.estimate import Estimate


def even_odd(ctx: StatContext, arm, scorer: str, operator: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Per-image raw (FI_i, A_i) and the offsets used.

    Symmetric doses: FI_i = −mean_t E_i(t), A_i = mean_t O_i(t). One-sided
    doses (all on one side of the identity): FI_i = −mean_{d≠d0} Δ(i, d), the
    penalty index, and A_i is None. An image lacking any Δ gets NaN.
    """
    op = ctx.operator(operator)
    doses, D = ctx.deltas(arm, scorer, operator, scaled=False)
    off = dose_keys(np.asarray(doses) - op.identity)
    others = np.flatnonzero(np.abs(off) > 1e-9)
    if not len(others):
        raise StatError(f"operator {operator!r} has no dose other than its identity")
    if np.all(off[others] > 0) or np.all(off[others] < 0):
        return -D[:, others].mean(axis=1), None, np.abs(off[others])
    offsets = sorted({float(t) for t in off if t > 1e-9})
    pairs = []
    for t in offsets:
        jp, jm = _dose_index(doses, op.identity + t), _dose_index(doses, op.identity - t)
        if jp is None or jm is None:
            raise StatError(f"operator {operator!r}: doses are not symmetric around {op.identity:g} "
                            f"(no {op.identity - t:g} to pair with {op.identity + t:g})")
        pairs.append((jp, jm))
    plus = D[:, [p for p, _ in pairs]]
    minus = D[:, [m for _, m in pairs]]
    even = (plus + minus) / 2
    odd = (plus - minus) / 2
    return -even.mean(axis=1), odd.mean(axis=1), np.array(offsets)


def _op_params(call: StatCallIR) -> tuple[str, str | None]:
    return call.params["operator"], call.params.get("test")


def fidelity_index(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    operator, test = _op_params(call)
    fi, a, offs = even_odd(ctx, arm, scorer, operator)
    kind = "penalty index (one-sided doses)" if a is None else "fidelity index (symmetric doses)"
    return ctx.mean_estimate(arm, fi, test, scorer=scorer,
                             detail={"operator": operator, "offsets": offs.tolist(), "kind": kind})


def asymmetry(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    operator, test = _op_params(call)
    _, a, offs = even_odd(ctx, arm, scorer, operator)
    if a is None:
        raise StatError(f"asymmetry needs doses on both sides of the identity; {operator!r} is one-sided")
    return ctx.mean_estimate(arm, a, test, scorer=scorer, detail={"operator": operator, "offsets": offs.tolist()})


def curve(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    operator = call.params["operator"]
    op = ctx.operator(operator)
    doses, D = ctx.deltas(arm, scorer, operator, scaled=False)
    dose = call.params.get("dose")
    if dose is None:
        dose = float(doses[np.argmax(np.abs(doses - op.identity))]) if len(doses) else float("nan")
    j = _dose_index(doses, float(dose))
    if j is None:
        raise StatError(f"operator {operator!r} has no dose {dose:g}")
    return ctx.mean_estimate(arm, D[:, j], call.params.get("test"), scorer=scorer,
                             detail={"operator": operator, "dose": dose})


def _slope_parts(x: np.ndarray, y: np.ndarray, codes: np.ndarray, C: int) -> np.ndarray:
    """Per-cluster sums (n, Σx, Σy, Σxx, Σxy) of finite rows: the OLS slope of any reweighting."""
    ok = np.isfinite(x) & np.isfinite(y)
    x, y, c = x[ok], y[ok], codes[ok]
    return np.column_stack([np.bincount(c, minlength=C).astype(float), np.bincount(c, x, minlength=C),
                            np.bincount(c, y, minlength=C), np.bincount(c, x * x, minlength=C),
                            np.bincount(c, x * y, minlength=C)])


def _slope(parts: np.ndarray) -> np.ndarray:
    n, sx, sy, sxx, sxy = (parts[..., k] for k in range(5))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (n * sxy - sx * sy) / (n * sxx - sx * sx)


def ols_slope_cluster(x: np.ndarray, y: np.ndarray, groups: np.ndarray) -> tuple[float, float, int]:
    """(slope, cluster-robust SE, G) of y ~ 1 + x, statsmodels' CR1 correction G/(G−1)·(N−1)/(N−2)."""
    X = np.column_stack([np.ones(len(x)), x])
    bread = np.linalg.inv(X.T @ X)
    beta = bread @ (X.T @ y)
    u = y - X @ beta
    _, g = np.unique(groups, return_inverse=True)
    G = int(g.max()) + 1
    sc = np.zeros((G, 2))
    np.add.at(sc, g, X * u[:, None])
    N = len(y)
    cov = (G / (G - 1)) * ((N - 1) / (N - 2)) * bread @ (sc.T @ sc) @ bread
    return float(beta[1]), float(np.sqrt(cov[1, 1])), G


def trend(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    """Slope of Δ on (d − d0) over every (image, dose ≠ d0), cluster-robust (t with G − 1 df)."""
    operator = call.params["operator"]
    op = ctx.operator(operator)
    a: ArmData = ctx.arm(arm)
    doses, D = ctx.deltas(a, scorer, operator, scaled=False)
    keep = np.flatnonzero(np.abs(doses - op.identity) > 1e-9)
    if len(keep) == 0:
        raise StatError(f"operator {operator!r} has no dose other than its identity")
    x = np.tile(doses[keep] - op.identity, a.n_images)
    y = D[:, keep].ravel()
    codes = np.repeat(a.codes, len(keep))
    ok = np.isfinite(y)
    if len(np.unique(codes[ok])) < 2:
        raise StatError(f"trend of {operator!r}: fewer than 2 usable clusters on {a.key}")
    if np.ptp(x[ok]) == 0:
        raise StatError(f"trend of {operator!r} needs at least two doses other than the identity")
    slope, se, G = ols_slope_cluster(x[ok], y[ok], codes[ok])
    parts = _slope_parts(x, y, codes, a.n_clusters)
    boot, jack = _slope(a.W @ parts), _slope(a.jackknife @ parts)
    det = {"operator": operator, "n_clusters": G, "se_raw": se}
    if ctx.standardised():
        sd = ctx.scale(a, scorer)
        det.update(sd=sd, scale="sd (re-estimated in every bootstrap replicate)")
        return Estimate(slope / sd, "bootstrap", boot=boot / ctx.sd_weighted(a, scorer, a.sd_W),
                        jack=jack / ctx.sd_weighted(a, scorer, a.root_jackknife), detail=det)
    return Estimate(slope, "normal", se=se, df=float(G - 1), boot=None, detail=det)


def _penalty_reason(name: str, est: Estimate, alpha: float) -> str | None:
    """Why FI(name) is not a significant penalty (None when it is: one-sided p ≤ alpha)."""
    if est.undefined:
        return f"FI({name}) is undefined ({est.undefined})"
    p = est.p_greater(0.0)
    if est.estimate < 0:
        return f"the scorer rewards {name}: FI({name}) = {numfmt.num(est.estimate)} < 0"  # the report's style
    if not (np.isfinite(p) and p <= alpha):
        return f"FI({name}) = {numfmt.num(est.estimate)} is not significantly positive ({numfmt.peq(p)})"
    return None


def placebo_ratio(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    """R = FI(o)/FI(p), defined only when both are significant penalties (one-sided p ≤ alpha)."""
    operator, placebo = call.params["operator"], call.params["placebo"]
    fo = ctx.evaluate(StatCallIR(name="fidelity_index", version="1", params={"operator": operator}), arm, scorer)
    fp = ctx.evaluate(StatCallIR(name="fidelity_index", version="1", params={"operator": placebo}), arm, scorer)
    level = 1 - ctx.alpha
    det = {"fi_operator": fo.estimate, "fi_operator_ci": list(fo.interval(level)),
           "fi_placebo": fp.estimate, "fi_placebo_ci": list(fp.interval(level)), "ci_level": level,
           "p_fi_operator": fo.p_greater(0.0), "p_fi_placebo": fp.p_greater(0.0),
           "operator": operator, "placebo": placebo, "n_clusters": fo.detail.get("n_clusters")}
    reasons = [r for r in (_penalty_reason(operator, fo, ctx.alpha), _penalty_reason(placebo, fp, ctx.alpha)) if r]
    if reasons:
        return Estimate(float("nan"), "bootstrap", detail=det,
                        undefined="; ".join(reasons) + ": the ratio needs two penalties")
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = fo.boot / fp.boot
        jack = fo.jack / fp.jack if fo.jack is not None and fp.jack is not None else None
    return Estimate(fo.estimate / fp.estimate, "bootstrap", boot=boot, jack=jack, detail=det)


# ---------------------------------------------------------------- section data


def curve_rows(ctx: StatContext, arm: str, scorer: str, operator: str) -> list[dict]:
    """Fidelity curve c(d) per dose: mean of cluster means of Δ with the cell's interval family (1 − alpha)."""
    a: ArmData = ctx.arm(arm)
    doses, D = ctx.deltas(a, scorer, operator, scaled=False)
    if D.size == 0:
        return []
    rows = []
    for j, d in enumerate(doses):
        est = ctx.mean_estimate(a, D[:, j], scorer=scorer).with_ci(ctx.settings.ci)
        if est.undefined:
            lo = hi = mean = float("nan")
        else:
            mean = est.estimate
            lo, hi = est.interval(1 - ctx.alpha)
            if np.isclose(d, ctx.operator(operator).identity):
                lo = hi = 0.0
        rows.append({"arm": arm, "scorer": scorer, "operator": operator, "dose": float(d), "mean": float(mean),
                     "ci_low": float(lo), "ci_high": float(hi), "n_clusters": int(est.detail.get("n_clusters", 0)),
                     "ci_level": 1 - ctx.alpha})
    return rows


def uniformity_rows(ctx: StatContext, arm: str, scorer: str) -> list[dict]:
    """Operator uniformity: FI (penalty index for one-sided operators) and its test for every operator."""
    rows = []
    for name, op in sorted(ctx.ir.operators.items()):
        est = ctx.evaluate(StatCallIR(name="fidelity_index", version="1", params={"operator": name}), arm, scorer)
        lo, hi = est.interval(1 - ctx.alpha)
        row = {"arm": arm, "scorer": scorer, "operator": name, "placebo_of": op.placebo_of,
               "fi": est.estimate, "ci_low": lo, "ci_high": hi, "p": est.p_greater(0.0),
               "asymmetry": None, "asym_ci_low": None, "asym_ci_high": None, "asym_p": None,
               "ci_level": 1 - ctx.alpha, "p_sided": "greater", "asym_p_sided": "two-sided",
               "n_clusters": est.detail.get("n_clusters"), "undefined": est.undefined,
               "kind": "fidelity index" if op.symmetric else "penalty index"}
        if op.symmetric:
            asym = ctx.evaluate(StatCallIR(name="asymmetry", version="1", params={"operator": name}), arm, scorer)
            alo, ahi = asym.interval(1 - ctx.alpha)
            p_asym = 2 * min(asym.p_greater(0.0), asym.p_less(0.0))
            row.update(asymmetry=asym.estimate, asym_ci_low=alo, asym_ci_high=ahi,
                       asym_p=min(1.0, p_asym) if np.isfinite(p_asym) else float("nan"))
        rows.append(row)
    return rows
