"""Render time and length of the report: the skin-tone fixture, or a large planted audit.

    python bench/report.py [--repeat 3]                 # the skin-tone fixture (4 scorers x 2 arms)
    python bench/report.py --large [--real 400 --prompts 100 --pairs 1036 --excluded 3000]

`--large` builds tests/reports/big.audit's bundle (7 scorers, 3 arms, 12 hypotheses, 82 cells) from
planted scores at the given size (default: 800 images, 1,036 pairs, 3,000 exclusions: the audit that
produced 616 PDF pages in about 9 minutes) and times HTML + PDF. Targets: fixture HTML <= 2 s and PDF
<= 10 s; large HTML + PDF <= 30 s, with a page count that follows the hypotheses (not the images).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reports"))

TARGET_HTML, TARGET_PDF, TARGET_LARGE = 2.0, 10.0, 30.0


def _pages(pdf: Path) -> str:
    """The PDF's page count (pdfinfo, poppler-utils), or "?" without it."""
    import re
    import shutil
    import subprocess

    if shutil.which("pdfinfo") is None:
        return "?"
    out = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True).stdout
    m = re.search(r"^Pages:\s+(\d+)", out, re.M)
    return m.group(1) if m else "?"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--large", action="store_true", help="time the large planted audit (tests/reports/big.audit)")
    ap.add_argument("--real", type=int, default=400, help="real images (one cluster each)")
    ap.add_argument("--prompts", type=int, default=100, help="synthetic prompts (4 images each)")
    ap.add_argument("--pairs", type=int, default=1036)
    ap.add_argument("--excluded", type=int, default=3000, help="exclusion entries")
    args = ap.parse_args()

    from scoreaudit.reports.context import ReportContext
    from scoreaudit.reports.render import render_html, write_pdf

    with tempfile.TemporaryDirectory() as tmp:
        if args.large:
            from big_bundle import big_bundle

            t0 = time.perf_counter()
            d = big_bundle(Path(tmp) / "big", real=args.real, prompts=args.prompts, pairs=args.pairs,
                           excluded=args.excluded)
            print(f"bundle: {args.real + 4 * args.prompts} images, {args.pairs} pairs, {args.excluded} exclusions "
                  f"(built and analysed in {time.perf_counter() - t0:.1f} s)")
        else:
            from fixture_bundle import skin_bundle

            d = skin_bundle(Path(tmp) / "skin")
        html_times, pdf_times = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            html = render_html(ReportContext.load(d))
            (d / "report.html").write_text(html, encoding="utf-8")
            html_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            write_pdf(html, d / "report.pdf")
            pdf_times.append(time.perf_counter() - t0)
        h, p = min(html_times), min(pdf_times)
        pages = _pages(d / "report.pdf")
        cells = len(ReportContext.load(d).results.get("cells") or [])
        print(f"HTML: {h:.2f} s (best of {args.repeat}; {len(html) / 1024:.0f} KiB)")
        per = f", {int(pages) / max(cells, 1):.2f} pages per cell" if pages != "?" else ""
        print(f"PDF:  {p:.2f} s (best of {args.repeat}; {pages} pages for {cells} cells{per})")
        if args.large:
            print(f"HTML + PDF: {h + p:.1f} s (target <= {TARGET_LARGE:.0f} s; ratio {(h + p) / TARGET_LARGE:.2f})")
            return 0 if h + p <= TARGET_LARGE else 1
        print(f"targets: HTML <= {TARGET_HTML:.0f} s, PDF <= {TARGET_PDF:.0f} s")
        return 0 if h <= TARGET_HTML and p <= TARGET_PDF else 1


if __name__ == "__main__":
    sys.exit(main())
