"""True values of statistics under the planted model (for `simulate` and the calibration bench).

Each statistic's registry entry names its truth function here (`truth=`).
The planted scorer (stats/planted.py) is

    s(i, o, d) = b_i − F·u² + A·u + K·(m(i, o, d) − m(i, d0)) + E·[factor = level] + ε,

u = (d − d0)/t_max, b_i ~ N(0, 1), ε ~ N(0, noise²), placebo operators scaled
by P, and a measure linear in the dose (slope `model.slope`, mean-zero
noise), so expectations over images are closed forms of the dose grid.
A truth function takes (ir, call, tc: TruthContext) and returns the value in
the statistic's units (SD units under `scale: sd`), or None when the planted
model implies none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scoreaudit.compiler.ir import AuditIR, StatCallIR
from scoreaudit.stats.planted import MeasureModel, truth_for


@dataclass(frozen=True)
class TruthContext:
    """Where a truth is asked: scorer, arm (None for cross-arm), stratum, the planted parameters."""

    truth: Mapping[str, Any]
    scorer: str
    arm: str | None
    model: MeasureModel = MeasureModel()
    stratum: str | None = None
    raw: bool = False

    def params(self) -> dict:
        return truth_for(self.truth, self.scorer, self.arm, self.stratum)

    def scale(self) -> float:
        """The SD of original scores the planted model implies: sqrt(1 + noise²) (1 under `scale: raw`)."""
        if self.raw:
            return 1.0
        t = truth_for(self.truth, self.scorer, self.arm, None)
        return math.sqrt(1.0 + t["noise"] ** 2)

    def reading(self, scorer: str, arm: str, stratum: str | None) -> TruthContext:
        """The context of one reading of a comparison: its own scorer, arm and `where` stratum."""
        return TruthContext(self.truth, scorer, arm, self.model, stratum, self.raw)

    def at(self, arm: str | None = None, stratum: str | None = None) -> TruthContext:
        return TruthContext(self.truth, self.scorer, arm if arm is not None else self.arm, self.model,
                            stratum, self.raw)


def true_value(ir: AuditIR, call: StatCallIR, tc: TruthContext) -> float | None:
    """The truth of any statistic call, through its registry entry (None when it has none)."""
    from scoreaudit import registry
    from scoreaudit.stats.estimate import resolve

    registry.load_plugins()
    if call.name in FORM_TRUTHS:  # `difference(a, b)` / `ratio(a, b)`: language forms over two readings
        return FORM_TRUTHS[call.name](ir, call, tc)
    target = registry.statistics.get(call.name).meta.get("truth")
    if not target:
        return None
    fn: Callable[..., float | None] = resolve(target, f"truth of statistic {call.name!r}")
    return fn(ir, call, tc)


def _grid(ir: AuditIR, operator: str):
    op = ir.operators[operator]
    d = np.array(op.doses, dtype=float) - op.identity
    tmax = float(np.max(np.abs(d))) or 1.0
    return op, d, tmax


def _delta(ir: AuditIR, operator: str, t: dict, model: MeasureModel) -> tuple[np.ndarray, np.ndarray]:
    """(offsets d − d0, expected raw Δ at each dose) of the planted scorer."""
    op, d, tmax = _grid(ir, operator)
    u = d / tmax
    mult = t["placebo"] if op.placebo_of else 1.0
    slope = 0.0 if op.placebo_of or not t.get("slope_by") else t["slope"] * model.slope
    return d, -t["fidelity"] * mult * u**2 + t["asymmetry"] * mult * u + slope * d


def fidelity_index(ir, call, tc: TruthContext):
    d, D = _delta(ir, call.params["operator"], tc.params(), tc.model)
    pos = d > 1e-9
    neg = d < -1e-9
    if pos.any() and neg.any():
        return float(-np.mean([(D[np.isclose(d, x)][0] + D[np.isclose(d, -x)][0]) / 2 for x in d[pos]])) / tc.scale()
    return float(-D[pos | neg].mean()) / tc.scale()


def asymmetry(ir, call, tc: TruthContext):
    d, D = _delta(ir, call.params["operator"], tc.params(), tc.model)
    pos = d > 1e-9
    return float(np.mean([(D[np.isclose(d, x)][0] - D[np.isclose(d, -x)][0]) / 2 for x in d[pos]])) / tc.scale()


def curve(ir, call, tc: TruthContext):
    op, d, _ = _grid(ir, call.params["operator"])
    d, D = _delta(ir, call.params["operator"], tc.params(), tc.model)
    dose = call.params.get("dose")
    j = int(np.argmax(np.abs(d))) if dose is None else int(np.argmin(np.abs(d - (float(dose) - op.identity))))
    return float(D[j]) / tc.scale()


def trend(ir, call, tc: TruthContext):
    d, D = _delta(ir, call.params["operator"], tc.params(), tc.model)
    keep = np.abs(d) > 1e-9
    x, y = d[keep], D[keep]
    if np.ptp(x) == 0:
        return None
    return float(np.polyfit(x, y, 1)[0]) / tc.scale()


def placebo_ratio(ir, call, tc: TruthContext):
    fo = fidelity_index(ir, StatCallIR(name="fidelity_index", version="1",
                                       params={"operator": call.params["operator"]}), tc)
    fp = fidelity_index(ir, StatCallIR(name="fidelity_index", version="1",
                                       params={"operator": call.params["placebo"]}), tc)
    return fo / fp if fo > 0 and fp > 0 else None


def attribute_effect(ir, call, tc: TruthContext):
    t = tc.params()
    if t["fidelity"] or t["asymmetry"]:
        return None
    return (t["slope"] if t.get("slope_by") == call.params["measure"] else 0.0) / tc.scale()


def artifact_effect(ir, call, tc: TruthContext):
    t = tc.params()
    if t["asymmetry"] or t["slope"]:
        return None
    return -t["fidelity"] / tc.model.cov_scale / tc.scale()


def _dose_symmetric_scorer(ir, call, tc: TruthContext) -> bool:
    t = tc.params()
    return not t["asymmetry"] and not (t.get("slope_by") and t["slope"])


def net_drift(ir, call, tc: TruthContext):
    """0 for a scorer symmetric in the dose (the planted measure is linear in it); else no closed form."""
    return 0.0 if _dose_symmetric_scorer(ir, call, tc) else None


def directional_drift(ir, call, tc: TruthContext):
    return 0.0 if _dose_symmetric_scorer(ir, call, tc) else None


def _null(call: StatCallIR) -> float:
    from scoreaudit import registry

    return float(registry.statistics.get(call.name).meta.get("null") or 0.0)


def transfers(ir, call, tc: TruthContext):
    """ρ = (θ_target − null) / (θ_source − null) of the nested statistic."""
    inner = call.inner
    src, dst = call.params.get("source"), call.params.get("target")
    ts, tr = true_value(ir, inner, tc.at(src)), true_value(ir, inner, tc.at(dst))
    if ts is None or tr is None:
        return None
    n = _null(inner)
    return (tr - n) / (ts - n) if ts != n else None


def homogeneous(ir, call, tc: TruthContext, levels: Mapping[str, tuple[str, ...]] | None = None):
    """The largest difference between strata of the nested statistic's truth (0 when homogeneous)."""
    by = call.params["by"]
    levels = levels or tc.truth.get("_levels", {})
    vals = []
    for lv in levels.get(by, ()):
        v = true_value(ir, call.inner, tc.at(stratum=f"{by}={lv}"))
        if v is None:
            return None
        vals.append(v)
    return float(max(vals) - min(vals)) if len(vals) >= 2 else None


