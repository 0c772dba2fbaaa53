"""What each explorer page shows, as plain data (the templates only lay it out; every value is escaped there).

No page computes a statistic: numbers come from results.json and the bundle's tables. The one thing
built here is the ranking of what drives a cell (`contributors`): the clusters whose contrasts the
estimate averages, largest first; or, for a statistic without per-cluster contrasts, the images whose
score moves most between the operator's identity and its farthest dose; or the pairs with the widest
score gap.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from scoreaudit.numfmt import ci, num, plain, pval

FILTERS = ("hypothesis", "scorer", "arm", "outcome")
SORTS = ("id", "hypothesis", "scorer", "arm", "statistic", "estimate", "q", "outcome")
TOP = 6


def _f(x: Any) -> float | None:
    if x is None or isinstance(x, bool):
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _missing(v: Any) -> bool:
    """None, or a float NaN (how pandas gives a null of a text column that was all numbers)."""
    return v is None or (isinstance(v, float) and math.isnan(v))


def arm_text(cell: dict) -> str:
    arms = [str(a) for a in cell.get("arms") or [] if a]
    return str(cell.get("arm") or " \u2192 ".join(arms) or "")


def cell_rows(bundle, query: dict[str, str]) -> tuple[list[dict], dict[str, list[str]]]:
    """The cells list: rows filtered by `query` (hypothesis, scorer, arm, outcome exact; q at most; text in
    the id or sentence) and sorted by `sort` (`-` first for descending); plus each filter's choices."""
    titles = {h.get("name"): h.get("title") for h in bundle.results.get("hypotheses") or [] if isinstance(h, dict)}
    rows: list[dict[str, Any]] = [{"id": str(c.get("id")), "hypothesis": str(c.get("hypothesis") or ""),
             "title": str(titles.get(c.get("hypothesis")) or ""), "scorer": str(c.get("scorer") or ""),
             "arm": arm_text(c), "statistic": str(c.get("statistic") or ""),
             "estimate": _f(c.get("estimate")), "ci_low": _f(c.get("ci_low")), "ci_high": _f(c.get("ci_high")),
             "q": _f(c.get("q")), "outcome": str(c.get("outcome") or ""), "sentence": str(c.get("sentence") or ""),
             "estimate_text": num(c.get("estimate")), "ci_text": ci(c.get("ci_low"), c.get("ci_high")),
             "q_text": pval(c.get("q"))} for c in bundle.cells]
    choices = {k: sorted({r[k] for r in rows if r[k]}) for k in FILTERS}
    for k in FILTERS:
        if query.get(k):
            rows = [r for r in rows if r[k] == query[k]]
    qmax = _f(query.get("q_max"))
    if qmax is not None:
        rows = [r for r in rows if r["q"] is not None and r["q"] <= qmax]
    text = (query.get("text") or "").strip().lower()
    if text:
        rows = [r for r in rows if text in r["id"].lower() or text in r["sentence"].lower()
                or text in r["title"].lower()]
    key = (query.get("sort") or "").lstrip("-")
    if key in SORTS:
        numeric = key in ("estimate", "q")
        present = [r for r in rows if r[key] is not None]
        present.sort(key=lambda r: r[key] if numeric else str(r[key]), reverse=(query.get("sort") or "").startswith("-"))
        rows = present + [r for r in rows if r[key] is None]  # undefined numbers last either way
    return rows, choices


def cell_operator(cell: dict, ir: dict) -> str | None:
    """The operator a cell's numbers are about: its own parameter, its detail, or its selection's."""
    params, detail = cell.get("params") or {}, cell.get("detail") or {}
    for src in (params, detail):
        if isinstance(src.get("operator"), str):
            return src["operator"]
    sel = (ir.get("selections") or {}).get(params.get("selection")) if isinstance(params.get("selection"), str) else None
    if isinstance(sel, dict) and isinstance(sel.get("operator"), str):
        return sel["operator"]
    if isinstance(params.get("statistic"), str):  # a wrapper (transfers, homogeneous): its inner statistic's operator
        hyp = next((h for h in ir.get("hypotheses") or [] if h.get("name") == cell.get("hypothesis")), None)
        for claim in (hyp or {}).get("claims") or []:
            op = _find_key(claim, "operator")
            if op:
                return op
    return None


def _find_key(obj: Any, key: str) -> str | None:
    if isinstance(obj, dict):
        if isinstance(obj.get(key), str):
            return obj[key]
        for v in obj.values():
            hit = _find_key(v, key)
            if hit:
                return hit
    elif isinstance(obj, list):
        for v in obj:
            hit = _find_key(v, key)
            if hit:
                return hit
    return None


