"""Robustness over generation seeds: each cell on a generated arm, re-estimated on each seed's images alone
(stats/seeds.py writes `seed_robustness`), with the same-sign and same-outcome rates the seed paper reports.
Also where the spec's `robustness: N` setting is said (before, it never reached the report)."""

from __future__ import annotations

from scoreaudit.reports import fmt
from scoreaudit.reports.sections import section
from scoreaudit.reports.sections.first_screen import cell_anchor
from scoreaudit.reports.sentences import OUTCOME_ICON
from scoreaudit.stats.sentences import signed, stat_name


def _rate(rate, n: int) -> str:
    return fmt.UNDEFINED if rate is None else f"{round(rate * n)} of {n}"


@section("robustness", order=35, title="Robustness over generation seeds", listed=False)
def robustness(ctx) -> dict | None:
    cells = ctx.results.get("cells") or []
    setting = (ctx.results.get("settings") or {}).get("robustness")
    rows = []
    for i, c in enumerate(cells):
        r = c.get("seed_robustness")
        if not isinstance(r, dict) or not r.get("per_seed"):
            continue
        per = [p for p in r["per_seed"] if isinstance(p, dict)]
        number = fmt.signed if signed(str(c.get("statistic") or "")) else fmt.num
        rows.append({
            "anchor": cell_anchor(i), "id": c.get("id"), "hypothesis": c.get("hypothesis"),
            "what": f"{ctx.label('scorer', c.get('scorer'))} \u00b7 {ctx.arm_text(c)} \u00b7 "
                    f"{stat_name(str(c.get('statistic') or ''))}",
            "all": number(c.get("estimate")), "ci": fmt.ci(c.get("ci_low"), c.get("ci_high")),
            "outcome": c.get("outcome") or "inconclusive",
            "icon": OUTCOME_ICON.get(c.get("outcome") or "inconclusive", "?"),
            "sign": _rate(r.get("same_sign_rate"), len(per)), "same": _rate(r.get("same_outcome_rate"), len(per)),
            "seeds": [{"seed": p.get("seed"), "estimate": number(p.get("estimate")),
                       "outcome": p.get("outcome") or "inconclusive",
                       "icon": OUTCOME_ICON.get(p.get("outcome") or "inconclusive", "?"),
                       "undefined": p.get("undefined") or ""} for p in per]})
    if not rows and not (isinstance(setting, int) and setting > 1):
        return None
    return {"rows": rows, "setting": setting if isinstance(setting, int) else None,
            "n_seeds": sorted({len(r["seeds"]) for r in rows})}
