"""Render only what changed (issue 33): a report whose inputs did not change is not laid out again.

Observable: the file's inode and mtime stay, and the renderer is never entered (it is replaced by one
that fails); after an edit of what the report is made from it is rendered again."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from fixture_bundle import skin_bundle

import scoreaudit.reports.render as render_mod
from scoreaudit.reports import render_cache
from scoreaudit.reports.render import render


def _stamp(p):
    st = os.stat(p)
    return st.st_ino, st.st_mtime_ns


def _no_render(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("the report was rendered again")

    monkeypatch.setattr(render_mod, "render_html", fail)


def test_second_render_with_nothing_changed_writes_nothing(tmp_path, monkeypatch):
    b = skin_bundle(tmp_path / "b")
    render(b, formats=["html"])
    before = _stamp(b / "report.html"), _stamp(b / "render.json"), (b / "report.html").read_bytes()
    _no_render(monkeypatch)
    assert render(b, formats=["html"]) == [b / "report.html"]
    assert (_stamp(b / "report.html"), _stamp(b / "render.json"), (b / "report.html").read_bytes()) == before


def test_an_edit_of_the_results_renders_again(tmp_path):
    b = skin_bundle(tmp_path / "b")
    render(b, formats=["html"])
    old = (b / "report.html").read_text(encoding="utf-8")
    res = json.loads((b / "results.json").read_text(encoding="utf-8"))
    res["title"] = res["settings"]["title"] = "An edited title 7731"
    (b / "results.json").write_text(json.dumps(res), encoding="utf-8")
    render(b, formats=["html"])
    new = (b / "report.html").read_text(encoding="utf-8")
    assert new != old and "An edited title 7731" in new


def test_a_hand_edited_report_is_rendered_again(tmp_path):
    b = skin_bundle(tmp_path / "b")
    render(b, formats=["html"])
    good = (b / "report.html").read_bytes()
    (b / "report.html").write_bytes(good.replace(b"</body>", b"<p>forged</p></body>"))
    render(b, formats=["html"])
    assert (b / "report.html").read_bytes() == good


def test_volatile_run_fields_do_not_count_but_shown_ones_do(tmp_path):
    b = skin_bundle(tmp_path / "b")
    run = json.loads((b / "run.json").read_text(encoding="utf-8")) if (b / "run.json").exists() else {}
    (b / "run.json").write_text(json.dumps({**run, "started_at": "2026-01-01T00:00:00Z"}), encoding="utf-8")
    k0 = render_cache.inputs_key(b)
    (b / "run.json").write_text(json.dumps({**run, "started_at": "2026-02-02T00:00:00Z"}), encoding="utf-8")
    (b / "run.log").write_text("another log\n", encoding="utf-8")
    assert render_cache.inputs_key(b) == k0  # a re-run's timestamps and log lines are not report inputs
    (b / "run.json").write_text(json.dumps({**run, "warnings": [{"code": "W0999", "message": "new"}]}),
                                encoding="utf-8")
    assert render_cache.inputs_key(b) != k0  # run warnings are shown
    (b / "tables" / "extra.parquet").write_bytes(b"x")
    k1 = render_cache.inputs_key(b)
    (b / "tables" / "extra.parquet").write_bytes(b"y")
    assert render_cache.inputs_key(b) != k1  # any other bundle file counts, listed or not


def test_a_rerun_copies_the_previous_bundles_reports(tmp_path, monkeypatch):
    """`run` renders into a fresh staging folder: unchanged reports come from the bundle it replaces."""
    old = skin_bundle(tmp_path / "old")
    render(old, formats=["html"])
    new = tmp_path / "new"
    shutil.copytree(old, new, ignore=shutil.ignore_patterns("report.*", "render.json"))
    with monkeypatch.context() as m:
        _no_render(m)
        render(new, formats=["html"], update_manifest=False, previous=old)
    assert (new / "report.html").read_bytes() == (old / "report.html").read_bytes()
    assert os.stat(new / "report.html").st_ino != os.stat(old / "report.html").st_ino  # a copy, not a link
    assert render_cache.current(new, "report.html", render_cache.file_keys(new)["report.html"])
    # the previous bundle's report is not adopted once an input differs
    res = json.loads((new / "results.json").read_text(encoding="utf-8"))
    res["title"] = res["settings"]["title"] = "Changed 5512"
    (new / "results.json").write_text(json.dumps(res), encoding="utf-8")
    (new / "report.html").unlink()
    render(new, formats=["html"], update_manifest=False, previous=old)
    assert "Changed 5512" in (new / "report.html").read_text(encoding="utf-8")


def test_the_pdf_is_kept_and_made_from_the_kept_html(tmp_path, monkeypatch):
    pytest.importorskip("weasyprint")
    b = skin_bundle(tmp_path / "b")
    render(b, formats=["html"])
    html_stamp = _stamp(b / "report.html")
    with monkeypatch.context() as m:
        _no_render(m)  # only the PDF is missing: it is laid out from the HTML on disk
        render(b, formats=["html", "pdf"])
    assert _stamp(b / "report.html") == html_stamp and (b / "report.pdf").read_bytes().startswith(b"%PDF")
    pdf_stamp = _stamp(b / "report.pdf")
    monkeypatch.setattr(render_mod, "write_pdf", lambda *a, **k: (_ for _ in ()).throw(AssertionError("PDF again")))
    render(b, formats=["html", "pdf"])
    assert _stamp(b / "report.pdf") == pdf_stamp
