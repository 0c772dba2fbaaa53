"""First screen: pre-registration status, auditability verdicts, every hypothesis cell."""

from __future__ import annotations

from collections import Counter

from scoreaudit.reports import fmt
from scoreaudit.reports.sections import section
from scoreaudit.reports.sentences import OUTCOME_ICON, cell_sentence

LOCK_HEADINGS = {
    "pre-registered": ("Pre-registered", "The hypotheses were locked before any image was scored."),
    "not pre-registered": ("Not pre-registered", "The hypotheses were not locked before scoring began: "
                           "read the outcomes as exploratory."),
    "deviation": ("DEVIATION from the pre-registration", "The hypotheses that ran differ from the ones locked. "
                  "Outcomes of the hypotheses listed below were not pre-registered as run."),
}
CHANGE_WORDS = {"added": "added after locking", "removed": "locked but removed", "changed": "changed after locking"}


@section("preregistration", order=10, title="Pre-registration", first_screen=True)
def preregistration(ctx) -> dict:
    lock = dict(ctx.results.get("lock") or {})
    status = lock.get("status") or "not pre-registered"
    heading, meaning = LOCK_HEADINGS.get(status, (status, ""))
    return {
        "status": status,
        "css": {"pre-registered": "ok", "deviation": "deviation"}.get(status, "neutral"),
        "heading": heading,
        "meaning": meaning,
        "detail": lock.get("detail") or "",
        "locked_at": lock.get("locked_at"),
        "first_score_at": lock.get("first_score_at"),
        "deviations": [{"hypothesis": d.get("hypothesis", "?"), "change": d.get("change", "changed"),
                        "words": CHANGE_WORDS.get(d.get("change"), d.get("change", ""))}
                       for d in lock.get("deviations") or []],
    }


def _condition_value(c: dict) -> str:
    v, name = c.get("value"), c.get("name", "")
    if v is None:
        return fmt.UNDEFINED
    if isinstance(v, dict):  # e.g. validity per arm: {"real": {"r2": .., "monotonic": ..}}
        return "; ".join(f"{k}: " + (", ".join(f"{kk} {fmt.num(vv)}" for kk, vv in x.items()) if isinstance(x, dict)
                                     else fmt.num(x)) for k, x in v.items())
    if name == "pixel isolation":
        return "leakage " + fmt.pct(v)
    if name == "measurement validity":
        return "r\u00b2 " + fmt.num(v)
    if name == "real-data arm":
        return fmt.count(v) + " clusters"
    return fmt.num(v)


@section("verdict", order=20, title="Auditability verdict", first_screen=True)
def verdict(ctx) -> dict:
    verdicts = []
    for v in ctx.results.get("verdicts") or []:
        bias = v.get("verdict") == "bias-measurement"
        conds = [{"name": c.get("name", "?"), "held": bool(c.get("held")), "value": _condition_value(c),
                  "detail": c.get("detail") or ""} for c in v.get("conditions") or []]
        verdicts.append({
            "axis": f"{v.get('measure', '?')} \u00d7 {v.get('operator', '?')}",
            "measure": v.get("measure", "?"), "operator": v.get("operator", "?"),
            "bias": bias, "label": "Bias measurement" if bias else "Mechanistic stress test only",
            "failed": [c["name"] for c in conds if not c["held"]], "conditions": conds,
        })
    return {"verdicts": verdicts}


@section("hypotheses", order=30, title="Hypotheses and outcomes", first_screen=True)
def hypotheses(ctx) -> dict | None:
    cells = ctx.results.get("cells") or []
    if not cells:
        return None
    order = [h.get("name") for h in ctx.results.get("hypotheses") or []]
    for c in cells:
        if c.get("hypothesis") not in order:
            order.append(c.get("hypothesis"))
    deviated = {d.get("hypothesis"): d.get("change") for d in (ctx.results.get("lock") or {}).get("deviations") or []}
    groups = []
    for name in order:
        rows = []
        for c in (c for c in cells if c.get("hypothesis") == name):
            outcome = c.get("outcome") or "inconclusive"
            rows.append({"id": c.get("id", ""), "outcome": outcome, "icon": OUTCOME_ICON.get(outcome, "?"),
                         "sentence": cell_sentence(c), "scorer": c.get("scorer", ""),
                         "arm": c.get("arm") or " \u2192 ".join(c.get("arms") or []),
                         "estimate": fmt.signed(c.get("estimate")), "ci": fmt.ci(c.get("ci_low"), c.get("ci_high")),
                         "p": fmt.pval(c.get("p")), "q": fmt.pval(c.get("q"))})
        counts = Counter(r["outcome"] for r in rows)
        groups.append({"name": name, "title": ctx.hypothesis_titles.get(name, ""), "rows": rows,
                       "claim": next((c.get("claim_text") for c in cells if c.get("hypothesis") == name), ""),
                       "deviation": deviated.get(name), "counts": counts})
    total = Counter(c.get("outcome") or "inconclusive" for c in cells)
    settings = ctx.results.get("settings") or {}
    return {"groups": groups, "total": total, "n": len(cells), "alpha": fmt.plain(settings.get("alpha", 0.05)),
            "correction": settings.get("correction", "bh")}
