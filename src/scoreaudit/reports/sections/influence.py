"""The images that move a within-image cell most: for each cell on an operator, the few images whose score
changes most at the operator's extreme dose (largest |score(extreme) − score(original)|, raw score units),
read from the bundle's scores table, so a reviewer can check what drives a verdict. Descriptive: the
cell's numbers stay the statistics'."""

from __future__ import annotations

import math

from scoreaudit.reports import fmt

SHOWN = 5  # images per cell


def _extremes(op: dict) -> list[float]:
    """The dose(s) farthest from the identity: both ends of a symmetric sweep (they can disagree in sign)."""
    doses = [float(d) for d in op.get("doses") or [] if isinstance(d, (int, float))]
    ident = op.get("identity")
    if not doses or not isinstance(ident, (int, float)):
        return []
    far = max(abs(d - ident) for d in doses)
    return sorted({d for d in doses if far and math.isclose(abs(d - ident), far)})


def top_movers(ctx) -> dict[tuple[str, str, str], list[dict]]:
    """(arm, scorer, operator) → the SHOWN images with the largest score change at an extreme dose."""
    path = ctx.bundle_dir / "tables" / "scores.parquet"
    wanted = {(c.get("arm"), c.get("scorer"), (c.get("params") or {}).get("operator"))
              for c in ctx.results.get("cells") or [] if c.get("arm") and (c.get("params") or {}).get("operator")}
    wanted = {w for w in wanted if w[2] in ctx.operators}
    if not wanted or not path.is_file():
        return {}
    import pandas as pd

    s = pd.read_parquet(path, columns=["arm", "image_id", "operator", "dose", "scorer", "score"])
    arms = {w[0] for w in wanted}
    s = s[s["arm"].isin(arms)]
    base = s[s["operator"] == "original"].drop_duplicates(["arm", "scorer", "image_id"]).set_index(
        ["arm", "scorer", "image_id"])["score"]
    out = {}
    for arm, scorer, op in sorted(wanted, key=str):
        ext = _extremes(ctx.operators[op])
        rows = s[(s["arm"] == arm) & (s["scorer"] == scorer) & (s["operator"] == op) & s["dose"].isin(ext)]
        if not len(rows):
            continue
        ref = base.reindex(pd.MultiIndex.from_arrays([rows["arm"], rows["scorer"], rows["image_id"]])).to_numpy()
        rows = rows.assign(change=rows["score"].to_numpy(float) - ref)
        rows = rows[rows["change"].notna()]
        rows = rows.assign(size=rows["change"].abs()).sort_values(["size", "image_id"], ascending=[False, True])
        top = rows.drop_duplicates("image_id").head(SHOWN)
        out[(arm, scorer, op)] = [{"image_id": str(r.image_id), "dose": fmt.plain(r.dose), "change": fmt.signed(r.change)}
                                  for r in top.itertuples()]
    return out


def movers_text(movers: list[dict]) -> str:
    """One line for a cell: `img12 −0.82 at dose 15; img7 +0.61 at dose −15; …`."""
    return "; ".join(f"{m['image_id']} {m['change']} at dose {m['dose']}" for m in movers)
