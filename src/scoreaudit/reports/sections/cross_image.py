"""Cross-image designs: pairwise accuracy, agreement with human ratings, counterfactual factors, ranks."""

from __future__ import annotations

from scoreaudit.compiler.settings import claim_level
from scoreaudit.reports import charts, fmt, labels
from scoreaudit.reports.sections import section

#: how an agreement row names its statistic (a scorer with three correlations reads as three different rows)
METHOD_NAMES = {"spearman": "Spearman \u03c1", "pearson": "Pearson r", "kendall": "Kendall \u03c4"}


@section("pairs", order=110, title="Pairwise accuracy")
def pairs(ctx) -> dict | None:
    rows = ctx.section("pairs")
    if not rows:
        return None
    chart_rows = [charts.Row(label=f"{ctx.label('scorer', r.get('scorer'))} \u00b7 {ctx.label('arm', r.get('arm'))}",
                             est=r.get("accuracy"), lo=r.get("ci_low"),
                             hi=r.get("ci_high"), note=f"{fmt.pct(r.get('accuracy'))} {fmt.ci(r.get('ci_low'), r.get('ci_high'))}",
                             index=i) for i, r in enumerate(rows)]
    level = labels.ci(labels.section_level(ctx, rows), kind="Wilson CI")
    tests = {(r.get("test") or {}).get("kind") for r in rows}
    if tests == {"greater"}:
        p_words = "exact binomial test, one-sided (H\u2080: accuracy \u2264 the claimed value)"
    elif tests == {"less"}:
        p_words = "exact binomial test, one-sided (H\u2080: accuracy \u2265 the claimed value)"
    else:
        p_words = "exact binomial test of each cell's claim (" + ", ".join(
            labels.sided(t, "two-sided") for t in sorted(t or "two-sided" for t in tests)) + ")"
    has_gap = any(r.get("mean_gap") is not None for r in rows)
    gap_level = labels.ci(labels.row_level(rows, "mean_gap_ci_level", claim_level(ctx.alpha)))
    return {"chart": charts.forest(chart_rows, x_label="share of pairs where the preferred image scores higher (0–1)",
                                   ref=0.5, title=f"Pairwise accuracy ({level})"),
            "level": level, "p_words": p_words, "has_gap": has_gap, "gap_level": gap_level,
            "gap_unit": "SD" if ctx.scale == "sd" else "raw score",
            "rows": [{"scorer": ctx.label("scorer", r.get("scorer")), "arm": ctx.label("arm", r.get("arm")),
                      "acc": fmt.num(r.get("accuracy")),
                      "ci": fmt.ci(r.get("ci_low"), r.get("ci_high")), "p": fmt.pval(r.get("p")),
                      "n": fmt.count(r.get("n_pairs")), "ties": fmt.count(r.get("ties")),
                      "gap": fmt.signed(r.get("mean_gap")), "gap_ci": fmt.ci(r.get("mean_gap_ci_low"), r.get("mean_gap_ci_high"))}
                     for r in rows]}


@section("agreement", order=120, title="Agreement with human ratings")
def agreement(ctx) -> dict | None:
    rows = ctx.section("agreement")
    if not rows:
        return None
    chart_rows = [charts.Row(label=f"{ctx.label('scorer', r.get('scorer'))} \u00b7 {METHOD_NAMES.get(r.get('method'), r.get('method'))} \u00b7 {r.get('column')}", est=r.get("r"), lo=r.get("ci_low"),
                             hi=r.get("ci_high"), note=f"{fmt.signed(r.get('r'))} {fmt.ci(r.get('ci_low'), r.get('ci_high'))}",
                             index=i) for i, r in enumerate(rows)]
    level = labels.ci(labels.section_level(ctx, rows))
    sides = sorted({labels.sided((r.get("test") or {}).get("kind"), "two-sided") for r in rows})
    return {"level": level, "p_words": " / ".join(sides),
            "chart": charts.forest(chart_rows, x_label="correlation with the human column (r, −1 to 1)", ref=0.0,
                                   title=f"Agreement ({level})"),
            "rows": [{"scorer": ctx.label("scorer", r.get("scorer")), "arm": ctx.label("arm", r.get("arm")), "method": r.get("method"), "column": r.get("column"),
                      "r": fmt.signed(r.get("r")), "ci": fmt.ci(r.get("ci_low"), r.get("ci_high")), "p": fmt.pval(r.get("p")),
                      "r2": fmt.pct(r.get("variance_explained")), "n": fmt.count(r.get("n"))} for r in rows]}


@section("factors", order=130, title="Counterfactual factor effects")
def factors(ctx) -> dict | None:
    rows = ctx.section("factors")
    if not rows:
        return None
    items = []
    for r in rows:
        levels = r.get("levels") or []
        chart_rows = [charts.Row(label=str(lv.get("level")), est=lv.get("mean"), lo=lv.get("ci_low"), hi=lv.get("ci_high"),
                                 note=f"{fmt.signed(lv.get('mean'))} {fmt.ci(lv.get('ci_low'), lv.get('ci_high'))}")
                      for lv in levels]
        items.append({"title": f"{ctx.label('scorer', r.get('scorer'))} on {ctx.label('arm', r.get('arm'))}: {r.get('factor')}", "model": r.get("model") or r.get("factor"),
                      "effect": fmt.num(r.get("effect")), "ci": fmt.ci(r.get("ci_low"), r.get("ci_high")),
                      "p": fmt.pval(r.get("p")), "df": fmt.count(r.get("wald_df")),
                      "level": labels.ci(labels.row_level([r], default=claim_level(ctx.alpha))),
                      "unit": "SD" if ctx.scale == "sd" else "raw score",
                      "chart": charts.forest(chart_rows, x_label=f"marginal mean of the z-scored score by {r.get('factor')} (SD)",
                                             ref=0.0, title=f"Marginal means by {r.get('factor')}")})
    return {"entries": items}


@section("ranks", order=140, title="Rank spreads")
def ranks(ctx) -> dict | None:
    rows = ctx.section("ranks")
    if not rows:
        return None
    items = []
    for r in rows:
        levels = r.get("levels") or []
        chart_rows = [charts.Row(label=str(lv.get("level")), est=lv.get("mean_rank"), note=fmt.num(lv.get("mean_rank")))
                      for lv in levels]
        items.append({"title": f"{ctx.label('scorer', r.get('scorer'))} on {ctx.label('arm', r.get('arm'))}: {r.get('factor')}", "spread": fmt.num(r.get("spread")),
                      "p": fmt.pval(r.get("p")), "stat": fmt.num(r.get("friedman_statistic")),
                      "n": fmt.count(r.get("n_clusters")),
                      "chart": charts.forest(chart_rows, x_label="average within-set rank (1 = highest score)",
                                             title=f"Average rank by {r.get('factor')}")})
    return {"entries": items}
