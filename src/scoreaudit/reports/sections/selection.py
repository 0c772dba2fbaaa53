"""Best-of-n selection drift: argmax drift a, random-pick drift r, and net = a − r."""

from __future__ import annotations

from scoreaudit.reports import charts, fmt, labels
from scoreaudit.reports.sections import section


def _est(d: dict | None) -> tuple:
    d = d or {}
    return d.get("estimate"), d.get("ci_low"), d.get("ci_high")


@section("drift", order=60, title="Best-of-n drift")
def drift(ctx) -> dict | None:
    rows = ctx.section("drift")
    if not rows:
        return None
    band = None
    for c in ctx.cells_for("net_drift"):
        t = ctx.tests.get(c.get("id"), {})
        if t.get("kind") == "equivalence" and t.get("low") is not None:
            band = (t["low"], t["high"])
    groups = []
    for sel in dict.fromkeys(r.get("selection") for r in rows):
        sel_rows = [r for r in rows if r.get("selection") == sel]
        first = sel_rows[0]
        unit = first.get("unit") or first.get("measure") or ""
        arms = list(dict.fromkeys(r.get("arm") for r in sel_rows))
        chart_rows, table = [], []
        for r in sel_rows:
            e, lo, hi = _est(r.get("net"))
            chart_rows.append(charts.Row(label=f"{ctx.label('scorer', r.get('scorer'))} \u00b7 {ctx.label('arm', r.get('arm'))}", est=e, lo=lo, hi=hi,
                                         note=f"{fmt.signed(e)} {fmt.ci(lo, hi)}", index=arms.index(r.get("arm"))))
            a, r_ = _est(r.get("argmax")), _est(r.get("random"))
            table.append({"scorer": ctx.label("scorer", r.get("scorer")), "arm": ctx.label("arm", r.get("arm")), "groups": fmt.count(r.get("groups")),
                          "a": fmt.signed(a[0]), "a_ci": fmt.ci(a[1], a[2]), "r": fmt.signed(r_[0]),
                          "r_ci": fmt.ci(r_[1], r_[2]), "net": fmt.signed(e), "net_ci": fmt.ci(lo, hi),
                          "p": fmt.pval((r.get("net") or {}).get("p"))})
        groups.append({
            "selection": sel, "n": first.get("n"), "measure": first.get("measure"), "operator": first.get("operator"),
            "unit": unit, "rows": table,
            "chart": charts.forest(chart_rows, x_label=f"net drift of {first.get('measure')} ({unit})", ref=0.0,
                                   band=band, title=f"Net drift, {sel}")})
    return {"groups": groups, "band": band and f"[{fmt.plain(band[0])}, {fmt.plain(band[1])}]",
            "level": labels.ci(labels.section_level(ctx, rows)),
            "p_words": " / ".join(sorted({labels.sided(r.get("p_sided"), "two-sided") for r in rows}))}
