"""Cross-arm transfer as an equivalence claim on ρ = θ_target / θ_source (spec/methods.md).

Both readings are centred on the nested statistic's null value (0 for
effects, 0.5 for accuracies: the registry's `null`) before the ratio is
formed. The two arms have independent bootstraps (each arm's own count
matrix), so replicates ρ*_b = (θ*_R,b − n) / (θ*_S,b − n) pair them
index by index; the jackknife for BCa leaves out one cluster of either arm.
A reading without bootstrap replicates (Wilson or Wald intervals) gets normal
replicates θ + SE·z from a seeded generator.

Outcome (`transfers(θ, from: S, to: R, margin: k)`):
- supported when q ≤ alpha for the intersection–union p
  max(p_S, p_R, p_equivalence) — both readings non-zero, and ρ within
  [1/k, k] by two one-sided tests of ρ — and the readings share a sign;
- refuted when ρ's (1 − 2α) interval lies entirely outside [1/k, k]
  (entirely below 0 is a reversal);
- otherwise inconclusive. A reading that is not significant on one arm
  (collapse, emergence) is never by itself a refutation.
The descriptive class uses each reading's q over the family of all transfer
readings of the audit (two per cell) and ρ's (1 − 2α) interval.
"""

from __future__ import annotations

import numpy as np

from scoreaudit.compiler.ir import StatCallIR
from scoreaudit.compiler.settings import claim_level
from scoreaudit.stats.context import StatContext, StatError
from scoreaudit.stats.estimate import Estimate

CLASSES = ("reversal", "attenuation", "amplification", "consistent", "collapse", "emergence", "null")


def inner_call(call: StatCallIR) -> StatCallIR:
    inner = call.inner if call.inner is not None else call.params.get("statistic")
    if isinstance(inner, dict):
        inner = StatCallIR.model_validate(inner)
    if inner is None:
        raise StatError(f"{call.name}(...) needs a statistic to wrap")
    return inner


def null_of(name: str) -> float:
    from scoreaudit import registry

    registry.load_plugins()
    n = registry.statistics.get(name).meta.get("null")
    if n is None:
        raise StatError(f"statistic {name!r} has no null value, so it cannot be transferred")
    return float(n)


def two_sided_p(est: Estimate, null: float = 0.0) -> float:
    p = 2 * min(est.p_greater(null), est.p_less(null))
    return float(min(1.0, p)) if np.isfinite(p) else float("nan")


def _replicates(est: Estimate, n_boot: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None]:
    """(bootstrap replicates, jackknife values) of a reading; normal replicates when it has none."""
    if est.boot is not None and len(est.boot):
        return np.asarray(est.boot, float), est.jack
    lo, hi = est.interval(0.6827)
    se = (hi - lo) / 2 if np.isfinite(lo) and np.isfinite(hi) else (est.se or float("nan"))
    return est.estimate + se * rng.standard_normal(n_boot), None


