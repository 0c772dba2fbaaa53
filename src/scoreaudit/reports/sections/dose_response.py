"""Within-image dose response: fidelity curves, operator uniformity, placebo ratios, artifact control."""

from __future__ import annotations

import re

from scoreaudit.reports import charts, fmt, labels
from scoreaudit.reports.sections import section


def _unit_label(ctx, unit: str | None) -> str:
    unit = unit or ctx.scale
    return "\u0394 score (SD units)" if unit == "sd" else ("\u0394 score (raw)" if unit == "raw" else f"\u0394 score ({unit})")


_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


def thumbnail_strip(ctx, operator: str) -> dict | None:
    """One image at every dose of `operator` (from thumbnails.json), or None when off or absent."""
    if (ctx.ir.get("report") or {}).get("thumbnails") is False:
        return None
    t = ctx.thumbnails.get(operator)
    if not isinstance(t, dict) or not t.get("doses"):
        return None
    unit = ctx.dose_unit(operator)
    items = []
    for d in t["doses"]:
        jpeg = str(d.get("jpeg") or "")
        if not _BASE64.match(jpeg):  # only well-formed base64 reaches a data: URI
            continue
        dose = d.get("dose")
        identity = dose == t.get("identity")
        items.append({"src": "data:image/jpeg;base64," + jpeg,
                      "label": f"{fmt.plain(dose)}" + (" (original)" if identity else ""),
                      "alt": f"{ctx.label('operator', operator)} at dose {fmt.plain(dose)} {unit}"})
    if not items:
        return None
    region = t.get("region")
    return {"thumbs": items, "unit": unit, "image": t.get("image_id"), "arm": ctx.label("arm", t.get("arm")),
            "region": region}


@section("curves", order=40, title="Fidelity curves")
def curves(ctx) -> dict | None:
    rows = ctx.section("curves")
    if not rows:
        return None
    operators: list[str] = []
    for r in rows:
        if r.get("operator") not in operators:
            operators.append(r.get("operator"))
    arms = sorted({r.get("arm") for r in rows}, key=lambda a: list(ctx.results.get("arms") or {}).index(a)
                  if a in (ctx.results.get("arms") or {}) else 99)
    declared = list(ctx.operators)
    operators.sort(key=lambda o: declared.index(o) if o in declared else len(declared))
    figures = []
    for op in operators:
        op_rows = [r for r in rows if r.get("operator") == op]
        scorers: list[str] = []
        for r in op_rows:
            if r.get("scorer") not in scorers:
                scorers.append(r.get("scorer"))
        series_by_scorer = {}
        for s in scorers:
            series_by_scorer[s] = [
                charts.Series(label=ctx.label("arm", r.get("arm", "?")), index=arms.index(r.get("arm")),
                              points=[(p.get("dose"), p.get("mean"), p.get("ci_low"), p.get("ci_high"))
                                      for p in r.get("points") or []])
                for r in op_rows if r.get("scorer") == s]
        ylim = charts.y_range([x for ss in series_by_scorer.values() for x in ss])
        first = op_rows[0]
        x_label = f"dose ({ctx.dose_unit(op)})"
        y_label = _unit_label(ctx, first.get("unit"))
        panels = [charts.line_panel(series_by_scorer[s], title=f"{ctx.label('scorer', s)} \u00b7 {ctx.label('operator', op)}",
                                    x_label=x_label, y_label=y_label, ylim=ylim,
                                    ref_x=first.get("identity")) for s in scorers]
        level = labels.section_level(ctx, [p for r in op_rows for p in r.get("points") or []])
        figures.append({"strip": thumbnail_strip(ctx, op), "level": labels.level_pct(level), "operator": op,
                        "label": ctx.label("operator", op), "placebo_of": first.get("placebo_of"), "panels": panels,
                        "legend": charts.legend([ctx.label("arm", a) for a in arms]), "n_panels": len(panels)})
    return {"figures": figures, "arms": arms, "level": figures[0]["level"] if figures else labels.level_pct(1 - ctx.alpha)}


