"""Two cross-image views drawn from the cells' own detail (no tables needed):

- recall@k (`recall_best`, `filter_worst`): each cell's rate with its interval against the rate chance gives
  (the statistics' `chance`: the expected hit rate of a random order of each cluster's images);
- `correlate`: each group's value of the inner statistic against the external table's value, as a table and a
  scatter, with every group left out and why.
"""

from __future__ import annotations

from scoreaudit.compiler.settings import claim_level
from scoreaudit.reports import charts, fmt, labels
from scoreaudit.reports.sections import section
from scoreaudit.reports.sections.first_screen import cell_anchor
from scoreaudit.stats.sentences import stat_name

RECALL = ("recall_best", "filter_worst")


@section("ranked", order=135, title="Recall against chance and per-group correlations", listed=False)
def ranked(ctx) -> dict | None:
    cells = ctx.results.get("cells") or []
    index = {id(c): i for i, c in enumerate(cells)}
    recall = [c for c in cells if c.get("statistic") in RECALL]
    corr = [c for c in cells if c.get("statistic") == "correlate" and (c.get("detail") or {}).get("groups")]
    if not recall and not corr:
        return None
    out: dict = {"recall": None, "correlate": []}
    if recall:
        rows = []
        for i, c in enumerate(recall):
            d = c.get("detail") or {}
            name = f"{ctx.label('scorer', c.get('scorer'))} \u00b7 {ctx.label('arm', c.get('arm'))} \u00b7 " \
                   f"{stat_name(c['statistic'])}@{d.get('top_k', (c.get('params') or {}).get('k', 1))}"
            rows.append(charts.Row(label=name, est=c.get("estimate"), lo=c.get("ci_low"), hi=c.get("ci_high"),
                                   index=i, note=f"{fmt.num(c.get('estimate'))} {fmt.ci(c.get('ci_low'), c.get('ci_high'))}"))
            rows.append(charts.Row(label="chance (random order)", est=d.get("chance"), index=6,
                                   note=fmt.num(d.get("chance"))))
        level = labels.ci(labels.row_level(recall, default=claim_level(ctx.alpha)), kind="Wilson CI")
        out["recall"] = {"chart": charts.forest(rows, x_label="share of clusters whose pick is a hit (0\u20131)",
                                                title=f"Recall against chance ({level})"),
                         "level": level}
    for c in corr:
        d = c.get("detail") or {}
        groups, xs, ys = d.get("groups") or [], d.get("values") or [], d.get("table_values") or []
        params = c.get("params") or {}
        inner = stat_name(str(c.get("inner") or (d.get("statistic") or "") or "inner statistic"))
        points = [(y, x) for x, y in zip(xs, ys) if isinstance(x, (int, float)) and isinstance(y, (int, float))]
        title = f"{ctx.label('scorer', c.get('scorer'))} on {ctx.label('arm', c.get('arm'))}: per {params.get('by')}"
        out["correlate"].append({
            "anchor": cell_anchor(index[id(c)]), "id": c.get("id"), "title": title,
            "method": params.get("method", "pearson"),
            "estimate": fmt.signed(c.get("estimate")), "ci": fmt.ci(c.get("ci_low"), c.get("ci_high")),
            "column": params.get("column"), "table": params.get("table"), "inner": inner,
            "rows": [{"group": g, "value": fmt.signed(x), "table": fmt.num(y)} for g, x, y in zip(groups, xs, ys)],
            "dropped": [{"group": g, "why": why} for g, why in (d.get("dropped") or {}).items()],
            "chart": charts.xy_plot(title=title, x_label=f"{params.get('column')} ({params.get('table')})",
                                    y_label=inner, points=points) if len(points) >= 2 else None})
    return out
