"""`scoreaudit report` is never a blank screen (issue 28): off a terminal, plain `progress:` lines on stderr
name each slow render stage as it begins (sections, report.html, PDF layout, PDF writing) and the stage's
completion; `-q` prints none; stdout keeps only the written paths."""

from __future__ import annotations

import re

import pytest

from fixture_bundle import BUILDERS
from scoreaudit import cli


def _stages(err: str) -> list[str]:
    return re.findall(r"^progress: report \d+/\d+: (.*)$", err, re.M)


def test_report_prints_a_line_per_stage_off_a_terminal(tmp_path, capsys):
    d = BUILDERS["cross_image"](tmp_path / "b")
    capsys.readouterr()
    assert cli.main(["report", str(d), "--formats", "html"]) == 0
    out, err = capsys.readouterr()
    assert out.strip().endswith("report.html") and "progress:" not in out
    stages = _stages(err)
    assert stages[0] == "building the sections"
    assert re.fullmatch(r"writing report\.html \([\d,]+ kB\)", stages[1]), stages
    from scoreaudit.reports.sections.builtin import load

    n = len(load()) + 1  # every section, then report.html
    assert f"progress: report {n}/{n} (100%)" in err  # the completion line
    # the stage lines come in order, before the completion line
    assert err.index("building the sections") < err.index("writing report.html") < err.index(f"{n}/{n} (100%)")


def test_quiet_prints_no_progress(tmp_path, capsys):
    d = BUILDERS["cross_image"](tmp_path / "b")
    capsys.readouterr()
    assert cli.main(["report", str(d), "--formats", "html", "-q"]) == 0
    assert "progress:" not in capsys.readouterr().err


def test_the_pdf_stages_have_lines_of_their_own(tmp_path, capsys):
    pytest.importorskip("weasyprint")
    d = BUILDERS["cross_image"](tmp_path / "b")
    capsys.readouterr()
    assert cli.main(["report", str(d), "--formats", "html,pdf"]) == 0
    err = capsys.readouterr().err
    stages = _stages(err)
    assert "laying out the PDF pages" in stages
    pages = [s for s in stages if s.startswith("writing ") and s.endswith(" PDF pages")]
    assert len(pages) == 1 and int(pages[0].split()[1]) > 1, stages
    from scoreaudit.reports.sections.builtin import load

    n = len(load()) + 3  # the sections, report.html, PDF layout and writing
    lines = [x for x in err.splitlines() if x.startswith("progress:")]
    assert lines[-1].startswith(f"progress: report {n}/{n} (100%)")  # complete only once the PDF is written
