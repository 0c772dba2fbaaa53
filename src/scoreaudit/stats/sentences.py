"""Each hypothesis cell as one sentence a reviewer can quote: the ONE source of cell sentences.

"On real, pick's fidelity index is +0.0712 [0.0500, 0.0901] (90% CI), p < 0.001,
q < 0.001 (claim: fidelity_index(light) > 0): supported."

The engine writes this sentence into results.json (`cell["sentence"]`) and the
report shows that same string (reports/sentences.py), so the two never
disagree. How a sentence names a statistic and whether it prints a sign come
from the statistic's registry entry (`words`, `sign`). A cell on an axis whose
auditability verdict is stress-test-only says so.
"""

from __future__ import annotations

from scoreaudit import numfmt as fmt
from scoreaudit.stats.stat_words import signed, stat_name  # also imported from here by the reports

STRESS = "stress test, not a bias measurement"


def _where(cell: dict) -> str:
    if cell.get("arm"):
        stratum = " and ".join(f"{c} = {v}" for c, v in cell.get("where") or ())
        return f"On {cell['arm']}" + (f" where {stratum}" if stratum else "")
    arms = cell.get("arms") or []
    if len(arms) == 2:
        return f"From {arms[0]} to {arms[1]}"
    probe = (cell.get("params") or {}).get("probe")
    if probe:  # an optimisation probe's statistic reads the probe, not an arm
        return f"Under probe {probe}"
    return "Across arms"


def _tail(cell: dict) -> str:
    parts = []
    if cell.get("claim_text"):
        parts.append(f"claim: {cell['claim_text']}")
    if cell.get("qualifier") == "stress-test-only":
        parts.append(STRESS)
    return f" ({'; '.join(parts)})" if parts else ""


def _pq(cell: dict, p_name: str = "p") -> str:
    pq = ", ".join(s for s in (
        fmt.peq(cell.get("p"), p_name) if cell.get("p") is not None else "",
        fmt.peq(cell.get("q"), "q") if cell.get("q") is not None else "") if s)
    return f", {pq}" if pq else ""


def _level(level) -> str:
    return f"{fmt.num(100 * (level or 0.95), 2)}% CI"


def cell_sentence(cell: dict) -> str:
    """Plain text (the report's template escapes it)."""
    from scoreaudit.stats.comparison_sentences import OWN_SENTENCE, own_sentence

    statistic = cell.get("statistic", "statistic")
    if statistic in OWN_SENTENCE:  # comparisons, decompositions, agreement: their wording, this number format
        text = own_sentence(cell, num=lambda x, sign: fmt.num(x, signed=sign), qtext=lambda q: fmt.peq(q, "q"))
        if cell.get("qualifier") == "stress-test-only" and text.endswith("."):
            head, sep, outcome = text[:-1].rpartition(":")
            if sep and head.endswith(")") and " (claim: " in head:  # inside the claim's parentheses, as below
                text = f"{head[:-1]}; {STRESS}):{outcome}."
            elif sep:
                text = f"{head} ({STRESS}):{outcome}."
        return text
    where, scorer, outcome = _where(cell), cell.get("scorer", "?"), cell.get("outcome") or "inconclusive"
    name = stat_name(statistic)
    params = cell.get("params") or {}
    if statistic == "curve" and params.get("dose") is not None:  # a curve cell is one dose: name it
        name = f"{name} of {params.get('operator', '?')} at dose {fmt.plain(params['dose'])}"
    detail = cell.get("detail") or {}
    if statistic == "transfers":
        inner = stat_name(detail.get("statistic") or "")
        cls = detail.get("class", "undetermined")
        if cell.get("undefined") or detail.get("ratio") is None:
            why = cell.get("undefined") or detail.get("ratio_undefined") or "not computable"
            return (f"{where}, {scorer}'s {inner} transfer ratio is undefined ({why}), class {cls}"
                    f"{_tail(cell)}: {outcome}.")
        ci = fmt.ci(detail.get("ratio_ci_low"), detail.get("ratio_ci_high"))
        return (f"{where}, {scorer}'s {inner} transfer ratio is {fmt.num(detail.get('ratio'))} {ci} "
                f"({_level(detail.get('ratio_ci_level'))}, margin {fmt.plain(detail.get('margin'))}), class {cls}"
                f"{_tail(cell)}: {outcome}.")
    if statistic == "homogeneous":
        inner = stat_name(detail.get("statistic") or "")
        if cell.get("undefined"):
            return f"{where}, {scorer}'s {inner} across strata is undefined ({cell['undefined']}){_tail(cell)}: {outcome}."
        spread = fmt.num(cell.get("estimate"))
        test_name = detail.get('test_name', 'omnibus test')
        if detail.get("margin"):  # an equivalence claim: p is the largest pairwise TOST p
            omni = detail.get("omnibus_p")
            omni = f"; {test_name} {fmt.peq(omni, 'p')}" if omni is not None else ""
            return (f"{where}, {scorer}'s {inner} differs across {detail.get('by', 'strata')} by at most {spread} "
                    f"(every pairwise difference within ±{fmt.num(detail['margin'])}: equivalence tests{omni})"
                    f"{_pq(cell)}{_tail(cell)}: {outcome}.")
        return (f"{where}, {scorer}'s {inner} differs across {detail.get('by', 'strata')} by at most {spread}, "
                f"{test_name}{_pq(cell)}{_tail(cell)}: {outcome}.")
    if cell.get("estimate") is None or cell.get("undefined"):
        why = cell.get("undefined") or detail.get("undefined") or "not computable"
        return f"{where}, {scorer}'s {name} is undefined ({why}){_tail(cell)}: {outcome}."
    number = fmt.signed if signed(statistic) else fmt.num
    ci = fmt.ci(cell.get("ci_low"), cell.get("ci_high"))
    guard = "; the estimate lies on the wrong side of the threshold" if detail.get("not_supported") else ""
    from scoreaudit.stats.probe_sentences import PROBE_STATISTICS, probe_phrase

    if statistic in PROBE_STATISTICS:  # the measure and its unit, as every other cell names them
        return (f"{where}, {scorer}'s {probe_phrase(cell, number, ci, _level(cell.get('ci_level')))}"
                f"{_pq(cell)}{guard}{_tail(cell)}: {outcome}.")
    return (f"{where}, {scorer}'s {name} is {number(cell.get('estimate'))} {ci} "
            f"({_level(cell.get('ci_level'))}){_pq(cell)}{guard}{_tail(cell)}: {outcome}.")
