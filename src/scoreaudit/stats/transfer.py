"""Cross-arm transfer of a reading from a synthetic to a real arm (METHODS: cross-arm transfer).

The estimator computes both readings; the class needs each reading's q, which
is taken over the family of *all transfer readings of the audit* (two per
transfers cell, the audit's correction), so `classify` runs after every cell
is estimated (see `stats.claims`). A reading's p is two-sided against 0:
2·min(p(θ ≤ 0), p(θ ≥ 0)) from the reading's own Estimate. The cell's p for
the audit family is the intersection–union p of "both readings non-zero",
max(p_S, p_R). Attenuation's difference test is one-sided at alpha (raw):
d = sign(θ_S)·(θ_S − θ_R) > 0, from paired replicates of the two arms'
independent bootstraps (or a normal test when a reading has only an SE).
"""

from __future__ import annotations

import numpy as np
from scipy import stats as sps

from scoreaudit.compiler.ir import StatCallIR
from scoreaudit.stats.context import StatContext, StatError
from scoreaudit.stats.estimate import Estimate, estimator

CLASS_OUTCOME = {"consistent": "supported", "reversal": "refuted", "attenuation": "refuted",
                 "collapse": "refuted", "emergence": "refuted", "null": "inconclusive"}


def inner_call(call: StatCallIR) -> StatCallIR:
    inner = call.inner if call.inner is not None else call.params.get("statistic")
    if isinstance(inner, dict):
        inner = StatCallIR.model_validate(inner)
    if inner is None:
        raise StatError(f"{call.name}(...) needs a statistic to wrap")
    return inner


def two_sided_p(est: Estimate) -> float:
    p = 2 * min(est.p_greater(0.0), est.p_less(0.0))
    return float(min(1.0, p)) if np.isfinite(p) else float("nan")


def difference_p(s: Estimate, r: Estimate) -> float:
    """One-sided p of sign(θ_S)·(θ_S − θ_R) ≤ 0."""
    sign = 1.0 if s.estimate >= 0 else -1.0
    if s.boot is not None and r.boot is not None and len(s.boot) == len(r.boot):
        d = sign * (s.boot - r.boot)
        d = d[np.isfinite(d)]
        if len(d):
            return float((1 + np.sum(d <= 0)) / (len(d) + 1))
    se = [e.se if e.se is not None else (np.nanstd(e.boot, ddof=1) if e.boot is not None else np.nan)
          for e in (s, r)]
    z = sign * (s.estimate - r.estimate) / np.sqrt(se[0] ** 2 + se[1] ** 2)
    return float(sps.norm.sf(z)) if np.isfinite(z) else float("nan")


def _difference_ci(s: Estimate, r: Estimate, level: float) -> tuple[float, float]:
    """Percentile CI of θ_R − θ_S from paired replicates of the two arms' independent bootstraps."""
    if s.boot is not None and r.boot is not None and len(s.boot) == len(r.boot):
        d = (r.boot - s.boot)
        d = d[np.isfinite(d)]
        if len(d):
            a = (1 - level) / 2
            lo, hi = np.quantile(d, [a, 1 - a])
            return float(lo), float(hi)
    return float("nan"), float("nan")


@estimator("transfers")
def transfers(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    p = call.params
    source = p.get("source", p.get("from"))
    target = p.get("target", p.get("to"))
    inner = inner_call(call)
    es, er = ctx.evaluate(inner, source, scorer), ctx.evaluate(inner, target, scorer)
    level = 1 - ctx.alpha
    det = {"statistic": inner.name, "params": dict(inner.params), "source": source, "target": target,
           "theta_source": es.estimate, "theta_target": er.estimate,
           "ci_source": list(es.interval(level)), "ci_target": list(er.interval(level)), "ci_level": level,
           "p_source": two_sided_p(es), "p_target": two_sided_p(er),
           "p_difference": difference_p(es, er) if not (es.undefined or er.undefined) else float("nan")}
    if es.undefined or er.undefined:
        return Estimate(float("nan"), "fixed", undefined=es.undefined or er.undefined, detail=det)
    det["difference"] = er.estimate - es.estimate
    det["difference_ci_low"], det["difference_ci_high"] = _difference_ci(es, er, level)
    p_iut = max(det["p_source"], det["p_target"])
    return Estimate(er.estimate - es.estimate, "fixed", p_fixed=p_iut, detail=det)


def classify(det: dict, q_source: float, q_target: float, alpha: float) -> str:
    """The transfer class from the two readings, their q and the difference test."""
    sig_s = bool(np.isfinite(q_source) and q_source <= alpha)
    sig_r = bool(np.isfinite(q_target) and q_target <= alpha)
    ts, tr = det["theta_source"], det["theta_target"]
    if sig_s and sig_r:
        if np.sign(ts) != np.sign(tr):
            return "reversal"
        pd_ = det.get("p_difference", float("nan"))
        if abs(tr) < abs(ts) and np.isfinite(pd_) and pd_ <= alpha:
            return "attenuation"
        return "consistent"
    if sig_s:
        return "collapse"
    if sig_r:
        return "emergence"
    return "null"
