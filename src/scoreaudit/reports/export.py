"""Paper-ready exports of the hypotheses' outcomes: a booktabs LaTeX table and a Markdown summary.

Both are built from `outcome_rows`, the same cells and the same number formatting (`scoreaudit.numfmt`)
as the HTML report's sentences and matrix, so a number in the paper is the number in the report.
`export` writes report.tex / report.md into the bundle and records it in the manifest (a file the run
did not write would otherwise be an unexplained addition for `verify`).
"""

from __future__ import annotations

from pathlib import Path

from scoreaudit.compiler import settings as setting_defs
from scoreaudit.compiler.settings import CLAIM_RULE
from scoreaudit.reports import fmt, labels
from scoreaudit.reports.context import ReportContext
from scoreaudit.stats.sentences import signed, stat_name

FORMATS = {"tex": "report.tex", "md": "report.md"}


def _estimate(c: dict) -> str:
    est = c.get("estimate")
    if est is None:
        return fmt.UNDEFINED
    text = fmt.signed(est) if signed(c.get("statistic") or "") else fmt.num(est)
    return text + ("\u00d7" if c.get("statistic") == "ratio" else "")


def outcome_rows(ctx: ReportContext) -> list[dict]:
    """One row per hypothesis cell, in the report's order, with the report's formatting of every number."""
    from scoreaudit.reports.sections.first_screen import _hypothesis_order

    cells = ctx.results.get("cells") or []
    rows = []
    for h in _hypothesis_order(ctx):
        for c in cells:
            if c.get("hypothesis") != h:
                continue
            scorers = [ctx.label("scorer", s) for s in str(c.get("scorer") or "").split(":") if s]
            rows.append({"hypothesis": str(h), "title": ctx.hypothesis_titles.get(h, ""),
                         "scorer": " vs ".join(scorers), "arm": ctx.arm_text(c),
                         "statistic": stat_name(str(c.get("statistic") or "")),
                         "claim": c.get("claim_text") or "", "estimate": _estimate(c),
                         "interval": fmt.ci(c.get("ci_low"), c.get("ci_high")),
                         "level": labels.level_pct(labels.cell_level(c, ctx.alpha)),
                         "p": fmt.pval(c.get("p")), "q": fmt.pval(c.get("q")),
                         "outcome": c.get("outcome") or "inconclusive"})
    return rows


# ---------------------------------------------------------------- LaTeX

_TEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}
#: symbols the report's text uses, as a plain LaTeX document (pdfLaTeX, no extra package) writes them
_TEX_SYMBOLS = {"\u2212": "$-$", "\u00d7": r"$\times$", "\u2192": r"$\to$", "\u00b7": r"$\cdot$",
                "\u2264": r"$\leq$", "\u2265": r"$\geq$", "\u2014": "---", "\u2013": "--", "\u03b8": r"$\theta$",
                "\u03b1": r"$\alpha$", "\u03c1": r"$\rho$", "\u03c4": r"$\tau$", "\u00b0": r"$^\circ$",
                "\u2080": r"$_0$", "\u00b2": r"$^2$", "\u2248": r"$\approx$", "\u00a0": "~"}


def tex_escape(text: str) -> str:
    """User text as LaTeX: specials escaped, the report's symbols as commands, anything else non-ASCII as '?'."""
    out = []
    for ch in str(text):
        if ch in _TEX_SPECIAL:
            out.append(_TEX_SPECIAL[ch])
        elif ch in _TEX_SYMBOLS:
            out.append(_TEX_SYMBOLS[ch])
        elif ord(ch) < 128:
            out.append(ch)
        else:
            out.append("?")  # a plain document's fonts have no glyph for it; never a compile error
    return "".join(out)


def _tex_number(text: str) -> str:
    """A formatted number or interval in math mode (the minus sign as LaTeX's)."""
    if text == fmt.UNDEFINED:
        return "---"
    math_text = text.replace(fmt.MINUS, "-").replace("\u00d7", r"\times").replace(",", ",\\,").replace("< ", "<")
    return f"${math_text}$"


