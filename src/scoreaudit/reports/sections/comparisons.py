"""Comparisons between readings: each `difference`/`ratio` cell as a sentence and a forest plot.

The plot shows the two readings with their CIs and, below, the comparison
itself (in the readings' units for a difference, on a ratio axis with the
claim's region shaded for a ratio), so a reader sees both what was compared
and how the comparison came out. Decompositions (`decompose`, `share`) show
the observed gap and its attribute and confound parts.
"""

from __future__ import annotations

from scoreaudit.compiler.settings import claim_level
from scoreaudit.reports import charts, fmt
from scoreaudit.reports.sections import section
from scoreaudit.reports.sections.first_screen import cell_anchor, labelled
from scoreaudit.reports.sentences import cell_sentence

TIMES = "\u00d7"


def _reading_label(ctx, r: dict, other: dict) -> str:
    parts = [ctx.label("scorer", r.get("scorer")) or "?"]
    if r.get("statistic") != other.get("statistic") or r.get("params") != other.get("params"):
        parts.append(str(r.get("statistic", "")).replace("_", " "))
    if r.get("probe") and r.get("probe") != other.get("probe"):  # probe readings (spec/probes.md)
        parts.append(f"under {r.get('probe')}")
    elif r.get("arm") != other.get("arm"):
        parts.append(f"on {ctx.label('arm', r.get('arm'))}")
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
    except Exception:  # noqa: BLE001 - a statistic this version does not know: name only
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


def _clip(band, rows, ref: float | None = None):
    """A half-open claimed region drawn a little past the data (never stretching the axis far beyond it)."""
    if band is None:
        return None
    vals = [v for r in rows for v in (r.est, r.lo, r.hi) if v is not None and v == v]
    vals += [x for x in (*band, ref) if x is not None and x not in (float("inf"), float("-inf"))]
    if not vals:
        return None
    pad = 0.05 * ((max(vals) - min(vals)) or 1.0)
    lo = band[0] if band[0] != float("-inf") else min(vals) - pad
    hi = band[1] if band[1] != float("inf") else max(vals) + pad
    return (lo, hi)


def heading(ctx, c: dict) -> str:
    """What a comparison compares, in words: `S1 · hps vs laion · on real`."""
    scorers = [ctx.label("scorer", s) for s in str(c.get("scorer") or "").split(":") if s]
    arms = [ctx.label("arm", a) for a in (c.get("arms") or ([c["arm"]] if c.get("arm") else []))]
    parts = [str(c.get("hypothesis") or c.get("id") or "")]
    if scorers:
        parts.append(" vs ".join(scorers))
    if arms:
        parts.append("on " + " vs ".join(arms))
    return " \u00b7 ".join(p for p in parts if p)


def _comparison_entry(ctx, c: dict, anchors: dict) -> dict:
    from scoreaudit.reports import labels

    d = c.get("detail") or {}
    readings = d.get("readings") or []
    kind = c.get("statistic")
    test = c.get("test") or {}
    rows = []
    if len(readings) == 2:
        for i, (r, other) in enumerate(((readings[0], readings[1]), (readings[1], readings[0]))):
            rows.append(charts.Row(label=_reading_label(ctx, r, other), est=r.get("estimate"), lo=r.get("ci_low"),
                                   hi=r.get("ci_high"), index=i,
                                   note=f"{fmt.num(r.get('estimate'))} {fmt.ci(r.get('ci_low'), r.get('ci_high'))}"))
    level = fmt.num(100 * (d.get("ci_level_readings") or 0.95), 2)
    cell_level = labels.level_pct(c.get("ci_level") or claim_level(ctx.alpha))
    first, second = (rows[0].label, rows[1].label) if len(rows) == 2 else ("first", "second")
    comp = charts.Row(label=kind or "comparison", est=c.get("estimate"), lo=c.get("ci_low"), hi=c.get("ci_high"),
                      index=2, bold=True,
                      note=f"{fmt.num(c.get('estimate'), signed=kind == 'difference')}{TIMES if kind == 'ratio' else ''} "
                           f"{fmt.ci(c.get('ci_low'), c.get('ci_high'))}")
    charts_out = []
    unit = _axis_label(ctx, readings[0]) if readings else ""
    shaded = _band(test) is not None
    rows = [r for r in rows if _drawn(r)]  # an undefined reading or comparison gets no empty axis, only words
    comp_drawn = _drawn(comp)
    if kind == "difference":
        all_rows = rows + ([comp] if comp_drawn else [])
        if all_rows:
            charts_out.append(charts.forest(all_rows, x_label=unit, ref=0.0, band=_clip(_band(test), all_rows, 0.0),
                                            title="The two readings and their difference" if comp_drawn
                                            else "The two readings"))
        caption = (f"Readings: {level}% CIs; difference ({first} \u2212 {second}): {cell_level} CI, the interval "
                   "the claim's test reads" + ("; shaded: the claimed region." if shaded else "."))
    else:
        if rows:
            charts_out.append(charts.forest(rows, x_label=unit, ref=0.0, title="The two readings"))
        if comp_drawn:
            charts_out.append(charts.forest([comp], x_label=f"ratio {first} \u00f7 {second} (\u00d7)", ref=1.0,
                                            band=_clip(_band(test), [comp], 1.0), title="Their ratio"))
        caption = (f"Readings: {level}% CIs; ratio: {cell_level} CI, the interval the claim's test reads; dashed "
                   "line at 1 (equal readings)" + ("; shaded: the claimed region." if shaded else "."))
    if not comp_drawn:
        caption += f" The {kind or 'comparison'} is undefined, so it has no chart: {c.get('undefined') or 'see the sentence'}."
    if not charts_out:
        caption = f"Nothing to draw: {c.get('undefined') or 'the readings and their comparison are undefined'}."
    return {"id": c.get("id"), "heading": heading(ctx, c), "anchor": anchors.get(c.get("id")),
            "sentence": labelled(cell_sentence(c), c, ctx), "charts": charts_out, "caption": caption,
            "pairing": d.get("pairing"),
            "test": labels.cell_test(c) or d.get("test"), "level": level, "claim": c.get("claim_text"),  # as the cell says
            "signflip": d.get("signflip")}


