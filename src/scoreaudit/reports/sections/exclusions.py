"""Exclusions by reason, with counts: nothing is dropped silently, and the report's length does not grow
with the number of excluded images (the full list, one row per image and reason, stays in
tables/exclusions.parquet and results.json)."""

from __future__ import annotations

from collections import Counter

from scoreaudit.reports import fmt
from scoreaudit.reports.sections import section

EXAMPLES = 3  # image ids named per reason (a reader can look one up); the rest are counted


@section("exclusions", order=150, title="Exclusions")
def exclusions(ctx) -> dict:
    entries = [e for e in ctx.results.get("exclusions") or [] if isinstance(e, dict)]
    arms = ctx.results.get("arms") or {}
    groups: dict[tuple, list[dict]] = {}
    for e in entries:
        key = (str(e.get("arm") or ""), str(e.get("stage") or ""), str(e.get("reason") or ""))
        groups.setdefault(key, []).append(e)
    rows = []
    for (arm, stage, reason), es in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        ids = list(dict.fromkeys(str(e.get("image_id") or f"row {e.get('row')}") for e in es))
        rows.append({"arm": ctx.label("arm", arm) if arm else "", "stage": stage, "reason": reason,
                     "n": fmt.count(len(es)), "examples": ids[:EXAMPLES], "more": max(0, len(ids) - EXAMPLES)})
    images = len({(str(e.get("arm") or ""), str(e.get("image_id") or f"row {e.get('row')}")) for e in entries})
    table = (ctx.results.get("tables") or {}).get("exclusions") or "tables/exclusions.parquet"
    return {"rows": rows, "n_images": images, "n_entries": len(entries), "table": table,
            "by_stage": sorted(Counter(str(e.get("stage") or "") for e in entries).items()),
            "arms": [{"name": ctx.label("arm", n), "kind": a.get("kind", ""), "images": fmt.count(a.get("n_images")),
                      "clusters": fmt.count(a.get("n_clusters")), "excluded": fmt.count(a.get("n_excluded"))}
                     for n, a in arms.items()]}