def dose_scores(bundle, arm: str, image_id: str, scorer: str, operator: str | None) -> list[dict]:
    """[{dose, score}] of one image under one operator (the identity dose included), by dose."""
    s = bundle.table("scores")
    if s.empty or operator is None:
        return []
    rows = s[(s["arm"] == arm) & (s["image_id"] == image_id) & (s["scorer"] == scorer) & (s["operator"] == operator)]
    return [{"dose": float(d), "dose_text": num(d), "score": _f(v), "score_text": num(v)}
            for d, v in sorted(zip(rows["dose"], rows["score"]))]


def _identity(ir: dict, operator: str) -> float:
    op = (ir.get("operators") or {}).get(operator) or (ir.get("placebos") or {}).get(operator) or {}
    return float(_f(op.get("identity")) or 0.0)


def contributors(bundle, cell: dict) -> dict:
    """What drives a cell, largest first: {kind, note, rows: [{arm, image_id, cluster, value, scores}]}."""
    arms = [str(a) for a in cell.get("arms") or [cell.get("arm")] if a]
    scorer = str(cell.get("scorer") or "")
    op = cell_operator(cell, bundle.ir)
    images = bundle.table("images")
    images = images[images["arm"].isin(arms)] if not images.empty else images
    con = bundle.table("contrasts")
    rows: list[dict] = []
    if not con.empty and (con["cell"] == cell.get("id")).any():
        mine = con[con["cell"] == cell.get("id")]
        g = len(mine)
        mine = mine.assign(mag=mine["value"].abs()).sort_values(["mag", "cluster"], ascending=[False, True]).head(TOP)
        for cl, v in zip(mine["cluster"], mine["value"]):
            members = images[images["cluster"].astype(str) == str(cl)] if not images.empty else images
            for arm, iid in list(zip(members["arm"], members["image_id"]))[:3]:
                rows.append({"arm": arm, "image_id": iid, "cluster": str(cl), "value": num(v),
                             "share": num(float(v) / g), "scores": dose_scores(bundle, arm, iid, scorer, op)})
        return {"kind": "clusters", "operator": op, "rows": rows, "value_label": "contrast", "group_label": "cluster",
                "note": f"The {g} clusters' contrasts are what the estimate averages; the largest in size first "
                        "(value / clusters is each one's share of the estimate)."}
    s = bundle.table("scores")
    if op is not None and not s.empty:
        mine = s[s["arm"].isin(arms) & (s["scorer"] == scorer) & (s["operator"] == op)].dropna(subset=["score"])
        if not mine.empty:
            ident = _identity(bundle.ir, op)
            far = max(mine["dose"], key=lambda d: (abs(float(d) - ident), float(d)))
            base = mine[mine["dose"] == ident].set_index(["arm", "image_id"])["score"]
            top = mine[mine["dose"] == far].set_index(["arm", "image_id"])["score"]
            change = (top - base.reindex(top.index)).dropna()
            order = change.abs().sort_values(ascending=False).index[:TOP]
            cl = images.set_index(["arm", "image_id"])["cluster"] if not images.empty else pd.Series(dtype=str)
            for arm, iid in order:
                rows.append({"arm": arm, "image_id": iid, "cluster": str(cl.get((arm, iid), "")),
                             "value": num(change[(arm, iid)]), "share": None,
                             "scores": dose_scores(bundle, arm, iid, scorer, op)})
            return {"kind": "images", "operator": op, "rows": rows, "value_label": "score change",
                    "group_label": "cluster",
                    "note": f"{cell.get('statistic')} keeps no per-cluster contrasts: these are the images whose "
                            f"{scorer} score moves most from {op}'s identity dose to its farthest ({num(far)})."}
    if not images.empty and "pair_id" in images and images["pair_id"].notna().any() and not s.empty:
        mine = s[s["arm"].isin(arms) & (s["scorer"] == scorer) & (s["operator"] == "original")]
        sc = mine.set_index("image_id")["score"]
        pairs = images[images["pair_id"].notna()]
        gaps = []
        for (arm, pid), grp in pairs.groupby(["arm", "pair_id"]):
            side = dict(zip(grp["side"], grp["image_id"]))
            a, b = _f(sc.get(side.get("preferred"))), _f(sc.get(side.get("other")))
            if a is not None and b is not None:
                gaps.append((abs(a - b), str(arm), str(pid), side.get("preferred"), a - b))
        for _, arm, pid, iid, gap in sorted(gaps, key=lambda t: (-t[0], t[2]))[:TOP]:
            rows.append({"arm": arm, "image_id": iid, "cluster": pid, "value": num(gap), "share": None, "scores": []})
        return {"kind": "pairs", "operator": None, "rows": rows, "value_label": "gap", "group_label": "pair",
                "note": "The pairs with the widest score gap (preferred minus other)."}
    params = cell.get("params") or {}
    original = s[s["arm"].isin(arms) & (s["scorer"] == scorer) & (s["operator"] == "original")].dropna(
        subset=["score"]) if not s.empty else s
    factor, column = params.get("factor"), params.get("column")
    if isinstance(factor, str) and not original.empty and factor in images:
        # a factor's effect within counterfactual sets: the sets where the score differs most across the factor
        m = original.merge(images[["arm", "image_id", "cluster", factor]], on=["arm", "image_id"])
        spread = m.groupby("cluster")["score"].agg(lambda v: float(v.max() - v.min())).sort_values(ascending=False)
        for cl in spread.index[:TOP]:
            for r in m[m["cluster"] == cl].sort_values("score", ascending=False).head(4).itertuples(index=False):
                rows.append({"arm": r.arm, "image_id": r.image_id, "cluster": f"{cl} ({factor} {getattr(r, factor)})",
                             "value": num(spread[cl]), "share": None,
                             "scores": [{"dose": 0.0, "dose_text": "score", "score": float(r.score), "score_text": num(r.score)}]})
        return {"kind": "sets", "operator": None, "rows": rows, "value_label": "score spread in the set",
                "group_label": "set", "note": f"The sets whose {scorer} score differs most across {factor} "
                                              "(largest minus smallest score in the set), each set's images by score."}
    if isinstance(column, str) and not original.empty and column in images:
        # agreement with a column: the images whose score rank is farthest from their rank in the column
        m = original.merge(images[["arm", "image_id", "cluster", column]], on=["arm", "image_id"])
        m = m[pd.to_numeric(m[column], errors="coerce").notna()]
        if len(m) >= 2:
            m = m.assign(rs=m["score"].rank(pct=True), rc=pd.to_numeric(m[column]).rank(pct=True))
            m = m.assign(gap=(m["rs"] - m["rc"]).abs()).sort_values(["gap", "image_id"], ascending=[False, True])
            for r in m.head(TOP).itertuples(index=False):
                rows.append({"arm": r.arm, "image_id": r.image_id, "cluster": str(r.cluster),
                             "value": f"{num(100 * r.rs)} vs {num(100 * r.rc)}", "share": None,
                             "scores": [{"dose": 0.0, "dose_text": "score", "score": float(r.score),
                                         "score_text": num(r.score)},
                                        {"dose": 0.0, "dose_text": column, "score": None,
                                         "score_text": str(getattr(r, column))}]})
            return {"kind": "ranks", "operator": None, "rows": rows, "value_label": f"score vs {column} percentile",
                    "group_label": "cluster", "note": f"The images whose {scorer} score rank is farthest from their "
                                                      f"{column} rank (percentiles): where the two disagree most."}
    return {"kind": "none", "operator": op, "rows": [], "value_label": "", "group_label": "",
            "note": "The bundle holds no per-image numbers this cell can be traced to."}


