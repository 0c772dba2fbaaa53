"""Results bundle → report.html (always) and report.pdf (when asked): read, never recompute.

The HTML is self-contained (inline CSS and SVG, no script, no fetch) and every
user string is escaped by Jinja's autoescape; a Content-Security-Policy meta
tag forbids any load as a second line of defence. The PDF is WeasyPrint's
rendering of the same HTML through the print stylesheet, with every URL fetch
refused. Rendering is deterministic (no clock, no absolute paths), so
`scoreaudit verify` can re-render and compare byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from scoreaudit.reports import fmt
from scoreaudit.reports.context import DATA_ERRORS, BundleError, ReportContext, unreadable
from scoreaudit.reports.pdf import PDF_INSTALL_HINT, PdfUnavailable, convert
from scoreaudit.reports.sections.builtin import load as load_sections
from scoreaudit.safeio import write_atomic

if TYPE_CHECKING:
    from scoreaudit.reports.pdf_process import PdfProcess


@dataclass(frozen=True)
class RenderedSection:
    name: str
    title: str
    template: str
    data: dict


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=PackageLoader("scoreaudit.reports", "templates"), autoescape=True,
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(fmt.FILTERS)
    return env


@lru_cache(maxsize=1)
def _css() -> Markup:
    from importlib.resources import files

    css = files("scoreaudit.reports").joinpath("templates/style.css").read_text(encoding="utf-8")
    if "</" in css:
        raise ValueError("style.css must not contain '</'")
    return Markup(css)


def build_sections(ctx: ReportContext, bar=None) -> tuple[list[RenderedSection], list[str]]:
    """Run every registered builder in declared order; returns (sections, titles of empty ones).

    `bar`: a progress bar (plainprogress.StageBar) advanced once per section."""
    shown, omitted = [], []
    if bar is not None:
        bar.stage("building the sections")
    for entry in load_sections():
        if bar is not None:
            bar.advance(1, entry.meta.get("title", entry.name))
        data = entry.impl(ctx)
        if data is None:
            if entry.meta.get("listed", True):
                omitted.append(entry.meta.get("title", entry.name))
            continue
        shown.append(RenderedSection(entry.name, entry.meta.get("title", entry.name), entry.meta["template"], data))
    return shown, omitted


def render_html(ctx: ReportContext, bar=None) -> str:
    sections, omitted = build_sections(ctx, bar)
    r = ctx.results
    arms = r.get("arms") or {}
    scorers = list((r.get("environment") or {}).get("scorers") or {}) or list(dict.fromkeys(c.get("scorer") for c in r.get("cells") or []))
    summary = "; ".join(p for p in (
        f"{len(scorers)} scorer{'s' if len(scorers) != 1 else ''} ({', '.join(ctx.label('scorer', x) for x in scorers)})"
        if scorers else "",
        f"{len(arms)} arm{'s' if len(arms) != 1 else ''} ("
        + ", ".join(f"{ctx.label('arm', n)}: {_arm_size(a)}" for n, a in arms.items()) + ")"
        if arms else "",
        f"{len(r.get('cells') or [])} hypothesis cells",
    ) if p)
    return label_scroll_boxes(stack_on_phones(environment().get_template("report.html.j2").render(
        title=ctx.title, audit_title=ctx.audit_title, summary_line=summary, sections=sections, omitted=omitted,
        css=_css(), spec_sha256=ctx.spec_sha256, schema_version=r.get("schema_version", "?"),
        tool_version=(r.get("tool") or {}).get("version", "?"))))


def _arm_size(a: dict) -> str:
    """`120 real images`, `300 pairs` (a pairs arm's clusters are its pairs; its images are two per pair)."""
    if a.get("source") == "pairs" and a.get("n_clusters") is not None:
        n = a.get("n_clusters")
        return f"{fmt.count(n)} pair{'s' if n != 1 else ''}"
    n = a.get("n_images")
    kind = f" {a['kind']}" if a.get("kind") else ""
    return f"{fmt.count(n)}{kind} image{'s' if n != 1 else ''}"


_TABLE = re.compile(r'<div class="table-wrap"><table( class="[^"]*")?>(.*?)</table></div>', re.S)
_HEAD_CELL = re.compile(r"<th[^>]*>(.*?)</th>", re.S)
_ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
_CELL = re.compile(r"<(td|th)((?: [^>]*)?)>")
_TAGS = re.compile(r"<[^>]+>")


def stack_on_phones(html: str) -> str:
    """Give every body cell of a wide table its column's heading (`data-label`), so that on a phone the
    stylesheet can show each row as a small card instead of a table to scroll sideways.

    Only our own templates' tables are touched (inside `table-wrap`, a plain header row, no row spans);
    the labels are the header texts, already escaped by the templates.
    """
    def one(m: re.Match) -> str:
        cls, body = m.group(1) or "", m.group(2)
        head = re.search(r"<thead>(.*?)</thead>", body, re.S)
        if head is None or "rowspan" in body or "colspan" in body:
            return m.group(0)
        labels = [_TAGS.sub("", h).strip() for h in _HEAD_CELL.findall(head.group(1))]
        tbody = re.search(r"<tbody>(.*?)</tbody>", body, re.S)
        if tbody is None:
            return m.group(0)

        def row(r: re.Match) -> str:
            k = iter(range(len(labels)))

            def cell(c: re.Match) -> str:
                i = next(k, None)
                label = labels[i] if i is not None else ""
                return f'<{c.group(1)}{c.group(2)} data-label="{label}">' if label else c.group(0)

            return "<tr>" + _CELL.sub(cell, r.group(1)) + "</tr>"

        new_body = body[:tbody.start(1)] + _ROW.sub(row, tbody.group(1)) + body[tbody.end(1):]
        classes = (cls[8:-1] + " stack").strip() if cls else "stack"
        return f'<div class="table-wrap"><table class="{classes}">{new_body}</table></div>'

    return _TABLE.sub(one, html)


_FOREST = re.compile(r'<figure class="forest" tabindex="0">(<svg [^>]*?aria-label="([^"]*)")')
_HEADING_OR_BOX = re.compile(r'<h[23][^>]*>(.*?)</h[23]>|<div class="table-wrap">', re.S)


def label_scroll_boxes(html: str) -> str:
    """Make every table box that may scroll sideways reachable and named for keyboard and screen-reader users:
    `tabindex="0"`, `role="region"` and an `aria-label` from the heading above it ("Deviations (table)"),
    numbered where one heading has several, so that every region's name is unique (axe: landmark-unique,
    scrollable-region-focusable); each focusable chart box is a group named after its chart. The heading
    and chart texts are our templates' output, already escaped."""
    heads: list[str] = []
    heading = "Report"
    for m in _HEADING_OR_BOX.finditer(html):
        if m.group(1) is not None:
            heading = " ".join(_TAGS.sub("", m.group(1)).split()) or heading
        else:
            heads.append(heading)
    total = {h: heads.count(h) for h in heads}
    seen: dict[str, int] = {}
    it = iter(heads)

    def one(m: re.Match) -> str:
        if m.group(1) is not None:
            return m.group(0)
        h = next(it)
        seen[h] = seen.get(h, 0) + 1
        name = f"{h} (table {seen[h]} of {total[h]})" if total[h] > 1 else f"{h} (table)"
        return f'<div class="table-wrap" tabindex="0" role="region" aria-label="{name.replace(chr(34), "&quot;")}">'

    html = _HEADING_OR_BOX.sub(one, html)
    # a chart box that scrolls on a phone: a named group (the chart's own label), not an anonymous stop
    return _FOREST.sub(lambda m: f'<figure class="forest" tabindex="0" role="group" aria-label="Chart: {m.group(2)}">'
                       f'{m.group(1)}', html)


def write_pdf(html: str, out: Path, bar=None, process: PdfProcess | None = None) -> Path:
    """Lay out `html` and write it to `out` as a tagged PDF (reports/pdf.py); raises PdfUnavailable.

    `process`: the PDF process a run started early (reports/pdf_process.py) does the work when given;
    where it fails, the work is done here."""
    if bar is not None:
        bar.stage("laying out the PDF pages")

    advanced = False  # the layout's step is advanced once, also when the process failed after it

    def laid_out(pages: int) -> None:
        nonlocal advanced
        if bar is not None and not advanced:
            bar.advance(1)
            bar.stage(f"writing {pages} PDF pages")
        advanced = True

    pdf = process.convert(html, laid_out) if process is not None else None
    if pdf is None:
        pdf = convert(html, laid_out)
    if bar is not None:
        bar.advance(1)
    write_atomic(out, pdf)
    return out


def wanted_formats(ctx: ReportContext, formats: Iterable[str] | None) -> list[str]:
    if formats is None:
        formats = ((ctx.ir.get("report") or {}).get("formats")
                   or (ctx.results.get("report") or {}).get("formats") or ["html"])
    formats = [f.lower() for f in formats]
    unknown = sorted(set(formats) - {"html", "pdf"})
    if unknown:
        raise ValueError(f"unknown report format(s) {', '.join(unknown)}: use html and/or pdf")
    return formats


def render(bundle_dir: Path, formats: Iterable[str] | None = None, update_manifest: bool = True,
           progress: bool = False, previous: Path | None = None, pdf_process: PdfProcess | None = None) -> list[Path]:
    """Write report.html (always) and report.pdf (when `formats` or the spec's report block asks).

    `update_manifest`: record the reports' new hashes in manifest.json (a re-render); `run` passes False
    and writes the whole manifest itself right after. `progress`: a bar on a terminal (plain lines elsewhere)
    per section and PDF stage, so a long render is never a blank screen. Only what changed is rendered
    (reports/render_cache.py): a report whose inputs' key matches render.json is kept, or copied from
    `previous` (the bundle a re-run replaces). `pdf_process`: WeasyPrint already started in a process of its
    own (reports/pdf_process.py), which lays out the PDF; the caller stops it."""
    bundle_dir = Path(bundle_dir)
    ctx = ReportContext.load(bundle_dir)
    from scoreaudit.reports import render_cache

    try:
        formats = wanted_formats(ctx, formats)
    except DATA_ERRORS as e:  # data of a shape the loader's check does not reach: one line, not a traceback
        raise unreadable(bundle_dir, e) from None
    keys = render_cache.file_keys(bundle_dir)
    wanted = ["report.html"] + (["report.pdf"] if "pdf" in formats else [])
    kept = [n for n in wanted if render_cache.current(bundle_dir, n, keys[n])
            or render_cache.adopt(previous, bundle_dir, n, keys[n])]
    if kept == wanted:
        if progress:
            import sys

            print(f"report: {' and '.join(kept)} unchanged (same inputs), not rendered again", file=sys.stderr)
        if update_manifest and previous is not None:
            from scoreaudit.reports.manifest import write_manifest

            write_manifest(bundle_dir, only=[*kept, render_cache.RECORD])
        if previous is not None:
            render_cache.write_record(bundle_dir, keys, kept)
        return [bundle_dir / n for n in wanted]
    written_names = _render_missing(ctx, bundle_dir, wanted, kept, progress, pdf_process)
    render_cache.write_record(bundle_dir, keys, written_names + [n for n in kept if n not in written_names])
    from scoreaudit.reports.manifest import write_manifest

    if update_manifest and write_manifest(bundle_dir, only=[*written_names, render_cache.RECORD]) is None:
        import sys

        from scoreaudit.termsafe import safe_text

        print(f"warning: {safe_text(str(bundle_dir / 'manifest.json'))} is missing or not a valid manifest: it was not rewritten "
              "(a re-render vouches only for the reports it writes), so `scoreaudit verify` will say so; "
              "run the audit again for a bundle with a manifest", file=sys.stderr)
    return [bundle_dir / n for n in wanted if n in written_names or n in kept]


def _render_missing(ctx: ReportContext, bundle_dir: Path, wanted: list[str], kept: list[str],
                    progress: bool, pdf_process: PdfProcess | None = None) -> list[str]:
    """Render the wanted reports not in `kept` (the PDF from the kept HTML when only it is missing)."""
    from scoreaudit.plainprogress import stage_bar

    formats = [n.split(".")[1] for n in wanted]
    # one step per section, one for report.html, two for the PDF (layout, writing)
    html_kept = "report.html" in kept
    bar = stage_bar(progress, "report", (0 if html_kept else len(load_sections()) + 1)
                    + (2 if "pdf" in formats else 0))
    written: list[str] = []
    try:
        html_path = bundle_dir / "report.html"
        if html_kept:
            html = html_path.read_text(encoding="utf-8")
        else:
            try:
                html = render_html(ctx, bar)
            except DATA_ERRORS as e:
                raise unreadable(bundle_dir, e) from None
            if bar is not None:
                bar.stage(f"writing report.html ({len(html) // 1024:,} kB)")
            write_atomic(html_path, html)  # temp file + rename: a link planted at report.html is replaced, not followed
            if bar is not None:
                bar.advance(1)
            written.append("report.html")
        if "pdf" in formats and "report.pdf" not in kept:
            try:
                written.append(write_pdf(html, bundle_dir / "report.pdf", bar, pdf_process).name)
            except PdfUnavailable as e:
                import sys

                from scoreaudit.termsafe import safe_text

                print(f"warning: {safe_text(str(e))}", file=sys.stderr)
    finally:
        if bar is not None:
            bar.close()
    return written


__all__ = ["PDF_INSTALL_HINT", "BundleError", "PdfUnavailable", "render", "render_html", "write_pdf"]