def factor_effect(ir, call, tc: TruthContext):
    t = tc.params()
    return 0.0 if not t.get("factor") or not t.get("effect") else None


def group_gap(ir, call, tc: TruthContext):
    t = tc.params()
    return 0.0 if not t.get("factor") or not t.get("effect") else None


# ---------------------------------------------------------------- comparisons (language forms)


def _reading_truths(ir, call, tc: TruthContext) -> tuple[float, float] | None:
    """The truths of a comparison's two readings, each in its own scorer, arm and `where` stratum.

    A `where` on a column the planted arm stratifies by is that stratum's truth; any other `where`
    (a column the planted model does not vary) leaves the arm's truth unchanged.
    """
    from scoreaudit.compiler.ir import readings_of

    levels = tc.truth.get("_levels", {})
    out = []
    for r in readings_of(call):
        strata = [f"{c}={v}" for c, v in r.where if c in levels]
        v = true_value(ir, r.statistic, tc.reading(r.scorer, r.arm, ",".join(strata) or None))
        if v is None:
            return None
        out.append(v)
    return out[0], out[1]


def difference(ir, call, tc: TruthContext):
    """θ_a − θ_b of the two readings' truths (null value 0)."""
    t = _reading_truths(ir, call, tc)
    return None if t is None else float(t[0] - t[1])


