"""The images that move a within-image cell most: for each cell on an operator, the few images whose score
changes most at the operator's extreme dose (largest |score(extreme) − score(original)|, raw score units),
read from the bundle's scores table (runtime/movers.py ranks them, for this table and for the thumbnails the
run stored), so a reviewer can check what drives a verdict. Descriptive: the cell's numbers stay the
statistics'. The first few movers of a cell are shown as small thumbnails, original beside the variant,
when the bundle holds them (`mover_thumbnails.json`); the report fetches nothing."""

from __future__ import annotations

import re

from markupsafe import Markup

from scoreaudit.reports import fmt
from scoreaudit.runtime.movers import FILE, PER_CELL, SHOWN, image_key, rank_movers, within_image_cells

_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


def mover_images(ctx) -> dict[str, str]:
    """key → base64 JPEG from the bundle's mover_thumbnails.json ({} when off, absent or malformed)."""
    from scoreaudit.reports.context import load_json

    if (ctx.ir.get("report") or {}).get("thumbnails") is False:
        return {}
    path = ctx.bundle_dir / FILE
    data = load_json(path) if path.is_file() else {}
    images = data.get("images") if isinstance(data, dict) else None
    if not isinstance(images, dict):
        return {}
    return {str(k): v for k, v in images.items() if isinstance(v, str) and _BASE64.match(v)}


def top_movers(ctx) -> dict[tuple[str, str, str], list[dict]]:
    """(arm, scorer, operator) → the SHOWN images with the largest score change at an extreme dose, each
    with `thumbs` (original and variant data URIs) when the bundle stored them."""
    path = ctx.bundle_dir / "tables" / "scores.parquet"
    wanted = within_image_cells(ctx.results.get("cells") or [], ctx.operators)
    if not wanted or not path.is_file():
        return {}
    import pandas as pd

    s = pd.read_parquet(path, columns=["arm", "image_id", "operator", "dose", "scorer", "score"])
    images = mover_images(ctx)
    out = {}
    for (arm, scorer, op), top in rank_movers(s, ctx.operators, wanted, SHOWN).items():
        rows = []
        for i, m in enumerate(top):  # thumbnails for the first PER_CELL only (another cell may have stored more)
            o, v = images.get(image_key(arm, m["image_id"])), images.get(image_key(arm, m["image_id"], op, m["dose"]))
            rows.append({"image_id": m["image_id"], "dose": fmt.plain(m["dose"]), "change": fmt.signed(m["change"]),
                         "thumbs": (o, v) if o and v and i < PER_CELL else None})
        out[(arm, scorer, op)] = rows
    return out


_THUMB = Markup('<span class="mover"><span class="pair"><img src="data:image/jpeg;base64,{o}" alt="{id}, original" '
                'width="{w}"><img src="data:image/jpeg;base64,{v}" alt="{id} at dose {dose}" width="{w}"></span>'
                '<span class="cap">{id}: {change}<br>original | dose {dose}</span></span>')


def movers_text(movers: list[dict]) -> Markup | str:
    """One line for a cell: `img12 −0.82 at dose 15; img7 +0.61 at dose −15.`, then the thumbnails the
    bundle holds for them (original | variant, id and change below), every string escaped."""
    if not movers:
        return ""
    line = "; ".join(f"{m['image_id']} {m['change']} at dose {m['dose']}" for m in movers)
    thumbs = [_THUMB.format(o=m["thumbs"][0], v=m["thumbs"][1], id=m["image_id"], dose=m["dose"],
                            change=m["change"], w=64) for m in movers if m.get("thumbs")]
    if not thumbs:
        return line + "."
    return Markup('{}.<span class="movers-thumbs">{}</span>').format(line, Markup("").join(thumbs))