def histogram_svg(values: list[float], estimate: float | None, lo: float | None, hi: float | None,
                  width: int = 420, height: int = 120, bins: int = 12) -> dict | None:
    """Bars (x, y, w, h) and marker lines of a small histogram, in SVG user units; None below 2 values."""
    vals = [v for v in (_f(x) for x in values) if v is not None]
    if len(vals) < 2:
        return None
    marks = [m for m in (estimate, lo, hi) if m is not None]
    x0, x1 = min(vals + marks), max(vals + marks)
    if x1 == x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    pad = 0.04 * (x1 - x0)
    x0, x1 = x0 - pad, x1 + pad
    step = (x1 - x0) / bins
    counts = [0] * bins
    for v in vals:
        counts[min(bins - 1, int((v - x0) / step))] += 1
    top, plot_h = max(counts), height - 22

    def sx(v: float) -> float:
        return round((v - x0) / (x1 - x0) * width, 2)
    bars = [{"x": sx(x0 + i * step) + 0.5, "w": round(width / bins - 1, 2), "y": round(plot_h - c / top * (plot_h - 4), 2),
             "h": round(c / top * (plot_h - 4), 2), "n": c, "from": num(x0 + i * step), "to": num(x0 + (i + 1) * step)}
            for i, c in enumerate(counts) if c]
    lines = [{"x": sx(m), "kind": k, "label": f"{k} {num(m)}"}
             for m, k in ((estimate, "estimate"), (lo, "interval"), (hi, "interval")) if m is not None]
    return {"width": width, "height": height, "plot_h": plot_h, "bars": bars, "lines": lines, "n": len(vals),
            "lo_text": num(x0), "hi_text": num(x1)}


