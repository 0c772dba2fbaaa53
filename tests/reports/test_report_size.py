"""A report grows with its hypotheses, not with its images: exclusions are listed by reason with counts."""

from __future__ import annotations

import json
import re

from fixture_bundle import BUILDERS

from scoreaudit.reports.render import render


def _exclusions(html: str) -> str:
    return re.search(r'<section id="exclusions".*?</section>', html, re.S).group(0)


def test_thousands_of_exclusions_are_a_few_rows_by_reason(tmp_path):
    d = BUILDERS["skin_tone"](tmp_path / "b")
    res = json.loads((d / "results.json").read_text())
    reasons = ["no face detected", "image could not be decoded", "skin region too small"]
    res["exclusions"] = [{"arm": "real" if k % 4 else "synthetic", "image_id": f"img{k:05d}", "row": k + 1,
                          "stage": "region", "reason": reasons[k % 3]} for k in range(6000)]
    (d / "results.json").write_text(json.dumps(res))
    render(d, formats=["html"])
    html = (d / "report.html").read_text()
    sec = _exclusions(html)
    body = sec.split("<table class=\"exclusions", 1)[1].split("<tbody>", 1)[1]
    rows = re.findall(r"<tr>(.*?)</tr>", body, re.S)
    # one row per (arm, stage, reason), each with its count; counts add up to every entry
    expect = {}
    for e in res["exclusions"]:
        expect[(e["arm"], e["reason"])] = expect.get((e["arm"], e["reason"]), 0) + 1
    assert len(rows) == len(expect) == 6
    got = {}
    for r in rows:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)
        got[(cells[0], cells[2])] = int(cells[3].replace(",", ""))
    assert got == expect
    assert "6,000 entries" in sec or "6000 entries" in sec
    assert "tables/exclusions.parquet" in sec
    assert len(sec) < 8_000  # before: one table row per entry (over 600 kB for 6,000 entries)
    assert "img05999" not in html  # the full list stays in the tables


def test_rendering_reports_progress_per_section_and_pdf_stage(tmp_path, capsys, monkeypatch):
    """Off a terminal the bar is plain lines: one when the report stage completes (every section, PDF stages)."""
    monkeypatch.setenv("SCOREAUDIT_PROGRESS_SECONDS", "0")
    d = BUILDERS["cross_image"](tmp_path / "b")
    render(d, formats=["html"], progress=True)
    err = capsys.readouterr().err
    from scoreaudit.reports.sections.builtin import load

    n = len(load()) + 1  # and report.html
    assert f"progress: report {n}/{n} (100%)" in err
    render(d, formats=["html"])
    assert "progress:" not in capsys.readouterr().err  # off unless asked (the CLI asks on a terminal)


def test_pdf_is_tagged(skin_pdf):
    """The PDF carries a structure tree (PDF/UA-1): pdfinfo reports it tagged."""
    import shutil
    import subprocess

    import pytest

    if shutil.which("pdfinfo") is None:
        pytest.skip("pdfinfo (poppler-utils) is not installed")
    info = subprocess.run(["pdfinfo", str(skin_pdf / "report.pdf")], capture_output=True, text=True).stdout
    assert re.search(r"^Tagged:\s+yes", info, re.M), info
    assert b"/StructTreeRoot" in (skin_pdf / "report.pdf").read_bytes() or "Tagged:          yes" in info
