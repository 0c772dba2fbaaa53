"""Hypothesis outcomes: a cell's p from its TestIR, q over the audit family, the outcome rule, a sentence.

Rules (spec/methods.md): supported if q ≤ alpha and the point estimate lies on the
claim's side of the threshold (inside the equivalence interval); refuted if the
(1 − 2·alpha) interval lies entirely below t (for >), above t (for <), or
entirely outside the equivalence interval, strictly (a bound on t does not refute:
spec/methods-choices.md, "Refutation is strict"); otherwise inconclusive. Undefined
estimates are inconclusive. Claim statistics (transfers, homogeneous) decide themselves in
`stats.claims` after q is known. Sentences: `stats.sentences` (one source).
"""

from __future__ import annotations

import math

import numpy as np

from scoreaudit.compiler.ir import TestIR
from scoreaudit.compiler.settings import claim_level
from scoreaudit.stats.estimate import Estimate


def _step_up(p_sorted: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """Benjamini–Hochberg-type step-up: p_(i)·factor_i, then the running minimum from the largest p down."""
    return np.minimum.accumulate((p_sorted * factor)[::-1])[::-1]


def _bh(p_sorted: np.ndarray) -> np.ndarray:
    m = p_sorted.size
    return _step_up(p_sorted, m / np.arange(1, m + 1))


def _by(p_sorted: np.ndarray) -> np.ndarray:
    m = p_sorted.size
    return _step_up(p_sorted, m * np.sum(1.0 / np.arange(1, m + 1)) / np.arange(1, m + 1))


def _holm(p_sorted: np.ndarray) -> np.ndarray:
    """Holm's step-down: p_(i)·(m − i + 1), then the running maximum from the smallest p up."""
    m = p_sorted.size
    return np.maximum.accumulate(p_sorted * np.arange(m, 0, -1))


def _bonferroni(p_sorted: np.ndarray) -> np.ndarray:
    return p_sorted * p_sorted.size


#: `correction:` → adjusted p of the sorted p's (capped at 1 by `adjust`). Written out here rather than
#: imported from statsmodels (whose multitest module pulls in scipy.stats: half a second of every run
#: that computes statistics); tests/stats/test_reference.py checks every one against statsmodels'
#: multipletests, ties included.
CORRECTIONS = {"bh": _bh, "by": _by, "holm": _holm, "bonferroni": _bonferroni}


def cell_p(est: Estimate, test: TestIR) -> float:
    """The p-value of the cell's claim, taken from the Estimate as the TestIR says."""
    if est.undefined is not None:
        return float("nan")
    if test.kind == "greater":
        return est.p_greater(float(test.threshold))
    if test.kind == "less":
        return est.p_less(float(test.threshold))
    if test.kind == "equivalence":
        return est.p_equivalence(float(test.low), float(test.high))
    return float("nan") if est.p_fixed is None else float(est.p_fixed)


def adjust(p: list[float], correction: str) -> list[float]:
    """q-values over the finite p's (one family); NaN stays NaN."""
    arr = np.asarray(p, dtype=float)
    q = np.full_like(arr, np.nan)
    ok = np.isfinite(arr)
    if ok.any():
        if correction == "none":
            q[ok] = arr[ok]
        else:
            order = np.argsort(arr[ok], kind="stable")
            adjusted = np.empty(order.size)
            adjusted[order] = np.minimum(CORRECTIONS[correction](arr[ok][order]), 1.0)
            q[ok] = adjusted
    return q.tolist()


def wrong_side(estimate: float, test: TestIR) -> bool:
    """Whether the point estimate itself contradicts the claim (at the threshold contradicts a strict claim).

    A test and its estimate should never disagree; where they do (a test that drops what the
    estimate counts, a discrete test at its edge), the estimate wins: no cell is supported
    against its own estimate, whatever its p.
    """
    t = float(test.threshold) if test.threshold is not None else 0.0
    if test.kind == "greater":
        return not (estimate > t if test.strict else estimate >= t)
    if test.kind == "less":
        return not (estimate < t if test.strict else estimate <= t)
    if test.kind == "equivalence":
        return not float(test.low) < estimate < float(test.high)
    return False


def number_outcome(est: Estimate, test: TestIR, q: float, alpha: float) -> str:
    if est.undefined is not None or not math.isfinite(est.estimate):
        return "inconclusive"
    if math.isfinite(q) and q <= alpha and not wrong_side(est.estimate, test):
        return "supported"
    lo, hi = est.interval(claim_level(alpha))
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive"
    # Strictly beyond: a bound is a value the data do not reject, so a bound *on* t keeps t possible.
    # For a continuous interval this is "at or below" almost surely; a discrete one (the sign-flip's
    # bounds are crossing points D_F/N_F) lands on t with positive probability and refuted at ~2α.
    if test.kind == "greater" and hi < test.threshold:
        return "refuted"
    if test.kind == "less" and lo > test.threshold:
        return "refuted"
    if test.kind == "equivalence" and (hi < test.low or lo > test.high):
        return "refuted"
    return "inconclusive"
