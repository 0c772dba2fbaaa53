"""Comparisons between readings: each `difference`/`ratio` cell as a sentence and a forest plot.

The plot shows the two readings with their CIs and, below, the comparison
itself (in the readings' units for a difference, on a ratio axis with the
claim's region shaded for a ratio), so a reader sees both what was compared
and how the comparison came out. Decompositions (`decompose`, `share`) show
the observed gap and its attribute and confound parts.
"""

from __future__ import annotations

from scoreaudit.reports import charts, fmt
from scoreaudit.reports.sections import section
from scoreaudit.reports.sentences import cell_sentence


def _reading_label(r: dict, other: dict) -> str:
    parts = [r.get("scorer") or "?"]
    if r.get("statistic") != other.get("statistic") or r.get("params") != other.get("params"):
        parts.append(str(r.get("statistic", "")).replace("_", " "))
    if r.get("arm") != other.get("arm"):
        parts.append(f"on {r.get('arm')}")
    if (r.get("where") or []) != (other.get("where") or []):
        parts.append("where " + " and ".join(f"{c} = {v}" for c, v in r.get("where") or []))
    return " \u00b7 ".join(parts)


def _axis_label(ctx, r: dict) -> str:
    """The statistic's name and unit: `fidelity index (SD units)`, `pairwise accuracy (share)`."""
    from scoreaudit import registry

    name = str(r.get("statistic", ""))
    unit = None
    try:
        registry.load_plugins()
        unit = registry.statistics.get(name).meta.get("unit")
    except Exception:  # a statistic this version does not know: name only
        unit = None
    words = name.replace("_", " ")
    if unit == "sd":
        return f"{words} ({'SD units' if ctx.scale == 'sd' else 'raw score units'})"
    return f"{words} ({unit})" if unit else words


def _band(test: dict) -> tuple[float, float] | None:
    kind = test.get("kind")
    if kind == "equivalence":
        return (test.get("low"), test.get("high"))
    if kind == "greater":
        return (test.get("threshold"), float("inf"))
    if kind == "less":
        return (float("-inf"), test.get("threshold"))
    return None


def _clip(band, rows):
    """A half-open claimed region drawn to the edge of the data."""
    if band is None:
        return None
    vals = [v for r in rows for v in (r.est, r.lo, r.hi) if v is not None and v == v]
    lo = band[0] if band[0] != float("-inf") else min(vals + [band[1]]) - 1
    hi = band[1] if band[1] != float("inf") else max(vals + [band[0]]) + 1
    return (lo, hi)


def _comparison_entry(ctx, c: dict) -> dict:
    d = c.get("detail") or {}
    readings = d.get("readings") or []
    kind = c.get("statistic")
    test = c.get("test") or {}
    rows = []
    if len(readings) == 2:
        for i, (r, other) in enumerate(((readings[0], readings[1]), (readings[1], readings[0]))):
            rows.append(charts.Row(label=_reading_label(r, other), est=r.get("estimate"), lo=r.get("ci_low"),
                                   hi=r.get("ci_high"), index=i,
                                   note=f"{fmt.num(r.get('estimate'))} {fmt.ci(r.get('ci_low'), r.get('ci_high'))}"))
    comp = charts.Row(label=f"{kind} (claim)", est=c.get("estimate"), lo=c.get("ci_low"), hi=c.get("ci_high"),
                      index=2, bold=True,
                      note=f"{fmt.num(c.get('estimate'), signed=kind == 'difference')} "
                           f"{fmt.ci(c.get('ci_low'), c.get('ci_high'))}")
    level = fmt.num(100 * (d.get("ci_level_readings") or 0.95), 2)
    charts_out = []
    unit = _axis_label(ctx, readings[0]) if readings else ""
    if kind == "difference":
        all_rows = rows + [comp]
        charts_out.append(charts.forest(all_rows, x_label=unit, ref=0.0,
                                        band=_clip(_band(test), all_rows), title=f"{c.get('id')}: readings and difference"))
    else:
        if rows:
            charts_out.append(charts.forest(rows, x_label=unit, ref=0.0, title=f"{c.get('id')}: readings"))
        charts_out.append(charts.forest([comp], x_label="ratio", ref=1.0, band=_clip(_band(test), [comp]),
                                        title=f"{c.get('id')}: ratio"))
    return {"id": c.get("id"), "sentence": cell_sentence(c), "charts": charts_out, "pairing": d.get("pairing"),
            "test": d.get("test"), "level": level, "claim": c.get("claim_text"),
            "mcnemar": d.get("mcnemar")}


def _decomposition_entry(c: dict) -> dict | None:
    d = c.get("detail") or {}
    if "observed" not in d:
        return None
    rows = []
    for i, part in enumerate(("observed", "attribute", "confound")):
        lo, hi = (d.get(f"{part}_ci") or [None, None])[:2]
        rows.append(charts.Row(label={"observed": "observed gap", "attribute": "attribute part",
                                      "confound": "confound part"}[part], est=d.get(part), lo=lo, hi=hi, index=i,
                               bold=part == "observed", note=f"{fmt.signed(d.get(part))} {fmt.ci(lo, hi)}"))
    title = f"{c.get('scorer')} on {c.get('arm')}: {d.get('by')} {d.get('a')} \u2212 {d.get('b')} via {d.get('measure')}"
    return {"id": c.get("id"), "sentence": cell_sentence(c), "title": title,
            "chart": charts.forest(rows, x_label="score gap", ref=0.0, title=title),
            "beta": fmt.signed(d.get("beta")), "mgap": fmt.signed(d.get("measure_gap")), "measure": d.get("measure"),
            "share_attribute": fmt.pct(d.get("share_attribute")), "share_confound": fmt.pct(d.get("share_confound"))}


@section("comparisons", order=85, title="Comparisons between readings")
def comparisons(ctx) -> dict | None:
    every = ctx.results.get("cells") or []
    cells = [c for c in every if c.get("statistic") in ("difference", "ratio")]
    decomps = [c for c in every if c.get("statistic") in ("decompose", "share")]
    if not cells and not decomps:
        return None
    entries = [_comparison_entry(ctx, c) for c in cells]
    seen, parts = set(), []
    for c in decomps:  # `share` cells of one decomposition show it once
        e = _decomposition_entry(c)
        key = (c.get("scorer"), c.get("arm"), e and e["title"])
        if e is not None and key not in seen:
            seen.add(key)
            parts.append(e)
    return {"entries": entries, "decompositions": parts}
