"""The sentence of a `difference`/`ratio` cell, from its detail (no numbers of its own).

"On real, hps's fidelity index of light is 0.031× laion's [0.018, 0.047] (90% CI), p < 0.001, q < 0.001
(claim: ...): supported."
What the two readings share (arm, `where`, statistic) is said once; what
differs is said per reading. Number formatting is the caller's (results.json
and the report format numbers their own way), so the words stay the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scoreaudit.stats.stat_words import stat_name

COMPARISONS = ("difference", "ratio")
#: statistics of this issue with a sentence of their own (their subject needs their parameters)
OWN_SENTENCE = COMPARISONS + ("share", "decompose", "agreement")


def _subject(r: dict) -> str:
    words = stat_name(r["statistic"])  # the registry's words, as every other cell sentence says them
    p = r.get("params") or {}
    what = p.get("operator") or p.get("selection") or p.get("factor") or p.get("label") or p.get("measure")
    return f"{words} of {what}" if what else words


def _where(w) -> str:
    return " and ".join(f"{c} = {v}" for c, v in w)


def _fmt(x: float | None, signed: bool) -> str:
    """The one number format (scoreaudit.numfmt): 3 significant digits, U+2212 minus."""
    from scoreaudit import numfmt

    return numfmt.num(x, signed=signed)


def _q(q: float | None) -> str:
    from scoreaudit import numfmt

    return numfmt.peq(q, "q") if q is not None and math.isfinite(q) else "q undefined"


def _stated(cell: dict, ci: str, qtext: Callable[[float | None], str], how: str = "") -> str:
    """What every cell sentence states after its estimate and interval: the interval's level, p, q, the claim
    (as the other statistics' sentences do): ` [lo, hi] (90% CI), p = 0.003, q = 0.011 (claim: ...)`."""
    from scoreaudit import numfmt

    level = cell.get("ci_level")
    test = f"; {how}" if how else ""
    parts = [f"{ci} ({numfmt.num(100 * level, 2)}% CI{test})" if ci and isinstance(level, (int, float))
             else ci + (f" ({how})" if how else "")]
    p = cell.get("p")
    tail = (", " + numfmt.peq(p, "p")) if isinstance(p, (int, float)) and math.isfinite(p) else ""
    tail += ", " + qtext(cell.get("q"))
    claim = f" (claim: {cell['claim_text']})" if cell.get("claim_text") else ""
    return parts[0] + tail + claim


def comparison_sentence(cell: dict, num: Callable[[float | None, bool], str] = _fmt,
                        qtext: Callable[[float | None], str] = _q) -> str:
    """The sentence of a comparison cell (`num(x, signed)` and `qtext(q)` format the numbers)."""
    d = cell.get("detail") or {}
    ra, rb = (d.get("readings") or [{}, {}])[:2] if len(d.get("readings") or []) >= 2 else (None, None)
    kind = cell.get("statistic")
    outcome = cell.get("outcome") or "inconclusive"
    if ra is None:
        reason = cell.get("undefined") or "no readings"
        return f"The {kind} in {cell.get('id', 'this cell')} is undefined ({reason}): {outcome}."
    probes = (ra.get("probe"), rb.get("probe"))
    same_arm = ra["arm"] == rb["arm"] and probes[0] == probes[1]
    same_where = list(ra.get("where") or []) == list(rb.get("where") or [])
    # readings under two probes, or two `where` selections of one probe: the same statistic, said once
    strip = ("probe", "where")
    same_stat = (ra["statistic"], {k: v for k, v in (ra.get("params") or {}).items() if k not in strip}) == \
        (rb["statistic"], {k: v for k, v in (rb.get("params") or {}).items() if k not in strip})
    if any(probes):  # probe readings (stats/probes.py): under their probes, not on an arm
        lead = f"Under probe {probes[0]}" if same_arm else f"Under probes {probes[0]} and {probes[1]}"
    else:
        lead = f"On {ra['arm']}" if same_arm else "Across arms"
    if same_where and ra.get("where"):
        lead += f" where {_where(ra['where'])}"

    def own(r: dict) -> str:
        if r.get("probe"):  # a probe reading's `where` selects its prompts
            out = "" if same_arm else f" under {r['probe']}"
            return out + (f" where {_where(r['where'])}" if not same_where and r.get("where") else "")
        out = "" if same_arm else f" on {r['arm']}"
        if not same_where and r.get("where"):
            out += f" where {_where(r['where'])}"
        return out

    a_text = f"{ra['scorer']}'s {_subject(ra)}{own(ra)}"
    if same_stat:
        b_text = (f"{rb['scorer']}'s" if rb["scorer"] != ra["scorer"] else "that") + own(rb)
    else:
        b_text = f"{rb['scorer']}'s {_subject(rb)}{own(rb)}"
    if cell.get("undefined"):
        return f"{lead}, the {kind} of {a_text} and {b_text} is undefined ({cell['undefined']}): {outcome}."
    lo, hi = cell.get("ci_low"), cell.get("ci_high")
    ratio = kind == "ratio"
    ci = ""
    if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi):
        ci = f" [{num(lo, False)}, {num(hi, False)}]"  # bounds as every interval prints them (a sign only if negative)
    est = num(cell.get("estimate"), not ratio)
    test = d.get("test")
    how = test if test and test != "bootstrap" else ""
    if ratio:
        return f"{lead}, {a_text} is {est}\u00d7 {b_text}{_stated(cell, ci, qtext)}: {outcome}."
    if all(probes) and same_stat:  # two probe readings of one measure: the difference is in its unit
        from scoreaudit.stats.probe_sentences import reading_unit, with_unit

        est = with_unit(est, reading_unit(ra["statistic"], ra.get("params") or {}))
    return f"{lead}, {a_text} minus {b_text} is {est}{_stated(cell, ci, qtext, how)}: {outcome}."