def _drawn(row: charts.Row) -> bool:
    """A row with a finite estimate (an interval alone is not drawn without its point)."""
    import math

    return isinstance(row.est, (int, float)) and math.isfinite(row.est)


def _singular(unit: str) -> str:
    """`degrees` → `degree`, `CIELAB units` → `CIELAB unit` (after "per")."""
    head, _, last = unit.rpartition(" ")
    if last in ("degrees", "units"):
        last = last[:-1]
    return f"{head} {last}".strip()


def _decomposition_entry(ctx, c: dict) -> dict | None:
    d = c.get("detail") or {}
    if "observed" not in d:
        return None
    rows = []
    for i, part in enumerate(("observed", "attribute", "confound")):
        lo, hi = (d.get(f"{part}_ci") or [None, None])[:2]
        rows.append(charts.Row(label={"observed": "observed gap", "attribute": "attribute part",
                                      "confound": "confound part"}[part], est=d.get(part), lo=lo, hi=hi, index=i,
                               bold=part == "observed", note=f"{fmt.signed(d.get(part))} {fmt.ci(lo, hi)}"))
    scorer, arm = ctx.label("scorer", c.get("scorer")), ctx.label("arm", c.get("arm"))
    title = f"{scorer} on {arm}: {d.get('by')} {d.get('a')} \u2212 {d.get('b')}, via {d.get('measure')}"
    units = "SD units" if ctx.scale == "sd" else "raw score units"
    level = fmt.num(100 * (d.get("ci_level") or 0.95), 2)
    munit = ctx.measures_unit(d.get("measure"))
    per = (f"per {_singular(munit)} of {d.get('measure')}" if munit and munit != d.get("measure")
           else f"per unit of {d.get('measure')}")
    return {"id": c.get("id"), "sentence": labelled(cell_sentence(c), c, ctx), "title": title, "level": level,
            "chart": charts.forest(rows, x_label=f"score gap {d.get('a')} \u2212 {d.get('b')} ({units})", ref=0.0,
                                   title="Observed gap and its two parts"),
            "beta": fmt.signed(d.get("beta")), "mgap": fmt.signed(d.get("measure_gap")), "measure": d.get("measure"),
            "per": per, "munit": munit if munit != d.get("measure") else "",
            "shares": _shares_text(c, d)}


def _shares_text(c: dict, d: dict) -> str:
    """The footnote's attribute and confound shares, or why they are undefined, with no number then.

    A share is part / observed gap: `share` (stats/comparisons.py) calls it undefined when the observed
    gap's (1 − alpha) CI includes 0; the footnote follows the same rule (and the cell's own undefined
    reason), so it never prints "174%" under a sentence that says the share is undefined.
    """
    import math

    lo, hi = (d.get("observed_ci") or [None, None])[:2]
    finite = all(isinstance(x, (int, float)) and math.isfinite(x) for x in (lo, hi))
    if c.get("undefined") or not finite or lo <= 0.0 <= hi:
        return "attribute and confound shares undefined (the observed gap's CI includes 0: no gap to share)"
    return (f"attribute share {fmt.pct(d.get('share_attribute'))}, "
            f"confound share {fmt.pct(d.get('share_confound'))}")


@section("comparisons", order=85, title="Comparisons between readings")
def comparisons(ctx) -> dict | None:
    every = ctx.results.get("cells") or []
    cells = [c for c in every if c.get("statistic") in ("difference", "ratio")]
    decomps = [c for c in every if c.get("statistic") in ("decompose", "share")]
    if not cells and not decomps:
        return None

    anchors = {c.get("id"): cell_anchor(i) for i, c in enumerate(every)}
    entries = [_comparison_entry(ctx, c, anchors) for c in cells]
    seen, parts = set(), []
    for c in decomps:  # `share` cells of one decomposition show it once
        e = _decomposition_entry(ctx, c)
        key = (c.get("scorer"), c.get("arm"), e and e["title"])
        if e is not None and key not in seen:
            seen.add(key)
            parts.append(e)
    return {"entries": entries, "decompositions": parts}
