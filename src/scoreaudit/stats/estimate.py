"""What every estimator returns, and how a claim's p-value is taken from it.

An estimator (named by its statistic's registry entry, `estimator="module:function"`) computes one
statistic for one (scorer, arm) and returns an `Estimate`. The hypothesis
layer never looks inside: it asks `estimate.p_value(test)` for the claim's
one-sided or equivalence p, and reads the (1 − 2·alpha) interval from
`estimate.interval(level)`. So a statistic decides how it is tested
(t-test over cluster contrasts, Wald, binomial, bootstrap inversion) in one
place.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

# p-value methods:
#   ttest      one-sample t-test of `contrasts` (per-cluster values) against the threshold;
#              its interval is the matching t interval (one family for support and refutation)
#   wilcoxon   signed-rank test of contrasts − threshold (interval: the bootstrap one, `ci`)
#   bootstrap  inversion of the bootstrap interval of family `ci`:
#                percentile   the level at which the expanded percentile bound reaches t
#                bca          the level at which the expanded BCa bound reaches t (z0 from the
#                             replicates, acceleration from the cluster jackknife `jack`)
#                studentized  t test of (θ − t) / SE, SE = SE*·sqrt(G/(G − 1)), G − 1 df
#              Small-sample expansion (G clusters known): a normal quantile z_q of the nominal
#              level is replaced by sqrt(G/(G − 1))·t_{G−1}(q) (Hesterberg's expanded percentile
#              interval): the bootstrap's plug-in variance is (G − 1)/G of the unbiased one and
#              normal quantiles are too narrow at 20 clusters; for a mean of cluster means the
#              expanded interval is the t interval (spec/methods.md).
#   normal     Wald z (or t with `df`) from `se` (e.g. cluster-robust OLS): Φ((t − θ)/se) etc.
#   fixed      the estimator gives `p_fixed` (claims that decide themselves, analytic tests
#              with no threshold, e.g. Friedman for rank_spread > 0)
PMethod = Literal["ttest", "wilcoxon", "bootstrap", "normal", "fixed"]
CI = Literal["percentile", "bca", "studentized"]


def _z(p: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(p))


def _phi(z: float) -> float:
    from scipy.special import ndtr

    return float(ndtr(z))


def _t_ppf(q: float, df: float | None) -> float:
    """Quantile of Student's t with `df` (the normal's without df): scipy.special's function that
    scipy.stats.t.ppf calls, without importing scipy.stats (a third of a second of every analysis)."""
    if not df:
        return _z(q)
    from scipy.special import stdtrit

    return float(stdtrit(df, q))


def _t_cdf(x: float, df: float | None) -> float:
    """CDF of Student's t with `df` (the normal's without df), as scipy.stats.t.cdf computes it."""
    if not df:
        return _phi(x)
    from scipy.special import stdtr

    return float(stdtr(df, x))


def expanded_z(q: float, G: int | None) -> float:
    """The quantile that replaces Φ⁻¹(q) in bootstrap intervals: sqrt(G/(G−1))·t_{G−1}(q) (Φ⁻¹(q) without G)."""
    if not G or G < 3:
        return _z(q)
    return math.sqrt(G / (G - 1)) * _t_ppf(q, G - 1)


def expanded_level(z: float, G: int | None) -> float:
    """Inverse of `expanded_z`: the nominal level q whose expanded quantile is z."""
    if not G or G < 3:
        return _phi(z)
    return _t_cdf(z / math.sqrt(G / (G - 1)), G - 1)


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
    jack: np.ndarray | None = None  # leave-one-cluster-out estimates (BCa acceleration)
    ci: CI = "bca"  # interval family of bootstrap intervals (the audit's `ci` setting)
    test: str | None = None  # the test's name as cells and reports print it (`method`); None: from `method`
    # Discrete tests: p_floor(t, side) is the smallest one-sided p the design can give (exact binomial,
    # sign-flip); when it exceeds alpha the claim cannot be supported whatever the data (W0423).
    p_floor: Callable[[float, str], float] | None = field(default=None, compare=False, repr=False)
    # A test that depends on the claim's threshold (pairwise accuracy: exact binomial at 0.5, Wilson score
    # elsewhere): test_at(threshold) names it (None from it: `test_name`); threshold None for equivalence.
    test_at: Callable[[float | None], str] | None = field(default=None, compare=False, repr=False)

    def test_name_for(self, test) -> str:
        """The test's name for one claim (`TestIR`): `test_at` of its threshold where given, else `test_name`."""
        if self.test_at is not None:
            thr = test.threshold if test.kind in ("greater", "less") else None
            name = self.test_at(None if thr is None else float(thr))
            if name is not None:  # None: this threshold's p is the interval's own inversion
                return name
        return self.test_name

    def smallest_p(self, kind: str, threshold: float | None = None, low: float | None = None,
                   high: float | None = None) -> float | None:
        """The smallest p this cell's test can reach for a claim of `kind`; None when not discrete.

        A bootstrap inversion's floor is 1/(B + 1); equivalence takes the larger of its two sides."""
        if self.undefined is not None:
            return None
        floor = self.p_floor
        if floor is None and self.method == "bootstrap" and self.p_fn is None and self.boot is not None \
                and len(self.boot):
            b = len(self._finite_boot())

            def floor(t, side):
                return 1.0 / (b + 1)
        if floor is None:
            return None
        if kind == "greater":
            return float(floor(float(threshold), "greater"))
        if kind == "less":
            return float(floor(float(threshold), "less"))
        if kind == "equivalence":
            return float(max(floor(float(low), "greater"), floor(float(high), "less")))
        return None

    @property
    def test_name(self) -> str:
        """What the cell's p and interval come from, in words (results.json and the report print it)."""
        if self.test:
            return self.test
        fam = self.family
        if self.method == "ttest":
            return "t over clusters" if fam == "t" else "t"
        if self.method == "bootstrap":
            return f"cluster bootstrap ({fam} inversion)"
        if self.method == "normal":
            return "t (cluster-robust SE)" if self.df else "normal (Wald)"
        return {"wilcoxon": "Wilcoxon signed-rank", "fixed": "own test"}.get(self.method, str(self.method))

    @property
    def standard_error(self) -> float | None:
        """The estimate's standard error, so every cell has one (cells.se): the model's own (`se`); else, for
        the mean of per-cluster contrasts, their sd / √G (the t test's); else the bootstrap replicates'
        standard deviation; None when the estimate is undefined or none of these exists."""
        if self.undefined is not None or not np.isfinite(self.estimate):
            return None
        if self.se is not None:
            return float(self.se) if np.isfinite(self.se) else None
        c = None if self.contrasts is None else np.asarray(self.contrasts, dtype=float)
        if c is not None and len(c) >= 2 and np.isclose(c.mean(), self.estimate, rtol=1e-9, atol=1e-12):
            return float(c.std(ddof=1) / np.sqrt(len(c)))
        b = self._finite_boot()
        return float(b.std(ddof=1)) if len(b) >= 2 else None

    def with_ci(self, ci: CI) -> Estimate:
        from dataclasses import replace

        return replace(self, ci=ci)

    # ------------------------------------------------------------ bootstrap helpers

    def _finite_boot(self) -> np.ndarray:
        if self.boot is None:
            return np.array([])
        b = np.asarray(self.boot, dtype=float)
        return b[np.isfinite(b)]

    @property
    def family(self) -> str:
        """The interval family that decides this cell (the test's own, so support and refutation agree)."""
        if self.method == "ttest" and self.contrasts is not None:
            return "t"
        if self.boot is not None and len(self.boot):
            if self.ci == "bca" and not self._bca_ok():
                return "percentile"
            return self.ci
        if self.se is not None:
            return "wald"
        return "none"

    def _bca_ok(self) -> bool:
        j = self.jack
        return j is not None and len(j) >= 3 and np.isfinite(j).sum() >= 3

    def _bca_params(self) -> tuple[float, float]:
        """(z0, a): bias correction from the replicates, acceleration from the jackknife."""
        b = self._finite_boot()
        share = (np.sum(b < self.estimate) + 0.5 * np.sum(b == self.estimate)) / len(b)
        share = min(max(share, 0.5 / len(b)), 1 - 0.5 / len(b))
        z0 = _z(share)
        j = np.asarray(self.jack, dtype=float)
        j = j[np.isfinite(j)]
        d = j.mean() - j
        den = 6.0 * float(np.sum(d**2)) ** 1.5
        a = float(np.sum(d**3) / den) if den > 0 else 0.0
        return z0, a

    def _n_clusters(self) -> int | None:
        n = self.detail.get("n_clusters") if self.detail else None
        if n is None and self.jack is not None:
            n = int(np.isfinite(self.jack).sum())
        if n is None and self.contrasts is not None:
            n = int(np.isfinite(self.contrasts).sum())
        return int(n) if n else None

    def _boot_t(self) -> tuple[float, float]:
        """(SE, df) of the studentized interval: bootstrap SD × sqrt(G/(G − 1)), G − 1 degrees of freedom."""
        b = self._finite_boot()
        G = self._n_clusters()
        se = float(np.std(b, ddof=1)) if len(b) > 1 else float("nan")
        if G and G >= 3:
            se *= math.sqrt(G / (G - 1))  # the bootstrap's plug-in variance is (G − 1)/G of the unbiased one
        return se, float(max((G or 2) - 1, 1))

    # ------------------------------------------------------------ intervals

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Two-sided interval of the cell's family (t, BCa, percentile, studentized or Wald)."""
        if self.undefined is not None or not np.isfinite(self.estimate):
            return (float("nan"), float("nan"))
        a = (1 - level) / 2
        fam = self.family
        if fam == "t":
            x = np.asarray(self.contrasts, dtype=float)
            x = x[np.isfinite(x)]
            if len(x) < 2:
                return (float("nan"), float("nan"))
            q = _t_ppf(1 - a, len(x) - 1) * np.std(x, ddof=1) / np.sqrt(len(x))
            return (self.estimate - q, self.estimate + q)
        if fam in ("percentile", "bca", "studentized"):
            b = self._finite_boot()
            if len(b) == 0:
                return (float("nan"), float("nan"))
            G = self._n_clusters()
            if fam == "percentile":
                lo, hi = np.quantile(b, [_phi(expanded_z(a, G)), _phi(expanded_z(1 - a, G))])
                return (float(lo), float(hi))
            if fam == "studentized":
                se, df = self._boot_t()
                q = _t_ppf(1 - a, df) * se
                return (self.estimate - q, self.estimate + q)
            z0, acc = self._bca_params()
            levels = []
            for zq in (expanded_z(a, G), expanded_z(1 - a, G)):
                w = z0 + zq
                levels.append(_phi(z0 + w / (1 - acc * w)))
            if not np.all(np.isfinite(levels)):  # bias or acceleration not a number (overflowing replicates)
                return (float("nan"), float("nan"))
            lo, hi = np.quantile(b, levels)
            return (float(lo), float(hi))
        if fam == "wald":
            q = _t_ppf(1 - a, self.df)
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

    def _bootstrap_p(self, t: float, side: str) -> float:
        b = self._finite_boot()
        if len(b) == 0:
            return float("nan")
        fam = self.family
        if fam == "studentized":
            se, df = self._boot_t()
            if not se > 0:
                return float("nan")
            z = (self.estimate - t) / se
            return _t_cdf(-z, df) if side == "greater" else _t_cdf(z, df)
        if fam == "bca":
            z0, acc = self._bca_params()
            share = (np.sum(b <= t) + 0.5) / (len(b) + 1)
            w = _z(share) - z0
            den = 1 + acc * w
            zl = (w / den if den > 0 else (np.inf if w > 0 else -np.inf)) - z0
            p = expanded_level(zl, self._n_clusters())  # the level at which the lower BCa bound reaches t
            p = min(max(p, 1.0 / (len(b) + 1)), 1.0)
            return float(p) if side == "greater" else float(min(max(1 - p, 1.0 / (len(b) + 1)), 1.0))
        n_null = np.sum(b <= t) if side == "greater" else np.sum(b >= t)
        p = float((1 + n_null) / (len(b) + 1))
        G = self._n_clusters()
        if G and G >= 3 and p < 1.0:  # the level at which the expanded percentile bound reaches t
            p = min(max(expanded_level(_z(p), G), 1.0 / (len(b) + 1)), 1.0)
        return p

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
            return self._bootstrap_p(t, side)
        if m == "normal":
            z = (self.estimate - t) / self.se
            return _t_cdf(-z, self.df) if side == "greater" else _t_cdf(z, self.df)
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


