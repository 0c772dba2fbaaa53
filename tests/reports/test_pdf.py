"""The PDF: WeasyPrint from the same HTML; paginated, numbered, every hypothesis sentence in its text."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from scoreaudit.reports.sentences import cell_sentence

pytestmark = pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) not installed")


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
    # the appendix starts on its own page
    assert any(p.lstrip().startswith("Appendix") for p in pages)


def test_pdf_text_contains_every_hypothesis_sentence(skin_pdf):
    text = re.sub(r"\s+", " ", _text(skin_pdf / "report.pdf"))
    results = json.loads((skin_pdf / "results.json").read_text(encoding="utf-8"))
    for cell in results["cells"]:
        assert re.sub(r"\s+", " ", cell_sentence(cell)) in text
