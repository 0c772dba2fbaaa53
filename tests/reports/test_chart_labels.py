"""Chart labels are measured and wrapped, never cut: every text line lies inside its SVG's viewBox.

The reference for a text's width is the real font (DejaVu Sans via Pillow), not the chart's own estimate.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from scoreaudit.reports import charts

FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
BOLD = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf")
pytestmark = pytest.mark.skipif(not FONT.exists(), reason="DejaVu Sans is not installed (fonts-dejavu-core)")

LONG = ("LAION aesthetic predictor v2 (ViT-L/14) \u00b7 on Within-prompt pairs (wide spectrum)",
        "ImageReward v1.0 \u00b7 on Real faces (FairFace subset) where race = \"Black\" and gender = \"woman\"",
        "x" * 90)


def _font(size: float, bold: bool):
    from PIL import ImageFont

    return ImageFont.truetype(str(BOLD if bold else FONT), size=1000), size / 1000


def _lines(svg: str):
    """(x extent low, high, y, text) of every line of every <text>, from its anchor and the font's real width."""
    w, h = map(float, re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
    out = []
    for ty, body in re.findall(r'<g transform="translate\([\d.]+ ([\d.]+)\) rotate\(-90\)">(.*?)</g>', svg, re.S):
        font, scale = _font(12, False)  # a vertical label: its extent runs along y
        for t in re.findall(r">([^<>]+)<", body):
            half = font.getlength(html.unescape(t)) * scale / 2
            assert float(ty) - half >= 0 and float(ty) + half <= h, t
    svg = re.sub(r'<g transform="[^"]*rotate[^"]*">.*?</g>', "", svg, flags=re.S)
    for attrs, body in re.findall(r"<text([^>]*)>(.*?)</text>", svg, re.S):
        if "rotate" in attrs:
            continue
        size = float((re.search(r'font-size="([\d.]+)"', attrs) or re.search(r'font-size="([\d.]+)"', svg)).group(1))
        font, scale = _font(size, 'font-weight="bold"' in attrs)
        anchor = (re.search(r'text-anchor="(\w+)"', attrs) or [None, "start"])[1]
        spans = re.findall(r'<tspan x="([\d.-]+)"[^>]*>(.*?)</tspan>', body) or [
            (re.search(r' x="([\d.-]+)"', attrs).group(1), body)]
        for x, t in spans:
            t = html.unescape(re.sub(r"<[^>]+>", "", t))
            width = font.getlength(t) * scale
            x = float(x)
            lo = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
            out.append((lo, lo + width, t))
    return w, out


@pytest.mark.parametrize("width", [680, 420])
def test_forest_labels_notes_title_and_axis_fit_the_chart(width):
    rows = [charts.Row(label=label, est=0.1 * i, lo=0.1 * i - 0.05, hi=0.1 * i + 0.05, index=i,
                       note="+0.0123 [\u22120.00456, +0.0789]") for i, label in enumerate(LONG)]
    svg = str(charts.forest(rows, x_label="fidelity index of light, in units of the arm's original-score SD "
                                          "(re-estimated in every bootstrap replicate)", ref=0.0, width=width,
                            title="The two readings and their difference, " + LONG[0]))
    w, lines = _lines(svg)
    assert w == width
    words = " ".join(t for _, _, t in lines)
    for label in LONG[:2]:  # nothing cut: every word of every label is drawn
        assert all(word in words for word in label.split())
    for lo, hi, t in lines:
        assert lo >= -0.5 and hi <= w + 0.5, (t, lo, hi, w)


def test_panel_title_and_axis_labels_fit():
    s = charts.Series(label="a", points=[(-10, -0.3, -0.4, -0.2), (0, 0, 0, 0), (10, -0.2, -0.3, -0.1)])
    svg = str(charts.line_panel([s], title="LAION aesthetic predictor v2 (ViT-L/14) \u00b7 Lightness (L*)",
                                x_label="dose (CIELAB units of lightness, L*)", y_label="\u0394 score (SD units)"))
    w, lines = _lines(svg)
    assert "(ViT-L/14)" in " ".join(t for _, _, t in lines)
    for lo, hi, t in lines:
        assert lo >= -0.5 and hi <= w + 0.5, (t, lo, hi, w)


def test_measured_width_bounds_the_real_font():
    """text_width is an upper bound of DejaVu Sans (regular and bold) at any size: wrapping by it never overflows."""
    for text in (*LONG, "\u2212 0.5 \u00d7 \u2192 \u03b8 \u2264 \u00b0", "WWWWMMMM", "iiiill1"):
        for bold in (False, True):
            font, scale = _font(12, bold)
            assert charts.text_width(text, 12, bold) >= font.getlength(text) * scale - 0.01, (text, bold)
    for line in charts.wrap(LONG[1], 150):
        assert charts.text_width(line) <= 150
    assert " ".join(charts.wrap(LONG[1], 150)) == LONG[1]