def to_tex(ctx: ReportContext) -> str:
    rows = outcome_rows(ctx)
    levels = sorted({r["level"] for r in rows})
    corr = (ctx.results.get("settings") or {}).get("correction", "bh")
    caption = (f"{tex_escape(ctx.title)}: outcome of every hypothesis cell. Estimate with its "
               f"{tex_escape(' / '.join(levels))} interval (1 $-$ 2$\\alpha$, the interval the claim's one-sided test "
               f"reads); q: p adjusted across the family ({tex_escape(corr)}, $\\alpha$ = {fmt.plain(ctx.alpha)}).")
    out = ["% scoreaudit: the hypotheses' outcomes (generated from results.json; do not edit by hand).",
           "% Needs \\usepackage{booktabs} and \\usepackage{longtable} in the preamble; \\input{report.tex}.",
           "\\begin{longtable}{llllrlrl}",
           f"\\caption{{{caption}}}\\\\",
           "\\toprule",
           "Hypothesis & Scorer & Arm & Statistic & Estimate & Interval & $q$ & Outcome \\\\",
           "\\midrule", "\\endfirsthead",
           "\\toprule",
           "Hypothesis & Scorer & Arm & Statistic & Estimate & Interval & $q$ & Outcome \\\\",
           "\\midrule", "\\endhead",
           "\\bottomrule", "\\endlastfoot"]
    previous = None
    for r in rows:
        if previous is not None and r["hypothesis"] != previous:
            out.append("\\midrule")
        cells = [tex_escape(r["hypothesis"]) if r["hypothesis"] != previous else "", tex_escape(r["scorer"]),
                 tex_escape(r["arm"]), tex_escape(r["statistic"]), _tex_number(r["estimate"]),
                 _tex_number(r["interval"]), _tex_number(r["q"]), tex_escape(r["outcome"])]
        out.append(" & ".join(cells) + " \\\\")
        previous = r["hypothesis"]
    out.append("\\end{longtable}")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- Markdown


def md_escape(text: str) -> str:
    """Text for a Markdown table cell: pipes and the characters that start markup escaped, one line."""
    s = " ".join(str(text).split())
    for ch in ("\\", "|", "*", "_", "`", "<", ">"):
        s = s.replace(ch, "\\" + ch)
    return s


def to_md(ctx: ReportContext) -> str:
    from scoreaudit.reports.sections.first_screen import LOCK_HEADINGS, summary

    rows = outcome_rows(ctx)
    status = ((ctx.results.get("lock") or {}).get("status")) or "not pre-registered"
    correction = (ctx.results.get("settings") or {}).get("correction", setting_defs.default("correction"))
    out = [f"# {md_escape(ctx.title)}", "",
           f"**{md_escape(LOCK_HEADINGS.get(status, (status,))[0])}** \u00b7 spec sha256 `{ctx.spec_sha256[:12]}` "
           f"\u00b7 scoreaudit {md_escape((ctx.results.get('tool') or {}).get('version', '?'))}", "",
           md_escape(summary(ctx)), "",
           f"Intervals: {md_escape(' / '.join(sorted({r['level'] for r in rows})))} ({CLAIM_RULE}); "
           f"q: p adjusted across the family ({md_escape(correction)}, "
           f"\u03b1 = {fmt.plain(ctx.alpha)}).", "",
           "| Hypothesis | Scorer | Arm | Statistic | Estimate | Interval | p | q | Outcome |",
           "|---|---|---|---|--:|---|--:|--:|---|"]
    for r in rows:
        out.append("| " + " | ".join(md_escape(r[k]) for k in ("hypothesis", "scorer", "arm", "statistic", "estimate",
                                                                 "interval", "p", "q", "outcome")) + " |")
    titles = [(r["hypothesis"], r["title"]) for r in rows]
    out += ["", "Hypotheses:", ""]
    out += [f"- **{md_escape(h)}** {md_escape(t)}" for h, t in dict.fromkeys(titles)]
    return "\n".join(out) + "\n"


WRITERS = {"tex": to_tex, "md": to_md}


def export(bundle_dir: Path, kind: str) -> Path:
    """Write report.tex or report.md into the bundle (and its manifest entry); returns the path."""
    from scoreaudit.reports.manifest import write_manifest
    from scoreaudit.safeio import write_atomic

    if kind not in WRITERS:
        raise ValueError(f"unknown export format {kind!r}: use {' or '.join(WRITERS)}")
    bundle_dir = Path(bundle_dir)
    ctx = ReportContext.load(bundle_dir)
    path = bundle_dir / FORMATS[kind]
    write_atomic(path, WRITERS[kind](ctx))
    write_manifest(bundle_dir, only=[path.name])
    return path
