"""Render time of the full skin-tone report (4 scorers x 2 arms x 3 operators + placebo, every section).

    python bench/report.py [--repeat 3]

Targets: HTML <= 2 s, PDF <= 10 s on the 2-core reference machine. Uses the
fixture bundle of tests/reports (shaped like examples/skin_tone.audit's results).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reports"))

TARGET_HTML, TARGET_PDF = 2.0, 10.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from fixture_bundle import skin_bundle

    from scoreaudit.reports.context import ReportContext
    from scoreaudit.reports.render import render_html, write_pdf

    with tempfile.TemporaryDirectory() as tmp:
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
        print(f"HTML: {h:.2f} s (best of {args.repeat}; target <= {TARGET_HTML:.0f} s; {len(html) / 1024:.0f} KiB)")
        print(f"PDF:  {p:.2f} s (best of {args.repeat}; target <= {TARGET_PDF:.0f} s)")
        return 0 if h <= TARGET_HTML and p <= TARGET_PDF else 1


if __name__ == "__main__":
    sys.exit(main())
