"""Resolving claim statistics (returns="claim") once every cell's q is known.

A registry keyed by statistic name: each resolver receives all cells of that
statistic (dicts with the Estimate under "_est") and fills `outcome` and
`detail`. Transfers need the family of all transfer readings; homogeneous
needs its own q.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scoreaudit.stats.outcomes import adjust
from scoreaudit.stats.transfer import classify, outcome as transfer_outcome

Resolver = Callable[[list[dict], str, float], None]
RESOLVERS: dict[str, Resolver] = {}


def resolver(name: str):
    def deco(fn: Resolver) -> Resolver:
        RESOLVERS[name] = fn
        return fn
    return deco


@resolver("transfers")
def resolve_transfers(cells: list[dict], correction: str, alpha: float) -> None:
    live = [c for c in cells if not c.get("undefined")]
    ps = [p for c in live for p in (c["detail"]["p_source"], c["detail"]["p_target"])]
    qs = adjust(ps, correction)
    for k, c in enumerate(live):
        qs_, qr = qs[2 * k], qs[2 * k + 1]
        cls = classify(c["detail"], qs_, qr, alpha)
        c["detail"].update({"q_source": qs_, "q_target": qr, "class": cls,
                            "q_family": "all transfer readings of the audit"})
        c["outcome"] = transfer_outcome(c["detail"], c.get("q", float("nan")), alpha)
    for c in cells:
        if c.get("undefined"):
            c["outcome"] = "inconclusive"


@resolver("homogeneous")
def resolve_homogeneous(cells: list[dict], correction: str, alpha: float) -> None:
    """No margin: q of the omnibus test, refuted or inconclusive. Margin: q of the equivalence p (stats/strata.py)."""
    for c in cells:
        q = c.get("q")
        margin = c["detail"].get("margin") if not c.get("undefined") else None
        if c.get("undefined") or q is None or not math.isfinite(q):
            c["outcome"] = "inconclusive"
        elif not margin:
            c["outcome"] = "refuted" if q <= alpha else "inconclusive"  # absence of evidence is not homogeneity
        elif q <= alpha:
            c["outcome"] = "supported"  # every pairwise difference's (1 − 2α) CI inside [−δ, δ]
        elif c["detail"].get("exceeds_margin"):
            c["outcome"] = "refuted"  # some pairwise difference's Bonferroni interval lies outside [−δ, δ]
        else:
            c["outcome"] = "inconclusive"
