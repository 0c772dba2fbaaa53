"""The sign-flip test of paired credit differences, and the interval that inverts it.

A difference of two accuracies on the same pairs is one quantity: the mean of
the per-pair credit differences d_i = c_a,i − c_b,i (credit 1 right, ½ tied,
0 wrong: the credit of the estimate). Its test (spec/methods.md, METHODS
"Comparisons") is the sign-flip test of the cluster sums D_c = Σ_{i∈c} d_i
(each pair its own cluster when none is declared); with no ties and one pair
per cluster it is McNemar's exact test.

Testing a shift δ flips the centred sums u_c(δ) = D_c − δ·n_c. Flipping a set F
of clusters changes Σu by −2·Σ_F u_c, so a flip is at least as extreme as the
data (for "θ > δ") exactly when D_F − δ·N_F ≤ 0, i.e. when δ lies at or above
the flip's crossing point D_F / N_F. Hence

    p_greater(δ) = #{flips with crossing ≤ δ} / K     (K = 2^C exact; R + 1 Monte Carlo)
    p_less(δ)    = #{flips with crossing ≥ δ} / K     (the flip that moves nothing counts in both)

are step functions of δ computed from one array of crossing points, and the
(1 − 2a) interval is the pair of order statistics of those crossings at which
the p's pass a: the interval and the p come from the same flips, so
"p ≤ a" ⟺ "the bound lies beyond δ", for every δ, with no Monte-Carlo
disagreement between them.

Exact when the clusters number at most EXACT_MAX (all 2^C sign vectors); else
R = MC_FLIPS random sign vectors drawn from the arm's seeded generator, the
observed data counted as one of them (p ≥ 1/(R + 1)). A cluster whose D_c is 0
is not informative at δ = 0 but moves the test at any other δ, so every
cluster is flipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EXACT_MAX = 20  # 2^20 = 1,048,576 sign vectors: exact enumeration up to this many clusters
MC_FLIPS = 19_999  # random sign vectors beyond it (p floor 1/20,000)
_CHUNK = 2_000


def _subset_sums(x: np.ndarray) -> np.ndarray:
    """Σ_F x over all 2^len(x) subsets F (F = the flipped clusters), by doubling."""
    out = np.zeros(1)
    for v in x:
        out = np.concatenate([out, out + v])
    return out


@dataclass(frozen=True)
class SignFlip:
    """Crossing points D_F / N_F of one sign-flip design's flips (sorted), and the flips with N_F = 0."""

    crossings: np.ndarray  # sorted, finite: one per flip that moves at least one pair
    n_empty: int  # flips that move nothing (the identity; the data itself under Monte Carlo): count on both sides
    k: int  # flips in the denominator (2^C exact; R + 1 Monte Carlo, the data included)
    exact: bool
    n_clusters: int
    n_informative: int  # clusters with D_c ≠ 0 (those that matter at δ = 0)
    estimate: float  # Σ D_c / Σ n_c

    @property
    def name(self) -> str:
        return "sign-flip (exact)" if self.exact else f"sign-flip (Monte Carlo, {self.k - 1} flips)"

    def p_greater(self, delta: float) -> float:
        """p of H0: θ ≤ δ: the share of flips at least as large as the data once centred at δ."""
        return float((np.searchsorted(self.crossings, delta, side="right") + self.n_empty) / self.k)

    def p_less(self, delta: float) -> float:
        """p of H0: θ ≥ δ (the mirror: crossings at or above δ)."""
        n = len(self.crossings) - np.searchsorted(self.crossings, delta, side="left")
        return float((n + self.n_empty) / self.k)

    def _needed(self, a: float) -> int:
        """How many crossings must lie on δ's side for a one-sided p above a: p > a ⟺ count ≥ this."""
        return int(np.floor(a * self.k)) + 1 - self.n_empty

    def interval(self, level: float) -> tuple[float, float]:
        """{δ : p_greater(δ) > a and p_less(δ) > a}, a = (1 − level)/2: order statistics of the crossings."""
        m = self._needed((1.0 - level) / 2.0)
        c = self.crossings
        if m <= 0:
            return (-1.0, 1.0)  # no δ in [−1, 1] can be rejected: the design cannot reach this level
        m = min(m, len(c))
        return (float(c[m - 1]), float(c[len(c) - m]))

    def smallest_p(self) -> float:
        """The smallest one-sided p this design can give at δ = 0: every informative cluster on one side."""
        return float(max(2.0 ** -self.n_informative, 1.0 / self.k))


def signflip(D: np.ndarray, n: np.ndarray, rng: np.random.Generator | None = None,
             exact_max: int = EXACT_MAX, n_flips: int = MC_FLIPS) -> SignFlip:
    """The sign-flip design of cluster sums D (C,) of per-pair values over clusters of n (C,) pairs."""
    D, n = np.asarray(D, float), np.asarray(n, float)
    C = len(D)
    if exact_max >= C:
        sD, sN = _subset_sums(D), _subset_sums(n)
        k, exact = 2 ** C, True
    else:
        rng = rng if rng is not None else np.random.default_rng(0)
        parts_d, parts_n = [], []
        for start in range(0, n_flips, _CHUNK):
            F = rng.random((min(_CHUNK, n_flips - start), C)) < 0.5
            parts_d.append(F @ D)
            parts_n.append(F @ n)
        sD, sN = np.concatenate([[0.0], *parts_d]), np.concatenate([[0.0], *parts_n])
        k, exact = n_flips + 1, False
    moved = sN > 0
    return SignFlip(np.sort(sD[moved] / sN[moved]), int((~moved).sum()), k, exact, C, int(np.sum(D != 0)),
                    float(D.sum() / n.sum()) if n.sum() > 0 else float("nan"))
