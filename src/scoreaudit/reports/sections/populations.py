"""Across arms and populations: synthetic→real transfer, stratified (homogeneity) results."""

from __future__ import annotations

from scoreaudit.compiler.settings import claim_level
from scoreaudit.reports import charts, fmt, labels
from scoreaudit.reports.sections import section
from scoreaudit.reports.sentences import stat_name

TRANSFER_MEANING = {
    "consistent": "both significant, same sign, ratio's interval includes 1",
    "attenuation": "both significant, same sign, the real effect is smaller (ratio's interval below 1)",
    "amplification": "both significant, same sign, the real effect is larger (ratio's interval above 1)",
    "reversal": "both significant, opposite signs",
    "collapse": "significant on the synthetic arm only",
    "emergence": "significant on the real arm only",
    "null": "significant on neither arm",
}


@section("transfer", order=70, title="Synthetic \u2192 real transfer")
def transfer(ctx) -> dict | None:
    rows = ctx.section("transfer")
    if not rows:
        return None
    out = []
    for r in rows:
        cls = r.get("class") or "null"
        out.append({
            "scorer": ctx.label("scorer", r.get("scorer")), "statistic": r.get("statistic"),
            "source": ctx.label("arm", r.get("source")), "target": ctx.label("arm", r.get("target")),
            "src": fmt.signed(r.get("source_estimate")), "src_ci": fmt.ci(r.get("source_ci_low"), r.get("source_ci_high")),
            "src_q": fmt.pval(r.get("source_q")), "tgt": fmt.signed(r.get("target_estimate")),
            "tgt_ci": fmt.ci(r.get("target_ci_low"), r.get("target_ci_high")), "tgt_q": fmt.pval(r.get("target_q")),
            "diff": fmt.signed(r.get("difference")), "diff_ci": fmt.ci(r.get("difference_ci_low"), r.get("difference_ci_high")),
            "diff_p": fmt.pval(r.get("difference_p")),
            # the statistics' transfer reading: ρ = target / source (centred on the null), equivalence within [1/k, k]
            "ratio": fmt.num(r.get("ratio")), "ratio_ci": fmt.ci(r.get("ratio_ci_low"), r.get("ratio_ci_high")),
            "ratio_p": fmt.pval(r.get("p_equivalence")), "margin": fmt.plain(r.get("margin")),
            "cls": cls, "meaning": TRANSFER_MEANING.get(cls, "")})
    ratio = any(r.get("ratio") is not None or r.get("ratio_ci_low") is not None for r in rows)
    return {"rows": out, "classes": TRANSFER_MEANING, "level": labels.ci(labels.section_level(ctx, rows)),
            "ratio": ratio, "ratio_level": labels.ci(rows[0].get("ratio_ci_level") or claim_level(ctx.alpha)),
            "margin": fmt.plain(rows[0].get("margin")),
            "diff_p": labels.sided(rows[0].get("difference_p_sided"), "greater"),
            "arm_p": labels.sided(rows[0].get("p_sided"), "two-sided")}


@section("strata", order=80, title="Stratified results")
def strata(ctx) -> dict | None:
    rows = ctx.section("strata")
    if not rows:
        return None
    out = []
    for r in rows:
        pooled = r.get("pooled") or {}
        chart_rows = [charts.Row(label=f"{s.get('level')} (n={fmt.count(s.get('n_clusters'))})", est=s.get("estimate"),
                                 lo=s.get("ci_low"), hi=s.get("ci_high"),
                                 note=f"{fmt.signed(s.get('estimate'))} {fmt.ci(s.get('ci_low'), s.get('ci_high'))}")
                      for s in r.get("strata") or []]
        chart_rows.append(charts.Row(label="pooled", est=pooled.get("estimate"), lo=pooled.get("ci_low"),
                                     hi=pooled.get("ci_high"), index=1, bold=True,
                                     note=f"{fmt.signed(pooled.get('estimate'))} {fmt.ci(pooled.get('ci_low'), pooled.get('ci_high'))}"))
        lc = r.get("largest_contrast")
        out.append({
            "title": f"{ctx.label('scorer', r.get('scorer'))} on {ctx.label('arm', r.get('arm'))}: "
                     f"{stat_name(str(r.get('statistic') or ''))} by {r.get('by')}",
            "test": {"kruskal": "Kruskal\u2013Wallis", "anova": "one-way ANOVA",
                     "friedman": "Friedman"}.get(r.get("test"), r.get("test")),
            "stat": fmt.num(r.get("omnibus_statistic")), "p": fmt.pval(r.get("p")), "q": fmt.pval(r.get("q")),
            "chart": charts.forest(chart_rows, x_label=f"{stat_name(str(r.get('statistic') or ''))} "
                                                       f"({'SD units' if ctx.scale == 'sd' else 'raw score units'})",
                                   ref=pooled.get("estimate"),
                                   title=f"Strata of {r.get('by')} ({labels.ci(labels.section_level(ctx, [r]))})"),
            "contrast": lc and {"a": lc.get("a"), "b": lc.get("b"), "diff": fmt.signed(lc.get("difference")),
                                "p": fmt.pval(lc.get("p"))}})
    return {"entries": out, "level": labels.ci(labels.section_level(ctx, rows))}
