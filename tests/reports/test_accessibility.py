"""axe-core finds no accessibility violation in the report at desktop and phone width (issue 28).

The large report (7 scorers, 3 arms, 12 hypotheses) and the real demo report, opened in headless Debian
chromium at 1280 and 390 px; axe.min.js comes from the installed `axe-core-python` package and is evaluated
in the page (nothing is fetched). A failure lists every violation: rule, impact, the offending elements."""

from __future__ import annotations

import pytest
from axe_check import axe_source, violations
from cdp import CHROMIUM, Browser
from test_browser import VIEWPORTS

SOURCE = axe_source()

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)"),
              pytest.mark.skipif(SOURCE is None, reason="axe-core-python (the test extra) is not installed")]


def _violations(report) -> dict[str, list[str]]:
    found = {}
    with Browser() as b:
        for name, (w, h, mobile) in VIEWPORTS.items():
            s = b.open(report.resolve().as_uri(), w, h, mobile)
            found[f"{name} {w}px"] = violations(b, s, SOURCE)
    return found


def test_axe_sees_the_violations_of_a_bad_page(tmp_path):
    """The check itself: a page with an unlabelled image and a scroll box the keyboard cannot reach fails."""
    page = tmp_path / "bad.html"
    page.write_text('<html><body><main><h1>x</h1><img src="data:image/png;base64,iVBORw0KGgo=">'
                    '<div style="overflow:auto;width:50px;height:50px"><p>' + "word " * 300 + "</p></div></main></body></html>")
    found = _violations(page)
    for lines in found.values():
        ids = {line.split()[0] for line in lines}
        assert {"image-alt", "scrollable-region-focusable", "html-has-lang"} <= ids, lines


def test_large_report_has_no_axe_violations(big_bundle_dir):
    found = _violations(big_bundle_dir / "report.html")
    assert all(v == [] for v in found.values()), "\n".join(f"{k}: {x}" for k, v in found.items() for x in v)


def test_demo_report_has_no_axe_violations(demo_bundle):
    found = _violations(demo_bundle / "report.html")
    assert all(v == [] for v in found.values()), "\n".join(f"{k}: {x}" for k, v in found.items() for x in v)


def test_comparisons_report_has_no_axe_violations(comparisons_bundle):
    found = _violations(comparisons_bundle / "report.html")
    assert all(v == [] for v in found.values()), "\n".join(f"{k}: {x}" for k, v in found.items() for x in v)