@section("placebo", order=50, title="Placebo ratios")
def placebo(ctx) -> dict | None:
    rows = ctx.section("placebo")
    if not rows:
        return None
    bands = {(c.get("scorer"), c.get("arm")): ctx.tests.get(c.get("id"), {}) for c in ctx.cells_for("placebo_ratio")}
    band = None
    for t in bands.values():
        if t.get("kind") == "equivalence" and t.get("low") is not None:
            band = (t["low"], t["high"])
            break
    arms = sorted({r.get("arm") for r in rows})
    chart_rows, table = [], []
    for r in rows:
        label = f"{ctx.label('scorer', r.get('scorer'))} \u00b7 {ctx.label('arm', r.get('arm'))}"
        note = "undefined" if r.get("ratio") is None else f"{fmt.num(r.get('ratio'))} {fmt.ci(r.get('ci_low'), r.get('ci_high'))}"
        chart_rows.append(charts.Row(label=label, est=r.get("ratio"), lo=r.get("ci_low"), hi=r.get("ci_high"),
                                     note=note, index=arms.index(r.get("arm"))))
        table.append({"scorer": ctx.label("scorer", r.get("scorer")), "arm": ctx.label("arm", r.get("arm")),
                      "pair": f"{ctx.label('operator', r.get('operator'))} / {ctx.label('operator', r.get('placebo'))}",
                      "ratio": fmt.num(r.get("ratio")), "ci": fmt.ci(r.get("ci_low"), r.get("ci_high")),
                      "fi_op": fmt.signed(r.get("fi_operator")), "fi_pl": fmt.signed(r.get("fi_placebo")),
                      "fi_pl_ci": fmt.ci(r.get("fi_placebo_ci_low"), r.get("fi_placebo_ci_high")),
                      "undefined": r.get("undefined") or ""})
    positive = all((r.est is None or r.est > 0) and (r.lo is None or r.lo > 0) for r in chart_rows)
    chart = charts.forest(chart_rows, x_label="placebo ratio R = FI(operator) / FI(placebo) (unitless)", ref=1.0, band=band,
                          log=positive, title="R per scorer and arm")
    level = labels.level_pct(labels.section_level(ctx, rows))
    return {"chart": chart, "rows": table, "level": level, "band": band and f"[{fmt.plain(band[0])}, {fmt.plain(band[1])}]",
            "placebo_ci": any(t["fi_pl_ci"] != fmt.UNDEFINED for t in table)}


@section("uniformity", order=100, title="Operator uniformity")
def uniformity(ctx) -> dict | None:
    rows = ctx.section("uniformity")
    if not rows:
        return None
    fi_sided = {labels.sided(r.get("p_sided"), "greater") for r in rows}
    asym_sided = {labels.sided(r.get("asym_p_sided"), "two-sided") for r in rows}
    return {"unit": _unit_label(ctx, None), "level": labels.ci(labels.section_level(ctx, rows)),
            "fi_p": " / ".join(sorted(fi_sided)), "asym_p": " / ".join(sorted(asym_sided)),
            "rows": [{
                "scorer": ctx.label("scorer", r.get("scorer")), "arm": ctx.label("arm", r.get("arm")),
                "operator": ctx.label("operator", r.get("operator")), "placebo_of": r.get("placebo_of"),
                "fi": fmt.signed(r.get("fi")), "fi_ci": fmt.ci(r.get("fi_ci_low"), r.get("fi_ci_high")),
                "fi_p": fmt.pval(r.get("fi_p")),
                "a": fmt.signed(r.get("asymmetry")), "a_ci": fmt.ci(r.get("asym_ci_low"), r.get("asym_ci_high")),
                "a_p": fmt.pval(r.get("asym_p")), "n": fmt.count(r.get("n_clusters"))} for r in rows]}


@section("attribute", order=105, title="Attribute vs. artifact")
def attribute(ctx) -> dict | None:
    rows = ctx.section("attribute")
    if not rows:
        return None
    models = []
    for r in rows:
        models.append({
            "title": f"{ctx.label('scorer', r.get('scorer'))} on {ctx.label('arm', r.get('arm'))}: {ctx.label('operator', r.get('operator'))}",
            "formula": "\u0394score ~ \u0394" + " + ".join([str(r.get("measure"))] + [str(c) for c in r.get("controlling") or []])
                       + " + image fixed effects",
            "n_rows": fmt.count(r.get("n_rows")), "n_clusters": fmt.count(r.get("n_clusters")),
            "terms": [{"name": t.get("name"), "role": t.get("role"), "beta": fmt.signed(t.get("beta")),
                       "se": fmt.num(t.get("se")), "ci": fmt.ci(t.get("ci_low"), t.get("ci_high")),
                       "p": fmt.pval(t.get("p"))} for t in r.get("terms") or []]})
    return {"models": models, "level": labels.ci(labels.section_level(ctx, rows))}