def cell_page(bundle, cell: dict) -> dict:
    con = bundle.table("contrasts")
    values = con.loc[con["cell"] == cell.get("id"), "value"].tolist() if not con.empty else []
    hyp = next((h for h in bundle.results.get("hypotheses") or [] if isinstance(h, dict)
                and h.get("name") == cell.get("hypothesis")), {})
    detail = {str(k): v for k, v in (cell.get("detail") or {}).items() if not isinstance(v, (dict, list))}
    return {"cell": cell, "hypothesis_title": str(hyp.get("title") or ""), "arm": arm_text(cell),
            "estimate": num(cell.get("estimate")), "interval": ci(cell.get("ci_low"), cell.get("ci_high")),
            "level": plain(100 * (_f(cell.get("ci_level")) or 0)) + "%" if _f(cell.get("ci_level")) else "",
            "p": pval(cell.get("p")), "q": pval(cell.get("q")), "detail": detail,
            "histogram": histogram_svg(values, _f(cell.get("estimate")), _f(cell.get("ci_low")), _f(cell.get("ci_high"))),
            "contributors": contributors(bundle, cell)}


def _wide(t: pd.DataFrame, column: str, value: str) -> tuple[list[str], list[dict]]:
    """Rows (operator, dose) x columns `column`'s values, each cell a formatted number."""
    if t.empty:
        return [], []
    names = sorted(t[column].astype(str).unique())
    out = []
    for (op, dose), grp in t.groupby(["operator", "dose"], sort=True):
        vals = dict(zip(grp[column].astype(str), grp[value]))
        out.append({"operator": str(op), "dose": num(dose), "values": [num(vals.get(n)) for n in names]})
    out.sort(key=lambda r: (r["operator"] != "original", r["operator"]))
    return names, out


def image_page(bundle, arm: str, image_id: str, row: dict) -> dict:
    s, m = bundle.table("scores"), bundle.table("measures")
    s = s[(s["arm"] == arm) & (s["image_id"] == image_id)] if not s.empty else s
    m = m[(m["arm"] == arm) & (m["image_id"] == image_id)] if not m.empty else m
    scorers, score_rows = _wide(s, "scorer", "score")
    measures, measure_rows = _wide(m, "name", "value")
    reg = bundle.table("regions")
    regions = [{"region": str(r), "coverage": num(c)} for r, c in zip(
        reg.loc[(reg["arm"] == arm) & (reg["image_id"] == image_id), "region"],
        reg.loc[(reg["arm"] == arm) & (reg["image_id"] == image_id), "coverage"])] if not reg.empty else []
    ex = bundle.table("exclusions")
    exclusions = ex[(ex["arm"] == arm) & (ex["image_id"] == image_id)].to_dict("records") if not ex.empty else []
    row = {k: (None if _missing(v) else v) for k, v in row.items()}
    fixed = ("arm", "image_id", "row", "cluster", "content_hash", "width", "height", "side", "pair_id")
    columns = {k: v for k, v in row.items() if k not in fixed and not _missing(v)}
    cells = [c for c in bundle.cells if arm in (c.get("arms") or [c.get("arm")])]
    return {"arm": arm, "image_id": image_id, "row": row, "columns": columns, "scorers": scorers,
            "score_rows": score_rows, "measures": measures, "measure_rows": measure_rows, "regions": regions,
            "exclusions": exclusions, "thumbs": bundle.thumbs_of(arm, image_id), "cells": cells}


def exclusions_page(bundle) -> list[dict]:
    """Exclusions grouped by (stage, reason), largest group first, each with its rows (at most 200 shown)."""
    ex = bundle.table("exclusions")
    if ex.empty:
        return []
    groups: list[dict[str, Any]] = []
    for (stage, reason), grp in ex.groupby(["stage", "reason"], dropna=False, sort=True):
        rows = [{k: (None if _missing(v) else v) for k, v in r.items()} for r in grp.head(200).to_dict("records")]
        groups.append({"stage": str(stage), "reason": str(reason), "count": len(grp), "rows": rows})
    groups.sort(key=lambda g: (-g["count"], g["stage"], g["reason"]))
    return groups
