"""Degenerate inputs (spec/methods.md, "Ties, discreteness and degenerate inputs"): one guard for every
statistic kind.

A cell whose inputs leave its test or interval without anything to work on
is undefined, with the reason in words, rather than a number that looks like
a result: fewer than two clusters, per-cluster contrasts with zero variance
(a t-test of a constant), a standard error or a bootstrap distribution with
no spread, all judged against the scale of the statistic's values, so that
values of order 1e-17 left by floating-point cancellation count as zero.
`StatContext.evaluate` applies `degeneracy` to every estimate, nested ones
(the groups of `correlate`) included, so no statistic needs its own check.
"""

from __future__ import annotations

import numpy as np

from scoreaudit.stats.estimate import Estimate

#: A spread below REL_TOL × the values' scale is numerically zero.
REL_TOL = 1e-12


def numerically_constant(values, scale: float = 1.0) -> bool:
    """Whether the finite values have no spread beyond floating-point noise, relative to `scale` and to
    their own magnitude (a constant input, or noise around zero of order 1e-17)."""
    x = np.asarray(values, float)
    x = x[np.isfinite(x)]
    if not len(x):
        return False
    ref = max(float(scale) if np.isfinite(scale) and scale > 0 else 1.0, float(np.max(np.abs(x))))
    return float(np.ptp(x)) <= REL_TOL * ref


def degeneracy(est: Estimate, scale: float = 1.0) -> str | None:
    """Why `est` is degenerate (words), or None. `scale` is the typical size of the statistic's values
    (1 for shares, ranks, correlations and SD units; the scores' SD for raw score units)."""
    if est.undefined is not None or not np.isfinite(est.estimate):
        return None
    n = (est.detail or {}).get("n_clusters")
    if isinstance(n, (int, np.integer)) and n < 2:
        return f"fewer than two clusters ({int(n)}): no interval or test"
    if est.method in ("ttest", "wilcoxon") and est.contrasts is not None:
        x = np.asarray(est.contrasts, float)
        if np.isfinite(x).sum() < 2:
            return "fewer than two clusters with a value: no interval or test"
        if numerically_constant(x, scale):
            return ("every cluster gives the same value (zero variance between clusters): the test and its "
                    "interval are undefined")
    if est.method == "normal" and est.se is not None and not (est.se > REL_TOL * max(scale, abs(est.estimate))):
        return "its standard error is zero (or numerically zero): the test and its interval are undefined"
    # a statistic with its own analytic test (exact binomial, sign-flip) keeps it: a bootstrap that never
    # moves only makes its interval a point (every pair right is a finding, not a degenerate input)
    if est.method == "bootstrap" and est.p_fn is None and est.boot is not None \
            and numerically_constant(est.boot, scale):
        return ("the cluster bootstrap shows no variation (every replicate gives the same value): the "
                "interval and test are undefined")
    return None
