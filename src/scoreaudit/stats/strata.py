"""Population heterogeneity: `homogeneous(θ, by: s)` (METHODS).

Each stratum is a sub-arm (its images, its clusters, a bootstrap derived from
(seed, arm, stratum)); the wrapped statistic runs unchanged on it. The omnibus
test compares the per-cluster contrasts across strata (Kruskal–Wallis, or
one-way ANOVA with `test: anova`); its p goes into the audit family, and the
claim is resolved after multiplicity (`stats.claims`): refuted when q ≤ alpha,
supported when q > alpha and every stratum's (1 − alpha) CI overlaps the
pooled (1 − alpha) CI, else inconclusive. The largest pairwise contrast
(Welch t-test on the per-cluster contrasts, raw p) is reported as post hoc.
The cell's estimate is the spread (max − min) of the stratum estimates.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy import stats as sps

from scoreaudit.compiler.ir import StatCallIR
from scoreaudit.stats.context import StatContext, StatError
from scoreaudit.stats.estimate import Estimate, estimator
from scoreaudit.stats.transfer import inner_call


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return bool(np.all(np.isfinite([*a, *b])) and a[0] <= b[1] and b[0] <= a[1])


@estimator("homogeneous")
def homogeneous(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    by = call.params["by"]
    test = call.params.get("test", "kruskal")
    inner = inner_call(call)
    a = ctx.arm(arm)
    if by not in a.images.columns:
        raise StatError(f"arm {a.name!r} has no column {by!r} to stratify by")
    level = 1 - ctx.alpha
    pooled = ctx.evaluate(inner, a, scorer)
    if pooled.undefined:
        raise StatError(pooled.undefined)
    pooled_ci = pooled.interval(level)
    strata, skipped = [], []
    values = a.images[by]
    for level_value in sorted(values.dropna().astype(str).unique()):
        sub = a.subset(f"{by}={level_value}", (values.astype(str) == level_value).to_numpy() & values.notna().to_numpy())
        est = ctx.evaluate(inner, sub, scorer)
        if est.undefined or est.contrasts is None or len(est.contrasts) < 2:
            skipped.append({"stratum": level_value, "reason": est.undefined or "fewer than 2 clusters"})
            continue
        ci = est.interval(level)
        strata.append({"stratum": level_value, "estimate": est.estimate, "ci_low": ci[0], "ci_high": ci[1],
                       "n_clusters": int(len(est.contrasts)), "overlaps_pooled": _overlap(ci, pooled_ci),
                       "_contrasts": np.asarray(est.contrasts)})
    if len(strata) < 2:
        raise StatError(f"homogeneous(by: {by}) needs at least 2 strata with 2+ clusters on {a.name!r}")
    groups = [s["_contrasts"] for s in strata]
    omni = sps.f_oneway(*groups) if test == "anova" else sps.kruskal(*groups)
    pairs = []
    for s1, s2 in combinations(strata, 2):
        pairs.append((abs(s1["estimate"] - s2["estimate"]), s1, s2))
    _, s1, s2 = max(pairs, key=lambda x: x[0])
    post = sps.ttest_ind(s1["_contrasts"], s2["_contrasts"], equal_var=False)
    ests = [s["estimate"] for s in strata]
    det = {"by": by, "test": test, "statistic": inner.name, "params": dict(inner.params),
           "omnibus_statistic": float(omni.statistic), "omnibus_p": float(omni.pvalue),
           "pooled": pooled.estimate, "pooled_ci": list(pooled_ci), "ci_level": level,
           "strata": [{k: v for k, v in s.items() if not k.startswith("_")} for s in strata],
           "skipped": skipped, "all_overlap": all(s["overlaps_pooled"] for s in strata),
           "pooled_ci_low": pooled_ci[0], "pooled_ci_high": pooled_ci[1],
           "largest_contrast": {"a": s1["stratum"], "b": s2["stratum"],
                                "difference": s1["estimate"] - s2["estimate"], "p": float(post.pvalue),
                                "test": "Welch t-test on per-cluster contrasts",
                                "label": "selected after the fact (post hoc), raw p"}}
    return Estimate(float(max(ests) - min(ests)), "fixed", p_fixed=float(omni.pvalue), detail=det)


def stratum_contrasts(ctx: StatContext, call: StatCallIR, arm: str, scorer: str) -> dict[str, np.ndarray]:
    """Per-stratum per-cluster contrasts (for verify / tables)."""
    by = call.params["by"]
    inner = inner_call(call)
    a = ctx.arm(arm)
    values = a.images[by]
    out = {}
    for v in sorted(values.dropna().astype(str).unique()):
        sub = a.subset(f"{by}={v}", (values.astype(str) == v).to_numpy() & values.notna().to_numpy())
        est = ctx.evaluate(inner, sub, scorer)
        if est.contrasts is not None:
            out[v] = np.asarray(est.contrasts)
    return out