def _lead(cell: dict) -> str:
    return f"On {cell['arm']}" if cell.get("arm") else "Across arms"


# agreement metrics as a sentence names them (the spec's spelling is the key)
METRIC_NAMES = {"auroc": "AUROC", "f1": "F1 score", "kappa": "Cohen's kappa", "accuracy": "accuracy"}


def own_sentence(cell: dict, num: Callable[[float | None, bool], str] = _fmt,
                 qtext: Callable[[float | None], str] = _q) -> str:
    """The sentence of any statistic in OWN_SENTENCE (comparisons, decompositions, agreement)."""
    name = cell.get("statistic")
    if name in COMPARISONS:
        return comparison_sentence(cell, num, qtext)
    d = cell.get("detail") or {}
    p = cell.get("params") or {}
    outcome = cell.get("outcome") or "inconclusive"
    if name in ("share", "decompose"):
        gap = f"the {d.get('by', '?')} gap ({d.get('a', '?')} \u2212 {d.get('b', '?')})"
        what = (f"{p.get('part', d.get('part', '?'))} share of {gap}" if name == "share"
                else f"part of {gap} that {d.get('measure', 'the measure')} explains")
        signed = name == "decompose"
    else:
        metric = p.get("metric", d.get("metric", "accuracy"))
        what = f"{METRIC_NAMES.get(metric, metric)} against the labels in {p.get('label', d.get('label'))}"
        signed = False
    subject = f"{_lead(cell)}, {cell.get('scorer')}'s {what}"
    if cell.get("undefined"):
        return f"{subject} is undefined ({cell['undefined']}): {outcome}."
    lo, hi = cell.get("ci_low"), cell.get("ci_high")
    ci = ""
    if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi):
        ci = f" [{num(lo, False)}, {num(hi, False)}]"
    extra = ""
    if name == "agreement" and (d.get("excluded_label") or d.get("excluded_ties")):
        n_ex = int(d.get("excluded_label") or 0) + int(d.get("excluded_ties") or 0)
        extra = f" ({d.get('n')} rows, {n_ex} excluded)"
    return f"{subject} is {num(cell.get('estimate'), signed)}{extra}{_stated(cell, ci, qtext)}: {outcome}."