def ratio(ir, call, tc: TruthContext):
    """θ_a / θ_b of the two readings' truths (null value 1); None when θ_b is 0 (the ratio is undefined)."""
    t = _reading_truths(ir, call, tc)
    return None if t is None or t[1] == 0 else float(t[0] / t[1])


FORM_TRUTHS = {"difference": difference, "ratio": ratio}


# ---------------------------------------------------------------- pairs (stats/planted.py: _pairs_arm)


def _rounded(mean: float, sd: float, step: float, k: np.ndarray) -> np.ndarray:
    """P(round(X/step) = k) for X ~ N(mean, sd²) at the integers k."""
    from scipy.special import ndtr

    v = k * step
    return ndtr((v + step / 2 - mean) / sd) - ndtr((v - step / 2 - mean) / sd)


def _pair_sides(t: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, P preferred, P other) of the rounded scores on one grid of multiples of `step` (±12 SD;
    the mass left out is below 1e-30): preferred N(G, σ²), other N(0, σ²), σ² = 1 + noise²."""
    sd, step = math.sqrt(1.0 + t["noise"] ** 2), float(t["step"])
    lo, hi = min(0.0, t["gap"]) - 12 * sd, max(0.0, t["gap"]) + 12 * sd
    k = np.arange(math.floor(lo / step), math.ceil(hi / step) + 1)
    return k * step, _rounded(t["gap"], sd, step, k), _rounded(0.0, sd, step, k)


def pairwise_accuracy(ir, call, tc: TruthContext):
    """P(s(preferred) > s(other)) + ½ P(tie): Φ(G / sqrt(2(1 + noise²))) for continuous scores (ties have
    probability 0); with a score resolution `step`, Σ_k P(pref = k)·(P(other < k) + ½ P(other = k))."""
    from scipy.special import ndtr

    t = tc.params()
    if not t["step"]:
        return float(ndtr(t["gap"] / math.sqrt(2.0 * (1.0 + t["noise"] ** 2))))
    _, px, py = _pair_sides(t)
    return float(px @ (np.cumsum(py) - py + 0.5 * py))


def mean_gap(ir, call, tc: TruthContext):
    """G (raw) or G over the pooled SD of both sides, sqrt(1 + noise² + G²/4) (a two-component mixture);
    with a score resolution `step`, the same moments of the rounded sides."""
    t = tc.params()
    if t["step"]:
        v, px, py = _pair_sides(t)
        mx, my = float(v @ px), float(v @ py)
        if tc.raw:
            return mx - my
        var = 0.5 * (float((v - mx) ** 2 @ px) + float((v - my) ** 2 @ py)) + (mx - my) ** 2 / 4.0
        return (mx - my) / math.sqrt(var)
    if tc.raw:
        return float(t["gap"])
    return float(t["gap"] / math.sqrt(1.0 + t["noise"] ** 2 + t["gap"] ** 2 / 4.0))


# ---------------------------------------------------------------- labels and ratings (stats/planted.py)


def _rating_r(call, tc: TruthContext) -> float | None:
    """Pearson r of the score with the planted rating column h (Var h = 1): R / sqrt(1 + noise² + R²).

    None for a column the planted model does not rate by (its relation to the score is not planted)."""
    t = tc.params()
    if call.params.get("column") != t.get("rated_by") or t["factor"] or t["effect"]:
        return None
    R = float(t["rating"])
    return R / math.sqrt(1.0 + t["noise"] ** 2 + R * R)


def pearson(ir, call, tc: TruthContext):
    """The marginal correlation of (score, h): both normal, so Pearson's population r (clusters share a part of
    h and, through R·h, of the score; the correlation over all images is still r)."""
    return _rating_r(call, tc)


def spearman(ir, call, tc: TruthContext):
    """Spearman's population value for a bivariate normal: (6/π)·asin(r/2)."""
    r = _rating_r(call, tc)
    return None if r is None else float(6.0 / math.pi * math.asin(r / 2.0))


