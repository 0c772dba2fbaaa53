"""Warnings about the run, on the first screen: what the runtime noticed in the data (run.json) and what the
statistics noticed about the design (results.json `warnings`, e.g. W0421 few clusters under `scale: sd`).

Until now these reached only the terminal, run.log and the JSON files; a reader of the report needs them
next to the outcomes they qualify. Grouped by kind, a few lines each (the JSON files keep them all).
"""

from __future__ import annotations

import re

from scoreaudit.reports.sections import section

SHOWN = 5  # lines per kind; the rest are counted

# (kind, heading, what it means for the reader), in the order the box lists them
KINDS = (
    ("few_clusters", "Few clusters for SD units",
     "with `scale: sd` the SD's own uncertainty makes intervals under-cover on few clusters{below} "
     "(spec/methods.md): read the SD-unit verdicts on these arms with care, or use `scale: raw`."),
    ("duplicates", "Identical images",
     "images with the same pixels under different ids count as independent images (and clusters)."),
    ("animated", "Animated images", "only the first frame of an animated image was scored."),
    ("other", "Other warnings", ""),
)


def _kind_of_run_warning(text: str) -> str:
    if "identical pixels" in text:
        return "duplicates"
    if "animated" in text:
        return "animated"
    return "other"


def collect(ctx) -> list[dict]:
    """Every warning as {kind, code, text}: the statistics' (results.json) first, then the runtime's (run.json)."""
    out = []
    for w in ctx.results.get("warnings") or []:
        if isinstance(w, dict):
            code, text = str(w.get("code") or ""), str(w.get("message") or "")
            if code == "W0421" and w.get("arm") is not None and w.get("n_clusters") is not None:
                # the box says what W0421 means once; each line names the arm and its clusters
                below = re.search(r"below about (\d+) clusters", text)
                out.append({"kind": "few_clusters", "code": code, "below": below.group(1) if below else "",
                            "text": f"arm {ctx.label('arm', w['arm'])}: {w['n_clusters']} clusters"})
            else:
                out.append({"kind": "few_clusters" if code == "W0421" else "other", "code": code, "text": text})
        elif w:
            out.append({"kind": "other", "code": "", "text": str(w)})
    for w in ctx.run.get("warnings") or []:
        if w:
            text = str(w)
            out.append({"kind": _kind_of_run_warning(text), "code": "", "text": text})
    return out


@section("warnings", order=15, title="Warnings", first_screen=True, listed=False)
def warnings(ctx) -> dict | None:
    found = collect(ctx)
    if not found:
        return None
    groups = []
    for kind, heading, meaning in KINDS:
        mine = [w for w in found if w["kind"] == kind]
        if mine:
            below = next((w["below"] for w in mine if w.get("below")), "")
            meaning = meaning.replace("{below}", f" (below about {below})" if below else "")
            groups.append({"heading": heading, "meaning": meaning, "lines": mine[:SHOWN],
                           "more": len(mine) - SHOWN if len(mine) > SHOWN else 0})
    return {"n": len(found), "groups": groups}
