"""One number style in the real demo report too (issue 28): the statistics' own words that reach the report
(verdict details, undefined reasons) use the report's number style (U+2212 minus, three significant
digits, no `0.0000%`), and the pre-registration box shows times as a reader reads them."""

from __future__ import annotations

import html as htmllib
import json
import re

from scoreaudit import numfmt
from scoreaudit.reports.sections.first_screen import utc_time


def _text(page: str) -> str:
    body = re.sub(r'<pre class="spec">.*?</pre>|<svg.*?</svg>|<style>.*?</style>', "", page, flags=re.S)
    body = re.sub(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+", "", body)
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", body)))


def test_demo_report_has_no_ascii_minus_and_no_long_decimals(demo_bundle):
    text = _text((demo_bundle / "report.html").read_text())
    # before: "FI(light_rest) = -0.0123 < 0" (a placebo ratio's undefined reason) and "mean leakage 0.0000%"
    assert not re.findall(r"(?<![\w\-.:])-\d", text), re.findall(r".{40}(?<![\w\-.:])-\d.{20}", text)[:3]
    assert "0.0000%" not in text
    assert not re.search(r"\d\.\d{6}Z", text)  # no raw microsecond time stamps


def test_verdict_details_state_leakage_in_the_report_style(demo_bundle):
    res = json.loads((demo_bundle / "results.json").read_text())
    details = [(c.get("value"), c.get("detail") or "") for v in res["verdicts"] for c in v["conditions"]
               if c.get("name") == "pixel isolation" and "mean leakage" in (c.get("detail") or "")]
    assert details
    for value, detail in details:
        shown = re.search(r"mean leakage (\S+) of pixels outside the region (≤|>) (\S+)", detail)
        assert shown and shown.group(1) == numfmt.pct(value), detail
        assert shown.group(3) == "0.1%"  # the default max_leakage 0.001, as the spec writes it
    checks = [c.get("detail") or "" for v in res["verdicts"] for c in v["conditions"]
              if c.get("name") == "measurement validity" and " held" in (c.get("detail") or "")]
    assert checks and all(">=" not in d and "\u2265" in d for d in checks), checks  # 'r2 = 0.998 ≥ 0.5 held'


def test_penalty_reasons_use_the_report_minus():
    from scoreaudit.stats.dose import _penalty_reason
    from scoreaudit.stats.estimate import Estimate

    neg = _penalty_reason("light_rest", Estimate(-0.01234, "normal", se=0.01, df=20.0), 0.05)
    assert neg == "the scorer rewards light_rest: FI(light_rest) = \u22120.0123 < 0"
    weak = _penalty_reason("light_rest", Estimate(0.001, "normal", se=0.01, df=20.0), 0.05)
    assert re.fullmatch(r"FI\(light_rest\) = 0\.00100 is not significantly positive \(p = 0\.\d+\)", weak), weak


def test_times_are_shown_to_the_second_in_utc(demo_bundle):
    assert utc_time("2026-12-04T04:32:25.063326Z") == "2026-12-04 04:32:25 UTC"
    assert utc_time("2026-12-04T05:32:25+01:00") == "2026-12-04 04:32:25 UTC"
    assert utc_time("not a time") == "not a time" and utc_time(None) is None
    page = (demo_bundle / "report.html").read_text()
    box = re.search(r'<section id="preregistration".*?</section>', page, re.S).group(0)
    assert re.search(r"first score: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", box), box[-400:]


def test_comparison_sentences_read_like_the_others(comparisons_bundle):
    """examples/comparisons.audit: a stress-test comparison says so inside its claim's parentheses (before:
    '(claim: ...) (stress test, not a bias measurement)'), and an AUROC cell names its measure as AUROC."""
    from scoreaudit.reports.sentences import cell_sentence

    cells = json.loads((comparisons_bundle / "results.json").read_text())["cells"]
    stress = [c for c in cells if c.get("qualifier") == "stress-test-only" and c.get("claim_text")]
    auroc = [c for c in cells if (c.get("params") or {}).get("metric") == "auroc"]
    assert stress and auroc
    for c in stress:
        s = cell_sentence(c)
        assert s.endswith(f"; stress test, not a bias measurement): {c['outcome']}."), s
        assert ") (stress test" not in s
    for c in auroc:
        assert "'s AUROC against the labels in " in cell_sentence(c), cell_sentence(c)
    text = _text((comparisons_bundle / "report.html").read_text())
    assert ") (stress test" not in text and "auroc against" not in text


def test_a_comparison_names_the_test_its_cell_names(comparisons_bundle):
    """The comparisons section's 'Test:' is the cell's own test line (before: 'Test: bootstrap.' beside a cell
    that says 'cluster bootstrap (percentile inversion)')."""
    page = (comparisons_bundle / "report.html").read_text()
    sec = re.search(r'<section id="comparisons".*?</section>', page, re.S).group(0)
    hyp = re.search(r'<section id="hypotheses".*?</section>', page, re.S).group(0)
    said = set(re.findall(r"Test: (.*?)(?: \(\d+ pairs|\.</p>)", htmllib.unescape(sec)))
    cells = set(re.findall(r"test: ([^;)]+\)?)", htmllib.unescape(re.sub(r"<[^>]+>", " ", hyp))))
    assert said and "bootstrap" not in said, said
    assert said <= {c.strip() for c in cells}, (said, cells)
