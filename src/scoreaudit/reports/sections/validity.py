"""Measurement validity: does the measure track the operator's dose (validate statements)?"""

from __future__ import annotations

from scoreaudit.reports import fmt
from scoreaudit.reports.sections import section


@section("validity", order=90, title="Measurement validity")
def validity(ctx) -> dict | None:
    rows = ctx.results.get("validations") or []
    if not rows:
        return None
    out = []
    for v in rows:
        checks = [{"text": f"{c.get('name') or c.get('statistic')} {c.get('op', '>=')} {fmt.plain(c.get('threshold'))}",
                   "value": fmt.num(c.get("value")), "held": bool(c.get("held"))} for c in v.get("checks") or []]
        out.append({"axis": f"{v.get('measure')} under {v.get('operator')}", "arm": v.get("arm"),
                    "r2": fmt.num(v.get("r2")), "monotonic": fmt.num(v.get("monotonic")),
                    "passed": bool(v.get("passed")), "checks": checks})
    return {"rows": out}
