"""Each hypothesis cell as one sentence a reviewer can quote.

"On real, pick's fidelity index is +0.0712 [0.0521, 0.0903] (95% CI), p < 0.001,
q < 0.001: supported." The sentence is built from the cell's fields with the
report's number format, so it always agrees with the tables beside it.
"""

from __future__ import annotations

from scoreaudit.reports import fmt

OUTCOME_ICON = {"supported": "\u2713", "refuted": "\u2717", "inconclusive": "?"}

# statistic name -> how a sentence names it (default: underscores become spaces)
STAT_NAMES = {
    "spearman": "Spearman correlation with the ratings",
    "pearson": "Pearson correlation with the ratings",
    "kendall": "Kendall correlation with the ratings",
    "rank_spread": "rank spread",
    "homogeneous": "homogeneity test",
}


# statistics whose sign carries no direction (ratios, shares, spreads): shown without a plus sign
UNSIGNED = {"placebo_ratio", "pairwise_accuracy", "rank_spread", "factor_effect", "r2", "monotonic", "mean_rank",
            "recall_best", "filter_worst"}


def stat_name(statistic: str) -> str:
    return STAT_NAMES.get(statistic, statistic.replace("_", " "))


def _where(cell: dict) -> str:
    if cell.get("arm"):
        return f"On {cell['arm']}"
    arms = cell.get("arms") or []
    if len(arms) == 2:
        return f"From {arms[0]} to {arms[1]}"
    return "Across arms"


def _claim(cell: dict) -> str:
    return f" (claim: {cell['claim_text']})" if cell.get("claim_text") else ""


def cell_sentence(cell: dict) -> str:
    """Plain text; the template escapes it."""
    where, scorer, outcome = _where(cell), cell.get("scorer", "?"), cell.get("outcome", "inconclusive")
    name = stat_name(cell.get("statistic", "statistic"))
    detail = cell.get("detail") or {}
    pq = ", ".join(s for s in (
        fmt.peq(cell.get("p"), "p") if cell.get("p") is not None else "",
        fmt.peq(cell.get("q"), "q") if cell.get("q") is not None else "") if s)
    pq = f", {pq}" if pq else ""
    from scoreaudit.stats.comparison_sentences import OWN_SENTENCE, own_sentence

    if cell.get("statistic") in OWN_SENTENCE:  # comparisons, decompositions, agreement
        return own_sentence(cell, num=lambda x, sign: fmt.num(x, signed=sign), qtext=lambda q: fmt.peq(q, "q"))
    if cell.get("statistic") == "transfers":
        cls = detail.get("class", "undetermined")
        return f"{where}, {scorer}'s transfer class is {cls}{_claim(cell)}: {outcome}."
    if cell.get("statistic") == "homogeneous":
        return f"{where}, {scorer}'s omnibus test of equal effects across strata{pq}{_claim(cell)}: {outcome}."
    if cell.get("estimate") is None:
        why = cell.get("undefined") or detail.get("undefined") or "not computable"
        return f"{where}, {scorer}'s {name} is undefined ({why}){_claim(cell)}: {outcome}."
    number = fmt.num if cell.get("statistic") in UNSIGNED else fmt.signed
    level = cell.get("ci_level") or 0.95
    ci = fmt.ci(cell.get("ci_low"), cell.get("ci_high"))
    return (f"{where}, {scorer}'s {name} is {number(cell.get('estimate'))} {ci} "
            f"({fmt.num(100 * level, 2)}% CI){pq}{_claim(cell)}: {outcome}.")
