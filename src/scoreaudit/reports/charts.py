"""Inline SVG charts written by hand: no JavaScript, no fonts or files to fetch.

Two shapes cover the report: `line_panel` (a dose-response curve with CI bands,
one panel of a small-multiples grid) and `forest` (point estimates with
intervals against a reference line and an optional claim band). Every label
goes through `escape`, so user names cannot inject markup. Colours are the
Okabe–Ito palette, and series also differ by dash and marker shape so the
charts read in greyscale and for colour-blind readers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from scoreaudit.reports import fmt

OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
DASHES = ("", "6 3", "2 3", "8 3 2 3")
MARKERS = ("circle", "square", "triangle", "diamond")
FONT = "DejaVu Sans, Liberation Sans, Arial, sans-serif"
INK, GRID, MUTED = "#222222", "#e3e3e3", "#666666"


# Advance widths of DejaVu Sans (the first font of FONT, and the widest of its fallbacks), in 1/1000 em, for
# printable ASCII; any other character counts as a full em. Labels are measured with these and wrapped, never cut.
_ASCII_WIDTHS = (
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, 636, 636, 636, 636, 636, 636,
    636, 636, 636, 636, 337, 337, 838, 838, 838, 531, 1000, 684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656,
    557, 863, 748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, 390, 337, 390, 838, 500, 500, 613,
    635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612, 635, 635, 411, 521, 392, 634, 592, 818,
    592, 592, 525, 636, 337, 636, 838)
_NARROW = {"\u00b7": 318, "\u2013": 500, "\u00b0": 500, "\u2080": 401, "\u00b2": 401, "\u03b8": 612}
BOLD = 1.2  # bold glyphs are at most about 1.26x, on average 1.1x wider


def text_width(text: str, size: float = 12, bold: bool = False) -> float:
    """Width of `text` at font-size `size` in SVG user units (an upper bound for DejaVu Sans and narrower fonts)."""
    w = sum(_ASCII_WIDTHS[o - 32] if 32 <= (o := ord(ch)) < 127 else _NARROW.get(ch, 1000) for ch in str(text))
    return w * size / 1000 * (BOLD if bold else 1.0)


def wrap(text: str, width: float, size: float = 12, bold: bool = False) -> list[str]:
    """`text` broken into lines no wider than `width` (at spaces; a longer word is split), never shortened."""
    words, lines, line = str(text).split(" "), [], ""
    for word in words:
        cand = f"{line} {word}" if line else word
        if text_width(cand, size, bold) <= width:
            line = cand
            continue
        if line:
            lines.append(line)
        line = ""
        while text_width(word, size, bold) > width and len(word) > 1:  # a word wider than the line: split it
            k = len(word)
            while k > 1 and text_width(word[:k], size, bold) > width:
                k -= 1
            lines.append(word[:k])
            word = word[k:]
        line = word
    if line or not lines:
        lines.append(line)
    return lines


def _lines(x: float, y: float, lines: Sequence[str], step: float, attrs: str = "") -> str:
    """One <text> of several lines (tspans), the first baseline at y; a single line is plain text."""
    if len(lines) == 1:
        return f'<text x="{_f(x)}" y="{_f(y)}"{attrs}>{escape(lines[0])}</text>'
    spans = "".join(f'<tspan x="{_f(x)}" dy="{0 if i == 0 else _f(step)}">{escape(t)}</tspan>' for i, t in enumerate(lines))
    return f'<text x="{_f(x)}" y="{_f(y)}"{attrs}>{spans}</text>'


def style(i: int) -> dict:
    """Colour, dash and marker of the i-th series."""
    return {"color": OKABE_ITO[i % len(OKABE_ITO)], "dash": DASHES[i % len(DASHES)], "marker": MARKERS[i % len(MARKERS)]}


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round-number ticks inside [lo, hi]: the widest 1-2-2.5-5 step that still gives at least 4 (or n - 1)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if hi <= lo:
        lo, hi = lo - 1, hi + 1
    raw = (hi - lo) / max(1, n - 1)
    mag = 10 ** math.floor(math.log10(raw))
    steps = sorted({m * mag * f for m in (1, 2, 2.5, 5) for f in (0.1, 1, 10)})
    want = min(4, max(2, n - 1))
    best: list[float] = []
    for step in reversed(steps):  # widest first
        start = math.ceil(lo / step - 1e-9) * step
        ticks, t = [], start
        while t <= hi + 1e-9 * step:
            ticks.append(0.0 if abs(t) < step * 1e-9 else round(t, 12))
            t += step
        best = ticks
        if len(ticks) >= want:
            break
    return best


def _f(x: float) -> str:
    return f"{x:.1f}"


def tick(t: float) -> str:
    """Axis labels: the shortest exact form (5, 0.25, −10), not 3 significant digits."""
    s = f"{t:.6g}"
    return s.replace("-", fmt.MINUS)


def log_ticks(lo: float, hi: float) -> list[float]:
    """Ticks for a log10 axis spanning [lo, hi] (in log10 units): 1-2-5 steps, denser when narrow."""
    for mults in ((1, 2, 5), (1, 1.5, 2, 3, 5, 7), (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 7, 8, 9)):
        out = sorted({m * 10 ** k for k in range(math.floor(lo) - 1, math.ceil(hi) + 1) for m in mults
                      if lo <= math.log10(m * 10 ** k) <= hi})
        if len(out) >= 3:
            return out
    return [10 ** lo, 10 ** hi]


def _marker(kind: str, x: float, y: float, color: str, r: float = 3.2) -> str:
    if kind == "square":
        return f'<rect x="{_f(x - r)}" y="{_f(y - r)}" width="{_f(2 * r)}" height="{_f(2 * r)}" fill="{color}"/>'
    if kind == "triangle":
        pts = f"{_f(x)},{_f(y - r * 1.2)} {_f(x - r * 1.1)},{_f(y + r * 0.9)} {_f(x + r * 1.1)},{_f(y + r * 0.9)}"
        return f'<polygon points="{pts}" fill="{color}"/>'
    if kind == "diamond":
        pts = f"{_f(x)},{_f(y - r * 1.3)} {_f(x + r * 1.1)},{_f(y)} {_f(x)},{_f(y + r * 1.3)} {_f(x - r * 1.1)},{_f(y)}"
        return f'<polygon points="{pts}" fill="{color}"/>'
    return f'<circle cx="{_f(x)}" cy="{_f(y)}" r="{_f(r)}" fill="{color}"/>'


def _finite(*xs) -> bool:
    return all(x is not None and isinstance(x, (int, float)) and math.isfinite(x) for x in xs)


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[tuple[float, float | None, float | None, float | None]]  # x, y, lo, hi
    index: int = 0


def y_range(series: Iterable[Series], pad: float = 0.06) -> tuple[float, float]:
    vals = [v for s in series for p in s.points for v in p[1:] if _finite(v)]
    if not vals:
        return (-1.0, 1.0)
    lo, hi = min(vals + [0.0]), max(vals + [0.0])
    span = (hi - lo) or 1.0
    return (lo - pad * span, hi + pad * span)


def line_panel(series: Sequence[Series], *, title: str, x_label: str, y_label: str,
               ylim: tuple[float, float] | None = None, ref_x: float | None = None,
               width: int = 300, height: int = 220) -> Markup:
    """One small-multiple panel: mean score change per dose with a shaded CI band per series."""
    yl = wrap(y_label, height - 80, 12)
    xl = wrap(x_label, width - 60, 12)
    ml, mr, mb = 54 + 14 * (len(yl) - 1), 16, 28 + 14 * len(xl)
    title_lines = wrap(title, width - 4, 13, bold=True)
    mt = 10 + 16 * len(title_lines)
    height += 16 * (len(title_lines) - 1) + 14 * (len(xl) - 1)  # long titles take lines, never the plot's room
    pw, ph = width - ml - mr, height - mt - mb
    xs = [p[0] for s in series for p in s.points if _finite(p[0])]
    x0, x1 = (min(xs), max(xs)) if xs else (0.0, 1.0)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    y0, y1 = ylim or y_range(series)

    def sx(x):
        return ml + (x - x0) / (x1 - x0) * pw

    def sy(y):
        return mt + (1 - (y - y0) / (y1 - y0)) * ph

    out = [f'<svg class="chart panel" viewBox="0 0 {width} {height}" role="img" '
           f'aria-label="{escape(title)}" font-family="{FONT}" font-size="12">',
           f"<title>{escape(title)}</title>",
           _lines(2, 15, title_lines, 16, f' font-size="13" font-weight="bold" fill="{INK}"')]
    for t in nice_ticks(y0, y1, 5):
        if y0 <= t <= y1:
            y = sy(t)
            out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{_f(y)}" y2="{_f(y)}" stroke="{GRID}" stroke-width="1"/>')
            out.append(f'<text x="{ml - 5}" y="{_f(y + 3.5)}" text-anchor="end" fill="{MUTED}">{escape(tick(t))}</text>')
    if y0 < 0 < y1:
        out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{_f(sy(0))}" y2="{_f(sy(0))}" stroke="#999" stroke-width="1"/>')
    dose_ticks = sorted({p[0] for s in series for p in s.points if _finite(p[0])})
    if len(dose_ticks) > 9:
        dose_ticks = nice_ticks(x0, x1, 6)
    for t in dose_ticks:
        out.append(f'<line x1="{_f(sx(t))}" x2="{_f(sx(t))}" y1="{mt + ph}" y2="{mt + ph + 4}" stroke="{MUTED}"/>')
        out.append(f'<text x="{_f(sx(t))}" y="{mt + ph + 16}" text-anchor="middle" fill="{MUTED}">{escape(tick(t))}</text>')
    if ref_x is not None and x0 <= ref_x <= x1:
        out.append(f'<line x1="{_f(sx(ref_x))}" x2="{_f(sx(ref_x))}" y1="{mt}" y2="{mt + ph}" stroke="#bbb" stroke-dasharray="3 3"/>')
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
    for s in series:
        st = style(s.index)
        pts = [p for p in s.points if _finite(p[0], p[1])]
        band = [p for p in pts if _finite(p[2], p[3])]
        if len(band) >= 2:
            upper = " ".join(f"{_f(sx(p[0]))},{_f(sy(p[3]))}" for p in band)
            lower = " ".join(f"{_f(sx(p[0]))},{_f(sy(p[2]))}" for p in reversed(band))
            out.append(f'<polygon points="{upper} {lower}" fill="{st["color"]}" fill-opacity="0.16" stroke="none"/>')
        if len(pts) >= 2:
            line = " ".join(f"{_f(sx(p[0]))},{_f(sy(p[1]))}" for p in pts)
            dash = f' stroke-dasharray="{st["dash"]}"' if st["dash"] else ""
            out.append(f'<polyline points="{line}" fill="none" stroke="{st["color"]}" stroke-width="2"{dash}/>')
        out.extend(_marker(st["marker"], sx(p[0]), sy(p[1]), st["color"]) for p in pts)
    out.append(_lines(ml + pw / 2, height - 6 - 14 * (len(xl) - 1), xl, 14, f' text-anchor="middle" fill="{INK}"'))
    out.append(f'<g transform="translate(13 {_f(mt + ph / 2)}) rotate(-90)">'
               + _lines(0, 0, yl, 14, f' text-anchor="middle" fill="{INK}"') + "</g>")
    out.append("</svg>")
    return Markup("".join(out))


def legend(labels: Sequence[str]) -> Markup:
    """An HTML legend (wraps on a phone) whose swatches match the series styles."""
    items = []
    for i, label in enumerate(labels):
        st = style(i)
        dash = f' stroke-dasharray="{st["dash"]}"' if st["dash"] else ""
        items.append(
            f'<span class="legend-item"><svg viewBox="0 0 34 12" width="34" height="12" aria-hidden="true">'
            f'<line x1="1" x2="33" y1="6" y2="6" stroke="{st["color"]}" stroke-width="2"{dash}/>'
            f'{_marker(st["marker"], 17, 6, st["color"], 3)}</svg>{escape(label)}</span>')
    return Markup('<div class="legend">' + "".join(items) + "</div>")


@dataclass(frozen=True)
class Row:
    label: str
    est: float | None
    lo: float | None = None
    hi: float | None = None
    note: str = ""  # shown at the right (e.g. the formatted estimate or "undefined")
    index: int = 0  # style
    bold: bool = False


def forest(rows: Sequence[Row], *, x_label: str, ref: float | None = None,
           band: tuple[float, float] | None = None, log: bool = False, width: int = 680,
           label_width: int | None = None, note_width: int | None = None, title: str = "") -> Markup:
    """Estimates with intervals, one row each; `band` shades the claimed region.

    Row labels, notes, the title and the axis label are measured (`text_width`) and wrapped onto more lines
    (the row grows) instead of running past the chart's edge: nothing is cut, whatever the names' length.
    """
    line_h, mb = 14, 26
    title_lines = wrap(title, width - 4, 13, bold=True) if title else []
    mt = 12 + 17 * len(title_lines)  # room for the visible title
    widest = max((text_width(r.label, 12, r.bold) for r in rows), default=30)
    ml = label_width or int(min(0.4 * width, max(70, 16 + widest)))
    widest_note = max((text_width(r.note) for r in rows), default=30)
    mr = note_width or int(min(0.3 * width, max(60, 14 + widest_note)))
    label_lines = [wrap(r.label, ml - 12, 12, r.bold) for r in rows]
    note_lines = [wrap(r.note, mr - 12, 12) for r in rows]
    heights = [max(22, 8 + line_h * max(len(a), len(b))) for a, b in zip(label_lines, note_lines)] or [22]
    x_lines = wrap(x_label + (" (log scale)" if log else ""), width - 8, 12)
    mb += line_h * len(x_lines)
    height = mt + mb + sum(heights)
    pw = width - ml - mr
    vals = [v for r in rows for v in (r.est, r.lo, r.hi) if _finite(v)]
    vals += [v for v in ((ref,) if ref is not None else ()) + (band or ())]
    if log:
        vals = [v for v in vals if v > 0]
        if not vals:
            log = False
    tr = (lambda v: math.log10(v)) if log else (lambda v: v)
    tv = [tr(v) for v in vals if not log or v > 0] or [0.0, 1.0]
    lo, hi = min(tv), max(tv)
    span = (hi - lo) or 1.0
    lo, hi = lo - 0.05 * span, hi + 0.05 * span

    def sx(v):
        v = tr(max(v, 1e-300)) if log else v
        return ml + (v - lo) / (hi - lo) * pw

    out = [f'<svg class="chart forest" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title or x_label)}" '
           f'font-family="{FONT}" font-size="12">', f"<title>{escape(title or x_label)}</title>"]
    if title:
        # 13 units: printed at full width, about the size of the heading above it (never larger)
        out.append(_lines(2, 16, title_lines, 17, f' font-size="13" font-weight="bold" fill="{INK}"'))
    top, bottom = mt, mt + sum(heights)
    if band is not None:
        b0, b1 = (max(band[0], 10 ** lo) if log else band[0]), band[1]
        x_a, x_b = max(ml, sx(b0)), min(ml + pw, sx(b1))
        if x_b > x_a:
            out.append(f'<rect x="{_f(x_a)}" y="{top}" width="{_f(x_b - x_a)}" height="{bottom - top}" '
                       f'fill="#009E73" fill-opacity="0.10"/>')
    ticks = log_ticks(lo, hi) if log else nice_ticks(lo, hi, 6)
    for t in ticks:
        x = sx(t)
        if ml - 0.5 <= x <= ml + pw + 0.5:
            out.append(f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{top}" y2="{bottom}" stroke="{GRID}"/>')
            out.append(f'<line x1="{_f(x)}" x2="{_f(x)}" y1="{bottom}" y2="{bottom + 4}" stroke="{MUTED}"/>')
            out.append(f'<text x="{_f(x)}" y="{bottom + 16}" text-anchor="middle" fill="{MUTED}">{escape(tick(t))}</text>')
    if ref is not None and (not log or ref > 0):
        out.append(f'<line x1="{_f(sx(ref))}" x2="{_f(sx(ref))}" y1="{top - 4}" y2="{bottom}" stroke="{INK}" '
                   f'stroke-dasharray="4 3"/>')
    y_top = top
    for i, r in enumerate(rows):
        row_h = heights[i]
        y = y_top + row_h / 2
        y_top += row_h
        weight = ' font-weight="bold"' if r.bold else ""
        if i % 2 == 0:
            out.append(f'<rect x="0" y="{_f(y - row_h / 2)}" width="{width}" height="{row_h}" fill="#f6f6f6" fill-opacity="0.7"/>')
        first = y + 4 - line_h * (len(label_lines[i]) - 1) / 2
        out.append(_lines(ml - 8, first, label_lines[i], line_h, f' text-anchor="end" fill="{INK}"{weight}'))
        st = style(r.index)
        if _finite(r.lo, r.hi) and (not log or (r.lo > 0 and r.hi > 0)):
            out.append(f'<line x1="{_f(sx(r.lo))}" x2="{_f(sx(r.hi))}" y1="{_f(y)}" y2="{_f(y)}" '
                       f'stroke="{st["color"]}" stroke-width="2"/>')
        if _finite(r.est) and (not log or r.est > 0):
            out.append(_marker(st["marker"], sx(r.est), y, st["color"], 4))
        first = y + 4 - line_h * (len(note_lines[i]) - 1) / 2
        out.append(_lines(ml + pw + 8, first, note_lines[i], line_h, f' fill="{INK}"'))
    out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{bottom}" y2="{bottom}" stroke="{MUTED}"/>')  # x axis
    # centred on the plot when it fits there, else on the chart (a long axis label wraps)
    cx = ml + pw / 2 if all(text_width(t) / 2 <= min(ml + pw / 2, width - ml - pw / 2) - 4 for t in x_lines) else width / 2
    out.append(_lines(cx, height - 6 - line_h * (len(x_lines) - 1), x_lines, line_h, f' text-anchor="middle" fill="{INK}"'))
    out.append("</svg>")
    return Markup("".join(out))


def xy_plot(*, title: str, x_label: str, y_label: str, lines: Sequence[Series] = (),
            points: Sequence[tuple[float, float]] = (), xlim: tuple[float, float] | None = None,
            ylim: tuple[float, float] | None = None, diagonal: bool = False, width: int = 300,
            height: int = 300) -> Markup:
    """An x–y panel: step or polyline curves (ROC) and/or a point cloud (score against rating); `diagonal`
    draws y = x (chance for a ROC curve). Titles and axis labels wrap like every chart's."""
    yl = wrap(y_label, height - 80, 12)
    xl = wrap(x_label, width - 60, 12)
    title_lines = wrap(title, width - 4, 13, bold=True)
    ml, mr, mb = 54 + 14 * (len(yl) - 1), 14, 28 + 14 * len(xl)
    mt = 10 + 16 * len(title_lines)
    height += 16 * (len(title_lines) - 1) + 14 * (len(xl) - 1)
    pw, ph = width - ml - mr, height - mt - mb
    xs = [p[0] for s in lines for p in s.points if _finite(p[0])] + [p[0] for p in points if _finite(p[0])]
    ys = [p[1] for s in lines for p in s.points if _finite(p[1])] + [p[1] for p in points if _finite(p[1])]
    x0, x1 = xlim or ((min(xs), max(xs)) if xs else (0.0, 1.0))
    y0, y1 = ylim or ((min(ys), max(ys)) if ys else (0.0, 1.0))
    if x1 <= x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 <= y0:
        y0, y1 = y0 - 1, y1 + 1
    if not xlim:
        x0, x1 = x0 - 0.04 * (x1 - x0), x1 + 0.04 * (x1 - x0)
    if not ylim:
        y0, y1 = y0 - 0.04 * (y1 - y0), y1 + 0.04 * (y1 - y0)

    def sx(x):
        return ml + (x - x0) / (x1 - x0) * pw

    def sy(y):
        return mt + (1 - (y - y0) / (y1 - y0)) * ph

    out = [f'<svg class="chart panel xy" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
           f'font-family="{FONT}" font-size="12">', f"<title>{escape(title)}</title>",
           _lines(2, 15, title_lines, 16, f' font-size="13" font-weight="bold" fill="{INK}"')]
    for t in nice_ticks(y0, y1, 5):
        if y0 <= t <= y1:
            out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{_f(sy(t))}" y2="{_f(sy(t))}" stroke="{GRID}"/>')
            out.append(f'<text x="{ml - 5}" y="{_f(sy(t) + 3.5)}" text-anchor="end" fill="{MUTED}">{escape(tick(t))}</text>')
    for t in nice_ticks(x0, x1, 5):
        if x0 <= t <= x1:
            out.append(f'<line x1="{_f(sx(t))}" x2="{_f(sx(t))}" y1="{mt + ph}" y2="{mt + ph + 4}" stroke="{MUTED}"/>')
            out.append(f'<text x="{_f(sx(t))}" y="{mt + ph + 16}" text-anchor="middle" fill="{MUTED}">{escape(tick(t))}</text>')
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
    if diagonal:
        lo, hi = max(x0, y0), min(x1, y1)
        out.append(f'<line x1="{_f(sx(lo))}" y1="{_f(sy(lo))}" x2="{_f(sx(hi))}" y2="{_f(sy(hi))}" stroke="#999" '
                   'stroke-dasharray="4 3"/>')
    if points:
        dots = "".join(f'<circle cx="{_f(sx(x))}" cy="{_f(sy(y))}" r="2"/>' for x, y in points if _finite(x, y))
        out.append(f'<g fill="{OKABE_ITO[0]}" fill-opacity="0.45">{dots}</g>')
    for s in lines:
        st = style(s.index)
        pts = " ".join(f"{_f(sx(p[0]))},{_f(sy(p[1]))}" for p in s.points if _finite(p[0], p[1]))
        dash = f' stroke-dasharray="{st["dash"]}"' if st["dash"] else ""
        out.append(f'<polyline points="{pts}" fill="none" stroke="{st["color"]}" stroke-width="2"{dash}/>')
    out.append(_lines(ml + pw / 2, height - 6 - 14 * (len(xl) - 1), xl, 14, f' text-anchor="middle" fill="{INK}"'))
    out.append(f'<g transform="translate(13 {_f(mt + ph / 2)}) rotate(-90)">'
               + _lines(0, 0, yl, 14, f' text-anchor="middle" fill="{INK}"') + "</g>")
    out.append("</svg>")
    return Markup("".join(out))
