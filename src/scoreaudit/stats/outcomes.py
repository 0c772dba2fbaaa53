"""Hypothesis outcomes: a cell's p from its TestIR, q over the audit family, the outcome rule, a sentence.

Rules (METHODS): supported if q ≤ alpha; refuted if the (1 − 2·alpha) interval
lies entirely at/below t (for >), at/above t (for <), or entirely outside the
equivalence interval; otherwise inconclusive. Undefined estimates are
inconclusive. Claim statistics (transfers, homogeneous) decide themselves in
`stats.claims` after q is known.
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


def number_outcome(est: Estimate, test: TestIR, q: float, alpha: float) -> str:
    if est.undefined is not None or not math.isfinite(est.estimate):
        return "inconclusive"
    if math.isfinite(q) and q <= alpha:
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


# ---------------------------------------------------------------- sentences

STAT_WORDS = {"fidelity_index": "fidelity index", "asymmetry": "asymmetry", "placebo_ratio": "placebo ratio",
              "curve": "mean score change", "attribute_effect": "attribute effect",
              "artifact_effect": "artifact effect", "net_drift": "best-of-n net drift",
              "transfers": "transfer", "homogeneous": "stratum spread"}


def fmt_num(x: float, signed: bool = True) -> str:
    if x is None or not math.isfinite(x):
        return "undefined"
    a = abs(x)
    s = f"{x:+.3g}" if signed else f"{x:.3g}"
    if 1e-3 <= a < 1e4 or a == 0:
        digits = 2 if a >= 0.01 or a == 0 else 3
        s = f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"
    return s


def fmt_q(q: float) -> str:
    if q is None or not math.isfinite(q):
        return "q undefined"
    return "q < 0.001" if q < 0.001 else f"q = {q:.3f}"


def subject(statistic: str, params: dict) -> str:
    words = STAT_WORDS.get(statistic, statistic.replace("_", " "))
    what = params.get("operator") or params.get("selection") or params.get("factor")
    return f"{words} of {what}" if what else words


def sentence(cell: dict) -> str:
    from scoreaudit.stats.comparison_sentences import OWN_SENTENCE, own_sentence

    if cell.get("statistic") in OWN_SENTENCE:  # comparisons, decompositions, agreement
        return own_sentence(cell)
    where = f"On {cell['arm']}" if cell.get("arm") else "Across " + " → ".join(cell.get("arms") or [])
    subj = subject(cell["statistic"], cell.get("params") or {})
    if cell.get("undefined"):
        return f"{where}, {cell['scorer']}'s {subj} is undefined ({cell['undefined']}): {cell['outcome']}."
    if cell["statistic"] == "transfers":
        d = cell["detail"]
        return (f"{where}, {cell['scorer']}'s {d.get('statistic', '').replace('_', ' ')} "
                f"{fmt_num(d.get('theta_source'))} → {fmt_num(d.get('theta_target'))}: "
                f"{d.get('class', 'unclassified')}, {cell['outcome']}.")
    ci = ""
    lo, hi = cell.get("ci_low"), cell.get("ci_high")
    if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi):
        ci = f" [{fmt_num(cell['ci_low'])}, {fmt_num(cell['ci_high'])}]"
    return f"{where}, {cell['scorer']}'s {subj} is {fmt_num(cell['estimate'])}{ci}, {fmt_q(cell.get('q'))}: {cell['outcome']}."