def kendall(ir, call, tc: TruthContext):
    """Kendall's τ for a bivariate normal: (2/π)·asin(r)."""
    r = _rating_r(call, tc)
    return None if r is None else float(2.0 / math.pi * math.asin(r))


def agreement(ir, call, tc: TruthContext):
    """Agreement with a planted 0/1 label on an images arm: the label column is the planted factor (a stratum
    with levels "0" and "1", drawn uniformly, so P(y = 1) = ½) and the score is b + E·y + ε, i.e. N(E·y, σ²),
    σ² = 1 + noise². AUROC = Φ(E / (σ√2)); with one cut point c (call 1 when score ≥ c), a = P(call 1 | y = 1)
    = Φ((E − c)/σ), b = P(call 1 | y = 0) = Φ(−c/σ): accuracy ½(a + 1 − b), kappa (p_o − p_e)/(1 − p_e) with
    p_e from the margins, F1 of class 1 = 2·½a / (2·½a + ½b + ½(1 − a)). None on pairs arms, for several cut
    points, a label column other than the planted factor, or any other planted part."""
    from scipy.special import ndtr

    t = tc.params()
    arm = ir.arms.get(tc.arm) if tc.arm else None
    if arm is None or arm.source == "pairs" or t["factor"] != call.params.get("label") or str(t["level"]) != "1" \
            or t["rated_by"] or t["fidelity"] or t["asymmetry"]:
        return None
    levels = tuple(tc.truth.get("_levels", {}).get(t["factor"], ("0", "1")))
    if sorted(map(str, levels)) != ["0", "1"]:
        return None
    sd = math.sqrt(1.0 + t["noise"] ** 2)
    E = float(t["effect"])
    metric = call.params.get("metric", "accuracy")
    if metric == "auroc":
        return float(ndtr(E / (sd * math.sqrt(2.0))))
    cut = call.params.get("threshold")
    if cut is None or (np.ndim(cut) and len(cut) != 1):
        return None
    c = float(np.atleast_1d(cut)[0])
    a, b = float(ndtr((E - c) / sd)), float(ndtr(-c / sd))
    p_o = 0.5 * a + 0.5 * (1 - b)
    if metric == "accuracy":
        return p_o
    if metric == "f1":
        return a / (a + 0.5 * b + 0.5 * (1 - a))
    if metric == "kappa" and not call.params.get("weights"):
        call1 = 0.5 * a + 0.5 * b
        p_e = 0.5 * call1 + 0.5 * (1 - call1)
        return (p_o - p_e) / (1 - p_e)
    return None
