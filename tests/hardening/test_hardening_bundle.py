"""Bundle integrity: manifest.json names every changed, deleted or added file; an unchecked PDF is never a pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hardening_helpers import project
from scoreaudit import cli
from scoreaudit.exitcodes import Exit
from scoreaudit.reports.manifest import write_manifest
from scoreaudit.reports.verify import verify, verify_bundle


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bundle")
    spec = project(d / "p")
    out = d / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    return out


@pytest.fixture()
def copy(bundle, tmp_path) -> Path:
    c = tmp_path / "b"
    shutil.copytree(bundle, c)
    return c


def test_the_run_writes_a_manifest_of_every_file_and_verify_passes(bundle):
    files = json.loads((bundle / "manifest.json").read_text())["files"]
    for name in ("results.json", "run.json", "run.log", "ir.json", "plan.json", "spec.audit", "lock.json",
                 "report.html", "tables/scores.parquet", "tables/regions.parquet", "tables/exclusions.parquet"):
        assert name in files, name
    assert verify(bundle) == []


def test_an_edited_environment_block_is_named(copy):
    r = json.loads((copy / "results.json").read_text())
    r["environment"]["python"] = "0.0.1"
    (copy / "results.json").write_text(json.dumps(r, indent=2))
    out = verify(copy)
    assert any(m.startswith("results.json: changed since the run") for m in out), out


def test_a_changed_table_no_statistic_reads_is_named(copy):
    import pandas as pd

    df = pd.read_parquet(copy / "tables/regions.parquet")
    df.to_parquet(copy / "tables/regions.parquet", index=False)  # same rows, other bytes
    (copy / "run.log").write_text((copy / "run.log").read_text() + "# edited\n")
    out = verify(copy)
    assert any(m.startswith("tables/regions.parquet: changed") for m in out), out
    assert any(m.startswith("run.log: changed") for m in out), out


def test_deleted_report_and_added_file_are_named(copy):
    (copy / "report.html").unlink()
    (copy / "extra.txt").write_text("x")
    out = verify(copy)
    assert "report.html: listed in manifest.json but missing from the bundle" in out
    assert "extra.txt: not in manifest.json (added after the run)" in out


def test_report_rerender_does_not_launder_an_edit(copy, capsys):
    r = json.loads((copy / "results.json").read_text())
    r["tool"]["version"] = "9.9.9"
    (copy / "results.json").write_text(json.dumps(r, indent=2))
    assert cli.main(["report", str(copy)]) == 0
    assert any(m.startswith("results.json: changed") for m in verify(copy))


def test_a_missing_pdftotext_is_not_a_silent_pass(copy, monkeypatch, capsys):
    import scoreaudit.reports.verify as v

    (copy / "report.pdf").write_bytes(b"%PDF-1.4 not really")
    write_manifest(copy, only=["report.pdf"])
    monkeypatch.setattr(shutil, "which", lambda name: None)
    mismatches, unchecked = verify_bundle(copy)
    assert mismatches == [] and unchecked and "pdftotext" in unchecked[0]
    capsys.readouterr()
    assert cli.main(["verify", str(copy)]) == Exit.ENVIRONMENT
    err = capsys.readouterr().err
    assert "not checked: report.pdf" in err
