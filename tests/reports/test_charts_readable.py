"""Charts are self-contained SVG with a visible title, an axis label with its unit, and several tick labels."""

from __future__ import annotations

import re

import pytest


def _charts(html: str) -> list[str]:
    return re.findall(r'<svg class="chart[^"]*".*?</svg>', html, re.S)


@pytest.mark.parametrize("example", ["skin_tone", "body_warp", "cross_image"])
def test_every_chart_has_title_axis_label_with_unit_and_ticks(bundles, example):
    html = (bundles[example] / "report.html").read_text(encoding="utf-8")
    charts = _charts(html)
    assert charts
    for svg in charts:
        assert "<script" not in svg and "href" not in svg  # self-contained: nothing to run or fetch
        # a wrapped label is one <text> of several <tspan> lines: read it as its words
        texts = [re.sub(r"<[^>]+>", " ", t).strip() for t in re.findall(r"<text[^>]*>(.*?)</text>", svg)]
        bold = [re.sub(r"<[^>]+>", " ", t).strip()
                for t in re.findall(r'<text[^>]*font-weight="bold"[^>]*>(.*?)</text>', svg)]
        assert bold, "no visible title"
        # an axis label naming its unit in parentheses
        assert any(re.search(r"\(.+\)", t) for t in texts if t not in bold), texts
        ticks = [t for t in texts if re.fullmatch(r"[\u2212-]?\d+(\.\d+)?", t)]
        assert len(ticks) >= 3, texts


def test_chart_text_is_readable_in_the_pdf(skin_pdf):
    """Tick labels and titles survive into the PDF as text of at least 5 pt."""
    import shutil
    import subprocess

    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext missing")
    out = subprocess.run(["pdftotext", "-bbox", str(skin_pdf / "report.pdf"), "-"], capture_output=True, text=True,
                         check=True).stdout
    words = re.findall(r'yMin="([\d.]+)" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)</word>', out)
    heights = [float(b) - float(a) for a, b, w in words if w in ("\u22121", "\u221210", "\u22125", "0", "5", "10")]
    assert heights and min(heights) >= 5.0
    assert "dose" in out and "(CIELAB" in out
