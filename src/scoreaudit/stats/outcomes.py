"""Hypothesis outcomes: a cell's p from its TestIR, q over the audit family, the outcome rule, a sentence.

Rules (spec/methods.md): supported if q ≤ alpha and the point estimate lies on the
claim's side of the threshold (inside the equivalence interval); refuted if the
(1 − 2·alpha) interval lies entirely at/below t (for >), at/above t (for <), or
entirely outside the equivalence interval; otherwise inconclusive. Undefined
estimates are inconclusive. Claim statistics (transfers, homogeneous) decide themselves in
`stats.claims` after q is known. Sentences: `stats.sentences` (one source).
"""

from __future__ import annotations

import math

import numpy as np
from statsmodels.stats.multitest import multipletests

from scoreaudit.compiler.ir import TestIR
from scoreaudit.stats.estimate import Estimate

CORRECTIONS = {"bh": "fdr_bh", "by": "fdr_by", "holm": "holm", "bonferroni": "bonferroni"}


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


def adjust(p: list[float], correction: str, alpha: float) -> list[float]:
    """q-values over the finite p's (one family); NaN stays NaN."""
    arr = np.asarray(p, dtype=float)
    q = np.full_like(arr, np.nan)
    ok = np.isfinite(arr)
    if ok.any():
        if correction == "none":
            q[ok] = arr[ok]
        else:
            q[ok] = multipletests(arr[ok], alpha=alpha, method=CORRECTIONS[correction])[1]
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
    lo, hi = est.interval(1 - 2 * alpha)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive"
    if test.kind == "greater" and hi <= test.threshold:
        return "refuted"
    if test.kind == "less" and lo >= test.threshold:
        return "refuted"
    if test.kind == "equivalence" and (hi <= test.low or lo >= test.high):
        return "refuted"
    return "inconclusive"
