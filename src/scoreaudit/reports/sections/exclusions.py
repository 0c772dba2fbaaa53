"""Every excluded image with its reason: nothing is dropped silently."""

from __future__ import annotations

from collections import Counter

from scoreaudit.reports.sections import section


@section("exclusions", order=150, title="Exclusions")
def exclusions(ctx) -> dict:
    rows = [{"arm": e.get("arm") or "", "image_id": e.get("image_id") or "\u2014",
             "row": "\u2014" if e.get("row") is None else str(e.get("row")), "stage": e.get("stage") or "",
             "reason": e.get("reason") or ""} for e in ctx.results.get("exclusions") or []]
    arms = ctx.results.get("arms") or {}
    images = len({(r["arm"], r["image_id"] if r["image_id"] != "\u2014" else f"row {r['row']}") for r in rows})
    return {"rows": rows, "n_images": images, "by_stage": sorted(Counter(r["stage"] for r in rows).items()),
            "arms": [{"name": n, "kind": a.get("kind", ""), "images": a.get("n_images"), "clusters": a.get("n_clusters"),
                      "excluded": a.get("n_excluded")} for n, a in arms.items()]}