def transfers(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    p = call.params
    source = p.get("source", p.get("from"))
    target = p.get("target", p.get("to"))
    k = float(p.get("margin") or 2.0)
    inner = inner_call(call)
    null = null_of(inner.name)
    es, er = ctx.evaluate(inner, source, scorer), ctx.evaluate(inner, target, scorer)
    level = 1 - ctx.alpha
    det = {"statistic": inner.name, "params": dict(inner.params), "source": source, "target": target,
           "null": null, "margin": k, "theta_source": es.estimate, "theta_target": er.estimate,
           "ci_source": list(es.interval(level)), "ci_target": list(er.interval(level)), "ci_level": level,
           "p_source": two_sided_p(es, null), "p_target": two_sided_p(er, null)}
    if es.undefined or er.undefined:
        return Estimate(float("nan"), "fixed", undefined=es.undefined or er.undefined, detail=det)
    if es.estimate == null:
        return Estimate(float("nan"), "fixed", detail=det,
                        undefined=f"the source reading equals the null value {null:g}: no ratio")
    rng = np.random.default_rng(np.random.SeedSequence([ctx.seed % (2**63), 0x7F, len(source), len(target)]))
    bs, js = _replicates(es, ctx.n_boot, rng)
    br, jr = _replicates(er, ctx.n_boot, rng)
    B = min(len(bs), len(br))
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = (br[:B] - null) / (bs[:B] - null)
        jack = None
        if js is not None and jr is not None:
            jack = np.concatenate([(er.estimate - null) / (np.asarray(js) - null),
                                   (np.asarray(jr) - null) / (es.estimate - null)])
    rho = (er.estimate - null) / (es.estimate - null)
    G = _welch_clusters(es, er, bs[:B], br[:B], null)
    ratio = Estimate(float(rho), "bootstrap", boot=boot, jack=jack, ci=ctx.settings.ci, detail={"n_clusters": G})
    lo, hi = ratio.interval(claim_level(ctx.alpha))
    p_eq = ratio.p_equivalence(1 / k, k)
    det.update(ratio=float(rho), ratio_ci_low=lo, ratio_ci_high=hi, ratio_ci_level=claim_level(ctx.alpha),
               p_equivalence=p_eq, inverse_ratio=float(1 / rho) if rho != 0 else None,
               difference=er.estimate - es.estimate)
    p_iut = max(det["p_source"], det["p_target"], p_eq)
    det["n_clusters"] = G
    return Estimate(float(rho), "bootstrap", boot=boot, jack=jack, p_fixed=p_iut, ci=ctx.settings.ci,
                    detail=det)


def _welch_clusters(es: Estimate, er: Estimate, bs: np.ndarray, br: np.ndarray, null: float) -> int | None:
    """G of ρ's small-sample expansion: 1 + the Welch–Satterthwaite degrees of freedom of the two arms.

    The two arms are resampled independently and can have very different cluster counts (a synthetic
    arm of 10 prompts against 20 real images); the expansion (spec/methods.md) must follow the arm that
    carries the variance, not the pooled count. Delta method: ρ's variance has the parts
    v_S = ρ²·Var(θ*_S)/(θ_S − n)² and v_R = Var(θ*_R)/(θ_S − n)², each with G_k − 1 degrees of freedom.
    """
    gs, gr = es._n_clusters(), er._n_clusters()
    if not gs or not gr:
        return None
    with np.errstate(invalid="ignore", divide="ignore"):
        ds, dr = es.estimate - null, er.estimate - null
        vs = (dr / ds) ** 2 * np.nanvar(bs) / ds**2
        vr = np.nanvar(br) / ds**2
        df = (vs + vr) ** 2 / (vs**2 / max(gs - 1, 1) + vr**2 / max(gr - 1, 1))
    return int(round(df)) + 1 if np.isfinite(df) and df > 0 else min(gs, gr)


def classify(det: dict, q_source: float, q_target: float, alpha: float) -> str:
    """The descriptive transfer class from the two readings' q and ρ's (1 − 2α) interval."""
    sig_s = bool(np.isfinite(q_source) and q_source <= alpha)
    sig_r = bool(np.isfinite(q_target) and q_target <= alpha)
    n = det.get("null", 0.0)
    ts, tr = det["theta_source"] - n, det["theta_target"] - n
    if sig_s and sig_r:
        if np.sign(ts) != np.sign(tr):
            return "reversal"
        lo, hi = det.get("ratio_ci_low", np.nan), det.get("ratio_ci_high", np.nan)
        if np.isfinite(hi) and hi < 1:
            return "attenuation"
        if np.isfinite(lo) and lo > 1:
            return "amplification"
        return "consistent"
    if sig_s:
        return "collapse"
    if sig_r:
        return "emergence"
    return "null"


def outcome(det: dict, q: float, alpha: float) -> str:
    """Equivalence outcome of ρ within [1/k, k] (see the module docstring)."""
    k = det["margin"]
    lo, hi = det.get("ratio_ci_low", np.nan), det.get("ratio_ci_high", np.nan)
    same_sign = np.sign(det["theta_source"] - det["null"]) == np.sign(det["theta_target"] - det["null"])
    if np.isfinite(q) and q <= alpha and same_sign:
        return "supported"
    if np.isfinite(lo) and np.isfinite(hi) and (hi < 1 / k or lo > k):
        return "refuted"
    return "inconclusive"
