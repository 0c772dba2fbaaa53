"""The omnibus tests of `homogeneous()` written out on scipy.special's distribution functions.

Kruskal–Wallis, one-way ANOVA, Friedman, the exact sign test and the F tail are the textbook
formulas that scipy.stats computes (average ranks, the usual tie corrections, two-sided binomial p by
doubling the smaller tail, which is scipy's "as likely or less" rule when p = ½). They live here
because importing scipy.stats costs a third of a second of every analysis that stratifies (issue 33);
tests/stats/test_reference.py holds every function to scipy.stats, ties and degenerate inputs included.
Each returns (statistic, p); NaN where scipy's answer is NaN (every value identical, no degrees of freedom).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np


def f_sf(x: float, dfn: float, dfd: float) -> float:
    """P(F(dfn, dfd) > x), as scipy.stats.f.sf."""
    from scipy.special import fdtrc

    if not np.isfinite(x):
        return 0.0 if x == np.inf else float("nan")
    return float(fdtrc(dfn, dfd, max(x, 0.0)))


def chi2_sf(x: float, df: float) -> float:
    """P(χ²(df) > x), as scipy.stats.chi2.sf."""
    from scipy.special import chdtrc

    if np.isnan(x):
        return float("nan")
    return float(chdtrc(df, max(x, 0.0)))


def _average_ranks(x: np.ndarray) -> tuple[np.ndarray, float]:
    """Ranks 1..n with ties given their mean rank, and Σ(t³ − t) over the tie groups."""
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    start = np.cumsum(counts) - counts
    ranks = (start + (counts + 1) / 2.0)[inverse.ravel()]
    return ranks, float(np.sum(counts.astype(float) ** 3 - counts))


def _groups(groups: Sequence) -> list[np.ndarray]:
    return [np.asarray(g, dtype=float).ravel() for g in groups]


def kruskal(*groups) -> tuple[float, float]:
    """Kruskal–Wallis H with the tie correction, referred to χ²(k − 1)."""
    gs = _groups(groups)
    x = np.concatenate(gs)
    if np.isnan(x).any():
        return float("nan"), float("nan")
    n = len(x)
    ranks, ties = _average_ranks(x)
    bounds = np.cumsum([0] + [len(g) for g in gs])
    h = sum(ranks[a:b].sum() ** 2 / (b - a) for a, b in pairwise(bounds) if b > a)
    h = 12.0 / (n * (n + 1)) * h - 3 * (n + 1)
    correction = 1.0 - ties / (n ** 3 - n) if n > 1 else 0.0
    if correction == 0:
        return float("nan"), float("nan")
    h /= correction
    return float(h), chi2_sf(h, len(gs) - 1)


def f_oneway(*groups) -> tuple[float, float]:
    """One-way ANOVA's F (between-group over within-group mean square), referred to F(k − 1, N − k)."""
    gs = _groups(groups)
    x = np.concatenate(gs)
    k, n = len(gs), len(x)
    if np.isnan(x).any() or n <= k:
        return float("nan"), float("nan")
    grand = x.mean()
    ss_between = sum(len(g) * (g.mean() - grand) ** 2 for g in gs)
    ss_within = sum(((g - g.mean()) ** 2).sum() for g in gs)
    if ss_within == 0:  # every group constant: F is infinite unless the groups are all equal
        if ss_between == 0:
            return float("nan"), float("nan")
        return float("inf"), 0.0
    f = (ss_between / (k - 1)) / (ss_within / (n - k))
    return float(f), f_sf(f, k - 1, n - k)


def friedman(matrix: np.ndarray) -> tuple[float, float]:
    """Friedman's χ² for an (n blocks × k treatments) matrix, ranks within each block, tie-corrected."""
    m = np.asarray(matrix, dtype=float)
    n, k = m.shape
    if np.isnan(m).any():
        return float("nan"), float("nan")
    less = (m[:, None, :] < m[:, :, None]).sum(axis=2)
    equal = (m[:, None, :] == m[:, :, None]).sum(axis=2)
    ranks = less + (equal + 1) / 2.0
    ties = float(np.sum(equal.astype(float) ** 2 - 1))  # Σ over tie groups of t³ − t: each member adds t² − 1
    ssbn = float(np.sum(ranks.sum(axis=0) ** 2))
    correction = 1.0 - ties / (k * (k * k - 1) * n)
    if correction == 0:
        return float("nan"), float("nan")
    chisq = (12.0 / (k * n * (k + 1)) * ssbn - 3 * n * (k + 1)) / correction
    return float(chisq), chi2_sf(chisq, k - 1)


def sign_test(successes: int, n: int) -> float:
    """The exact two-sided binomial p of `successes` in `n` at probability ½ (1 when n is 0)."""
    from scipy.special import bdtr

    if n == 0:
        return 1.0
    tail = min(successes, n - successes)
    if 2 * tail == n:
        return 1.0
    return float(min(1.0, 2.0 * bdtr(tail, n, 0.5)))


__all__ = ["chi2_sf", "f_oneway", "f_sf", "friedman", "kruskal", "sign_test"]
