"""The PDF: WeasyPrint from the same HTML; paginated, numbered, every hypothesis sentence in its text."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from scoreaudit.reports.sentences import cell_sentence

pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) not installed")]  # slow: PDF renders (weasyprint)


def _text(pdf) -> str:
    return subprocess.run(["pdftotext", str(pdf), "-"], check=True, capture_output=True, text=True).stdout


def test_pdf_pages_are_numbered_and_counted(skin_pdf):
    pypdf = pytest.importorskip("pypdf")
    pdf = skin_pdf / "report.pdf"
    n = len(pypdf.PdfReader(str(pdf)).pages)
    assert 6 <= n <= 30
    pages = _text(pdf).split("\f")
    assert f"Page 1 of {n}" in pages[0] and f"Page {n} of {n}" in pages[n - 1]
    # the first page is the first screen: title, pre-registration, verdict
    assert "Skin-lightness audit of four preference scorers" in pages[0]
    assert "Pre-registered" in pages[0] and "Auditability verdict" in pages[0]
    assert any("Appendix" in p for p in pages)


def test_pdf_text_contains_every_hypothesis_sentence(skin_pdf):
    text = re.sub(r"\s+", " ", _text(skin_pdf / "report.pdf"))
    results = json.loads((skin_pdf / "results.json").read_text(encoding="utf-8"))
    for cell in results["cells"]:
        assert re.sub(r"\s+", " ", cell_sentence(cell)) in text


def test_pdf_appendix_shows_the_spec_highlighted(skin_pdf):
    """The spec's text is in the PDF, and its keywords are drawn in the stylesheet's keyword colour."""
    pypdf = pytest.importorskip("pypdf")
    text = _text(skin_pdf / "report.pdf")
    assert "operator light = lab_shift(channel: L, region: skin) doses -15, -10, -5, 0, 5, 10, 15" in text
    want = tuple(int("6f2b84"[i:i + 2], 16) / 255 for i in (0, 2, 4))  # pre.spec .kd in style.css
    reader = pypdf.PdfReader(str(skin_pdf / "report.pdf"))
    pages = [p for p in reader.pages if "operator light = lab_shift" in (p.extract_text() or "")]
    assert pages
    data = pages[0].get_contents().get_data().decode("latin-1")
    colours = [tuple(float(x) for x in m) for m in re.findall(r"([\d.]+) ([\d.]+) ([\d.]+) rg", data)]
    assert any(all(abs(a - b) < 0.004 for a, b in zip(c, want)) for c in colours)


MM = 72 / 25.4


def _boxes(pdf):
    """(page width, page height, [(xmin, ymin, xmax, ymax, word)]) per page, from pdftotext -bbox."""
    html = subprocess.run(["pdftotext", "-bbox", str(pdf), "-"], check=True, capture_output=True, text=True).stdout
    pages = []
    for w, h, body in re.findall(r'<page width="([\d.]+)" height="([\d.]+)">(.*?)</page>', html, re.S):
        words = [(float(a), float(b), float(c), float(d), t) for a, b, c, d, t in re.findall(
            r'<word xMin="([\d.-]+)" yMin="([\d.-]+)" xMax="([\d.-]+)" yMax="([\d.-]+)">([^<]*)</word>', body)]
        pages.append((float(w), float(h), words))
    return pages


def _pages_to_png(pdf, prefix):
    from test_browser import artifacts

    if shutil.which("pdftoppm"):
        subprocess.run(["pdftoppm", "-r", "60", "-png", str(pdf), str(artifacts() / prefix)], check=True)


@pytest.mark.parametrize("which", ["demo", "skin_tone", "comparisons"])
def test_pdf_text_stays_inside_the_page_and_no_page_is_mostly_blank(which, request):
    bundle = request.getfixturevalue({"demo": "demo_bundle", "skin_tone": "skin_pdf",
                                      "comparisons": "comparisons_bundle"}[which])
    pdf = bundle / "report.pdf"
    assert pdf.exists()
    _pages_to_png(pdf, f"{which}-pdf-page")
    pages = _boxes(pdf)
    assert pages
    for i, (w, h, words) in enumerate(pages, 1):
        # nothing cut at the right edge: every word lies inside the page's content box (margins 14 mm)
        outside = [t for x0, y0, x1, y1, t in words if x0 < 14 * MM - 2 or x1 > w - 14 * MM + 2 or y1 > h]
        assert not outside, f"page {i}: text past the margin: {outside[:8]}"
        # no mostly blank page (the last may be short): body text reaches past half the page
        body = [y1 for x0, y0, x1, y1, t in words if y1 < h - 18 * MM]
        if i < len(pages):
            assert body and max(body) > 0.5 * h, f"page {i} is mostly blank"
