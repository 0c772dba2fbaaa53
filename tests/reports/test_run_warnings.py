"""Warnings about the run reach the report: duplicate and animated images (run.json) and W0421 few clusters
(results.json `warnings`), in one short box under the pre-registration status, escaped, in HTML and PDF."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixture_bundle import BUILDERS
from scoreaudit.reports.render import render, render_html
from scoreaudit.reports.context import ReportContext

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "arm 'real': 2 images have identical pixels (<script>alert(1)</script>, b&c); they are counted as separate"


def _bundle(tmp_path: Path, run_warnings: list[str], result_warnings: list[dict]) -> Path:
    d = BUILDERS["skin_tone"](tmp_path / "b")
    (d / "run.json").write_text(json.dumps({"warnings": run_warnings}), encoding="utf-8")
    res = json.loads((d / "results.json").read_text(encoding="utf-8"))
    res["warnings"] = result_warnings
    (d / "results.json").write_text(json.dumps(res), encoding="utf-8")
    return d


W0421 = {"code": "W0421", "arm": "real", "n_clusters": 12,
         "message": "arm real has 12 clusters: with `scale: sd` the SD's own uncertainty makes intervals "
                    "under-cover below about 50 clusters (spec/methods.md); read its SD-unit verdicts with care"}


def _sections(html: str) -> list[str]:
    return re.findall(r'<section id="([a-z_]+)"', html)


def test_the_box_lists_each_kind_once_escaped_and_sits_under_the_prereg_status(tmp_path):
    animated = "image 'astro_002' of arm 'real' (real/astro_002.png) is animated (2 frames): the first frame is used"
    d = _bundle(tmp_path, [HOSTILE, animated], [W0421])
    html = render_html(ReportContext.load(d))
    order = _sections(html)
    assert order.index("preregistration") < order.index("warnings") < order.index("verdict")
    box = html[html.index('<section id="warnings"'):]
    box = box[:box.index("</section>")]
    assert "3 warnings about this run" in box
    # each kind under its own heading, with what it means for the reader
    assert "Few clusters for SD units" in box and "below about 50" in box and "arm real: 12 clusters" in box
    assert "Identical images" in box and "Animated images" in box and "the first frame" in box
    # user strings escaped: no markup from data
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in box and "b&amp;c" in box
    assert "Warnings" in re.search(r'<nav class="toc".*?</nav>', html, re.S).group(0)


def test_many_warnings_of_one_kind_are_counted_not_all_listed(tmp_path):
    many = [f"arm 'real': 2 images have identical pixels (a{i}, b{i}); they are counted as separate" for i in range(12)]
    html = render_html(ReportContext.load(_bundle(tmp_path, many, [])))
    box = html[html.index('<section id="warnings"'):]
    box = box[:box.index("</section>")]
    assert "12 warnings about this run" in box
    assert box.count("<li>") == 5 and "and 7 more" in box


def test_no_warnings_no_box_and_not_listed_as_missing(tmp_path):
    html = render_html(ReportContext.load(_bundle(tmp_path, [], [])))
    assert 'id="warnings"' not in html
    assert "Warnings" not in re.search(r'<p class="omitted">.*?</p>', html, re.S).group(0)


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) is not installed")
def test_the_pdf_shows_the_warnings(tmp_path):
    pytest.importorskip("weasyprint")
    d = _bundle(tmp_path, [HOSTILE], [W0421])
    render(d, formats=["html", "pdf"])
    text = subprocess.run(["pdftotext", str(d / "report.pdf"), "-"], check=True, capture_output=True,
                          text=True).stdout
    text = re.sub(r"\s+", " ", text)
    assert "2 warnings about this run" in text and "arm real: 12 clusters" in text
    assert "<script>alert(1)</script>" in text  # shown as text, never interpreted


def test_a_real_run_with_duplicate_and_animated_images_says_so_in_its_report(tmp_path):
    from PIL import Image

    sys.path.insert(0, str(ROOT / "tests" / "hardening"))
    from hardening_helpers import project

    from scoreaudit import cli

    spec = project(tmp_path / "p")
    real = tmp_path / "p" / "data" / "real"
    shutil.copy2(real / "astro_000.png", real / "astro_001.png")
    im = Image.open(real / "astro_002.png").convert("RGB")
    im.save(real / "astro_002.png", save_all=True, append_images=[im.rotate(90)], duration=100, loop=0)
    out = tmp_path / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    box = html[html.index('<section id="warnings"'):]
    box = box[:box.index("</section>")]
    assert "Identical images" in box and "identical pixels (astro_000, astro_001)" in box
    assert "Animated images" in box and "astro_002" in box and "animated (2 frames)" in box
    # the bundle still verifies: the box is rendered from the bundle's own records
    assert cli.main(["verify", str(out)]) == 0