# ---------------------------------------------------------------- estimators named by the registry

EstimatorFn = Callable[..., Estimate]
_ESTIMATORS: dict[str, EstimatorFn] = {}


class EstimatorMissing(RuntimeError):
    """A statistic's registry entry names an estimator that cannot be imported: a bug, never an undefined cell."""


def resolve(target: str, what: str) -> Callable[..., Any]:
    """Import "module:function"; any failure raises EstimatorMissing naming `what`."""
    import importlib

    module, _, attr = target.partition(":")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise EstimatorMissing(f"{what}: cannot import {target!r} ({type(e).__name__}: {e})") from e
    if not callable(fn):
        raise EstimatorMissing(f"{what}: {target!r} is not callable")
    return fn


# `difference(a, b)` and `ratio(a, b)` are language forms over two readings (compiler/comparisons.py),
# not registry calls; their estimators are named here. Null values: 0 (difference), 1 (ratio).
FORMS = {"difference": "scoreaudit.stats.comparisons:difference", "ratio": "scoreaudit.stats.comparisons:ratio"}


def estimator_for(name: str) -> EstimatorFn:
    """The estimator of statistic `name`, as its registry entry (plugins/statistics.py) names it."""
    if name not in _ESTIMATORS:
        from scoreaudit import registry

        registry.load_plugins()
        if name in FORMS:
            _ESTIMATORS[name] = resolve(FORMS[name], f"estimator of the `{name}` form")
            return _ESTIMATORS[name]
        if name not in registry.statistics:
            raise EstimatorMissing(f"statistic {name!r} is not declared in the registry")
        target = registry.statistics.get(name).meta.get("estimator")
        if not target:
            raise EstimatorMissing(f"statistic {name!r} declares no estimator")
        _ESTIMATORS[name] = resolve(target, f"estimator of statistic {name!r}")
    return _ESTIMATORS[name]
