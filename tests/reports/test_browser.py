"""Headless chromium loads the report at desktop and phone widths: no errors, no sideways scroll."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cdp import CHROMIUM, Browser

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)")]

ROOT = Path(__file__).resolve().parents[2]
VIEWPORTS = {"desktop": (1280, 900, False), "phone": (390, 844, True)}


def artifacts() -> Path:
    d = Path(os.environ.get("SCOREAUDIT_ARTIFACTS") or ROOT / "artifacts") / "reports"
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.mark.parametrize("example", ["skin_tone", "cross_image"])
def test_report_loads_cleanly_at_desktop_and_phone_width(bundles, example):
    url = (bundles[example] / "report.html").resolve().as_uri()
    with Browser() as b:
        for name, (w, h, mobile) in VIEWPORTS.items():
            s = b.open(url, w, h, mobile)
            shot = b.screenshot(s, artifacts() / f"{example}-{name}.png")
            assert shot.stat().st_size > 10_000
            assert b.errors(s) == []
            # nothing wider than the viewport: the page never scrolls sideways (wide tables scroll in their box)
            assert b.evaluate(s, "document.documentElement.scrollWidth") <= w
            # the first screen shows the title and the pre-registration status
            top = b.evaluate(s, "document.querySelector('#preregistration').getBoundingClientRect().top")
            assert top < h
            # every chart is laid out with a real size
            sizes = b.evaluate(s, "[...document.querySelectorAll('svg.chart')].map(e => e.getBoundingClientRect().width)")
            assert sizes and min(sizes) > 100
            b.screenshot(s, artifacts() / f"{example}-{name}-full.png", full_page=True)


# The element that overflows, if any (outside any box that scrolls on its own): named in the failure message.
OVERFLOW = """(() => { const W = document.documentElement.clientWidth; const out = [];
for (const e of document.querySelectorAll('body *')) { if (e.getBoundingClientRect().right <= W + 1) continue;
  let p = e.parentElement, boxed = false;
  while (p) { if (getComputedStyle(p).overflowX !== 'visible') { boxed = true; break; } p = p.parentElement; }
  if (!boxed) out.push(e.tagName + (e.id ? '#' + e.id : '') + '.' + (e.className || '') + ' in ' + (e.closest('section') || {}).id); }
return out.slice(0, 5); })()"""


def test_demo_report_never_scrolls_sideways_and_is_photographed(demo_bundle):
    """The real demo report at 1280 and 390 px: no sideways scroll; screenshots land in artifacts/reports."""
    url = (demo_bundle / "report.html").resolve().as_uri()
    with Browser() as b:
        for name, (w, h, mobile) in VIEWPORTS.items():
            s = b.open(url, w, h, mobile)
            assert b.errors(s) == []
            width = b.evaluate(s, "document.documentElement.scrollWidth")
            assert width <= w, (name, width, b.evaluate(s, OVERFLOW))
            b.screenshot(s, artifacts() / f"demo-{name}.png")
            b.screenshot(s, artifacts() / f"demo-{name}-full.png", full_page=True)
            # the first screen: verdict and the glance matrix are reachable without hunting
            assert b.evaluate(s, "document.querySelectorAll('#glance a.g').length") > 0
            # every glance link lands on a sentence
            assert b.evaluate(s, "[...document.querySelectorAll('#glance a.g')].every("
                                 "a => document.getElementById(a.getAttribute('href').slice(1)))")


def test_injected_script_would_be_reported(tmp_path):
    """The error collection itself works: a page with a thrown error is caught."""
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>throw new Error('boom')</script></body></html>")
    with Browser() as b:
        s = b.open(page.as_uri(), 800, 600)
        assert any("boom" in e or "Uncaught" in e for e in b.errors(s))


def test_wide_tables_become_cards_on_a_phone(demo_bundle):
    """At 390 px each row of a wide table is a card whose values carry their column headings."""
    url = (demo_bundle / "report.html").resolve().as_uri()
    with Browser() as b:
        s = b.open(url, 390, 844, True)
        stacked = b.evaluate(s, "[...document.querySelectorAll('table.stack')].map(t => t.scrollWidth <= "
                                "t.parentElement.clientWidth + 1)")
        assert stacked and all(stacked)
        label = b.evaluate(s, "getComputedStyle(document.querySelector('#placebo table.stack td'), '::before').content")
        assert label.strip('"') == "Scorer"
        s = b.open(url, 1280, 900, False)
        assert b.evaluate(s, "getComputedStyle(document.querySelector('#placebo table.stack thead')).display") != "none"


def test_comparisons_report_never_scrolls_sideways_and_is_photographed(comparisons_bundle):
    """Every comparisons view (forest plots, ratio axes, decompositions, the glance with scorer pairs) at
    1280 and 390 px: no sideways scroll; screenshots of the page and of the comparisons section."""
    url = (comparisons_bundle / "report.html").resolve().as_uri()
    with Browser() as b:
        for name, (w, h, mobile) in VIEWPORTS.items():
            s = b.open(url, w, h, mobile)
            assert b.errors(s) == []
            width = b.evaluate(s, "document.documentElement.scrollWidth")
            assert width <= w, (name, width, b.evaluate(s, OVERFLOW))
            b.screenshot(s, artifacts() / f"comparisons-{name}-full.png", full_page=True)
            # every forest plot is laid out at a legible size (a phone scrolls it inside its own box)
            sizes = b.evaluate(s, "[...document.querySelectorAll('#comparisons svg.chart')].map("
                                  "e => e.getBoundingClientRect().width)")
            assert sizes and min(sizes) >= (500 if mobile else 600)
            # each comparison's heading links to its sentence
            assert b.evaluate(s, "[...document.querySelectorAll('#comparisons h3 a')].every("
                                 "a => document.getElementById(a.getAttribute('href').slice(1)))")


def test_deviation_box_with_long_texts_fits_a_phone(tmp_path):
    """A real lock's deviation (long canonical hypothesis text, a 64-hex sha256, the attestation) on a phone:
    no sideways scroll (the table turns into cards, long words wrap)."""
    import json

    from fixture_bundle import BUILDERS
    from scoreaudit.reports.render import render

    d = BUILDERS["skin_tone"](tmp_path / "b")
    res = json.loads((d / "results.json").read_text())
    long_h = '"Scorers prefer the unaltered image(inverted U)" { fidelity_index(light)>0 on real,synthetic for each scorer }'
    res["lock"] = {"status": "deviation", "locked_at": "2026-12-01T03:43:51Z", "first_score_at": "2026-12-01T04:00:00Z",
                   "lock_sha256": "215b46eb80b62b681b6140a69bd25163f157f65a0acca40f608986f7f0fbb7ca",
                   "attestation": "A lock is self-attested: its time comes from the clock of the machine that wrote it.",
                   "detail": "The audit that ran differs from the lock: hypothesis H1 (changed), setting alpha (changed).",
                   "deviations": [{"item": "hypothesis H1", "hypothesis": "H1", "change": "changed", "locked": long_h,
                                   "current": long_h.replace(">0 ", ">0.01 ")},
                                  {"item": "setting alpha", "hypothesis": "setting alpha", "change": "changed",
                                   "locked": "0.05", "current": "0.1"}]}
    (d / "results.json").write_text(json.dumps(res))
    render(d, formats=["html"])
    with Browser() as b:
        for name, (w, h, mobile) in VIEWPORTS.items():
            s = b.open((d / "report.html").resolve().as_uri(), w, h, mobile)
            width = b.evaluate(s, "document.documentElement.scrollWidth")
            assert width <= w, (name, width, b.evaluate(s, OVERFLOW))
            b.screenshot(s, artifacts() / f"deviation-{name}.png")
