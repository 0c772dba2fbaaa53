"""What every estimator returns, and how a claim's p-value is taken from it.

An estimator (registered with `@estimator("fidelity_index")`) computes one
statistic for one (scorer, arm) and returns an `Estimate`. The hypothesis
layer never looks inside: it asks `estimate.p_value(test)` for the claim's
one-sided or equivalence p, and reads the (1 − 2·alpha) interval from
`estimate.interval(level)`. So a statistic decides how it is tested
(t-test over cluster contrasts, Wald, binomial, bootstrap inversion) in one
place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping

import numpy as np

# p-value methods:
#   ttest      one-sample t-test of `contrasts` (per-cluster values) against the threshold
#   wilcoxon   signed-rank test of contrasts − threshold
#   bootstrap  p = (1 + #{θ*_b on the null side of t}) / (B + 1), from `boot`
#   normal     Wald z from `se` (e.g. cluster-robust OLS): Φ((t − θ)/se) etc.
#   fixed      the estimator gives `p_fixed` (claims that decide themselves, analytic tests
#              with no threshold, e.g. Friedman for rank_spread > 0)
PMethod = Literal["ttest", "wilcoxon", "bootstrap", "normal", "fixed"]


@dataclass(frozen=True)
class Estimate:
    estimate: float
    method: PMethod
    contrasts: np.ndarray | None = None  # per-cluster contrasts the test used
    boot: np.ndarray | None = None  # B bootstrap replicates of the estimate (shared index matrix)
    se: float | None = None
    df: float | None = None
    p_fixed: float | None = None
    claim_outcome: str | None = None  # for returns="claim": supported | refuted | inconclusive
    undefined: str | None = None  # reason the estimate is undefined (then the cell is inconclusive)
    detail: Mapping[str, Any] = field(default_factory=dict)  # extra numbers for the report
    # Optional analytic one-sided test: p_fn(t, side) with side "greater" (H0: θ ≤ t) or "less".
    # Used by statistics whose test depends on the threshold in a way the methods above do not
    # cover (exact binomial against t, Fisher-z correlation tests, Wald p for "θ > 0").
    p_fn: Callable[[float, str], float] | None = field(default=None, compare=False, repr=False)

    # ------------------------------------------------------------ intervals

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Two-sided percentile bootstrap interval (or Wald / t when there is no bootstrap)."""
        if self.undefined is not None or not np.isfinite(self.estimate):
            return (float("nan"), float("nan"))
        a = (1 - level) / 2
        if self.boot is not None and len(self.boot):
            b = self.boot[np.isfinite(self.boot)]
            if len(b) == 0:
                return (float("nan"), float("nan"))
            lo, hi = np.quantile(b, [a, 1 - a])
            return (float(lo), float(hi))
        if self.se is not None:
            from scipy import stats

            q = stats.t.ppf(1 - a, self.df) if self.df else stats.norm.ppf(1 - a)
            return (self.estimate - q * self.se, self.estimate + q * self.se)
        return (float("nan"), float("nan"))

    # ------------------------------------------------------------ p-values

    def p_greater(self, t: float) -> float:
        """p of the one-sided test H0: θ ≤ t (small when θ is clearly above t)."""
        return self._one_sided(t, "greater")

    def p_less(self, t: float) -> float:
        """p of the one-sided test H0: θ ≥ t."""
        return self._one_sided(t, "less")

    def p_equivalence(self, low: float, high: float) -> float:
        """Two one-sided tests: the larger of p(θ ≤ low) and p(θ ≥ high)."""
        return max(self.p_greater(low), self.p_less(high))

    def _one_sided(self, t: float, side: str) -> float:
        if self.undefined is not None:
            return float("nan")
        if self.p_fn is not None:
            p = self.p_fn(t, side)
            if p is not None:
                return float(p)
        m = self.method
        if m == "fixed":
            return float("nan") if self.p_fixed is None else float(self.p_fixed)
        if m == "bootstrap":
            b = self.boot[np.isfinite(self.boot)] if self.boot is not None else np.array([])
            if len(b) == 0:
                return float("nan")
            n_null = np.sum(b <= t) if side == "greater" else np.sum(b >= t)
            return float((1 + n_null) / (len(b) + 1))
        if m == "normal":
            from scipy import stats

            z = (self.estimate - t) / self.se
            dist = stats.t(self.df) if self.df else stats.norm
            return float(dist.sf(z) if side == "greater" else dist.cdf(z))
        x = np.asarray(self.contrasts, dtype=float)
        x = x[np.isfinite(x)]
        if len(x) < 2:
            return float("nan")
        from scipy import stats

        alternative = "greater" if side == "greater" else "less"
        if m == "ttest":
            return float(stats.ttest_1samp(x, t, alternative=alternative).pvalue)
        if m == "wilcoxon":
            d = x - t
            if np.all(d == 0):
                return 1.0
            return float(stats.wilcoxon(d, alternative=alternative).pvalue)
        raise ValueError(f"unknown p-value method {m!r}")


# ---------------------------------------------------------------- registry of estimators

EstimatorFn = Callable[..., Estimate]
ESTIMATORS: dict[str, EstimatorFn] = {}


def estimator(name: str) -> Callable[[EstimatorFn], EstimatorFn]:
    """Attach the implementation of a statistic declared in `scoreaudit.plugins.statistics`."""

    def decorate(fn: EstimatorFn) -> EstimatorFn:
        ESTIMATORS[name] = fn
        return fn

    return decorate
