"""The PDF process a run starts early (reports/pdf_process.py): the same PDF as in-process, never a lost one.

What a user relies on: a run that asks for a PDF gets the same bytes whether WeasyPrint ran in the run's
process or in its own; a missing WeasyPrint is the same install hint; a process that died costs the
run nothing but time; and no process outlives the run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from scoreaudit.reports import render as render_mod
from scoreaudit.reports.pdf import PdfUnavailable, convert
from scoreaudit.reports.pdf_process import PdfProcess

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fixture_bundle import BUILDERS


@pytest.fixture(scope="module")
def report_html(tmp_path_factory) -> str:
    d = BUILDERS["skin_tone"](tmp_path_factory.mktemp("pdfproc"))
    render_mod.render(d, formats=["html"])
    return (d / "report.html").read_text(encoding="utf-8")


def test_the_process_writes_the_bytes_the_run_would_write_itself(report_html):
    pytest.importorskip("weasyprint")
    pages: list[int] = []
    with PdfProcess.start() as proc:
        from_process = proc.convert(report_html, pages.append)
        again = proc.convert(report_html)  # one process serves one request after another
    in_process = convert(report_html)
    assert from_process is not None and from_process.startswith(b"%PDF")
    assert from_process == in_process == again
    from scoreaudit.reports.pdf import lay_out

    assert len(pages) == 1 and pages[0] == len(lay_out(report_html).pages) > 1


def test_a_dead_process_costs_only_time(tmp_path, report_html):
    pytest.importorskip("weasyprint")
    proc = PdfProcess.start()
    assert proc is not None
    proc._proc.kill()
    proc._proc.wait()
    out = render_mod.write_pdf(report_html, tmp_path / "report.pdf", process=proc)  # laid out here instead
    proc.close()
    assert out.read_bytes() == convert(report_html)


def test_no_weasyprint_in_the_process_is_the_install_hint(tmp_path, monkeypatch, report_html):
    planted = tmp_path / "site"
    (planted / "weasyprint").mkdir(parents=True)
    (planted / "weasyprint" / "__init__.py").write_text("raise ImportError('no weasyprint here')\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(planted), os.environ.get("PYTHONPATH", "")]))
    with PdfProcess.start() as proc, pytest.raises(PdfUnavailable, match=r"pip install 'scoreaudit\[pdf\]'"):
        proc.convert(report_html)


def test_a_run_stops_its_process_used_or_not(tmp_path, monkeypatch):
    """The spec asks for a PDF: the first run lays it out in the process, the unchanged re-run keeps the
    PDF and never asks; after each, the process has exited."""
    pytest.importorskip("weasyprint")
    from scoreaudit import api

    started: list[PdfProcess] = []
    real_start = PdfProcess.start.__func__  # type: ignore[attr-defined]

    def start(cls):
        p = real_start(cls)
        started.append(p)
        return p

    monkeypatch.setattr(PdfProcess, "start", classmethod(start))
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "scripts"))
    import make_demo_data

    make_demo_data.build(tmp_path / "data" / "demo", n_real=6, n_prompts=2)
    text = (root / "examples" / "demo.audit").read_text(encoding="utf-8").replace("bootstrap: 2000", "bootstrap: 100")
    assert "pdf" in text.split("report", 1)[1]
    spec = tmp_path / "demo.audit"
    spec.write_text(text, encoding="utf-8")
    api.run(spec, out=tmp_path / "out", progress=False)
    pdf = (tmp_path / "out" / "report.pdf").read_bytes()
    assert pdf == convert((tmp_path / "out" / "report.html").read_text(encoding="utf-8"))
    api.run(spec, out=tmp_path / "out", progress=False)
    assert (tmp_path / "out" / "report.pdf").read_bytes() == pdf
    api.run(spec, out=tmp_path / "out", progress=False, formats=["html"])
    assert len(started) == 2 and all(p._proc.returncode is not None for p in started)


def test_the_process_ends_with_a_killed_run(tmp_path):
    """A run killed outright (no `finally`) leaves no PDF process behind: the process ends at the end of
    its input, which the killed parent's pipe closes."""
    import signal
    import subprocess
    import time

    parent = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from scoreaudit.reports.pdf_process import PdfProcess; "
         "p = PdfProcess.start(); print(p._proc.pid, flush=True); time.sleep(120)"],
        stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()

    def running(pid: int) -> bool:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        return "\nState:\tZ" not in status  # a zombie has exited (reparented, awaiting its reaper)

    if not Path("/proc").is_dir():
        pytest.skip("needs /proc")
    deadline = time.monotonic() + 30  # it may finish its warm-up first
    while running(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(child)


def test_another_scoreaudit_first_on_the_path_is_never_used(tmp_path, monkeypatch, report_html):
    """The process runs the parent's own code or none: a scoreaudit installed elsewhere and found first
    ends it, and the PDF is laid out in the parent."""
    pytest.importorskip("weasyprint")
    other = tmp_path / "other"
    (other / "scoreaudit").mkdir(parents=True)
    (other / "scoreaudit" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(other))
    with PdfProcess.start() as proc:
        assert proc.convert(report_html) is None
        assert proc._proc.wait(timeout=30) == 3
    out = render_mod.write_pdf(report_html, tmp_path / "report.pdf", process=proc)
    assert out.read_bytes() == convert(report_html)


def test_modules_in_the_working_folder_are_never_imported(tmp_path, monkeypatch, report_html):
    """The process is started with `python -c`, which would put the working folder (a project with
    downloaded data, say) first on the path: a `weasyprint.py` or `json.py` there must not run."""
    pytest.importorskip("weasyprint")
    marker = tmp_path / "ran"
    for name in ("weasyprint", "json"):
        (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('{name}')\nraise ImportError\n",
                                             encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    with PdfProcess.start() as proc:
        pdf = proc.convert(report_html)
    assert not marker.exists(), marker.read_text(encoding="utf-8")
    assert pdf == convert(report_html)
