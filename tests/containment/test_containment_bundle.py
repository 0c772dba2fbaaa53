"""Bundles are data: `report` and `verify` read nothing outside them, parse bounded JSON, and never launder."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from containment_helpers import PLAIN_SPEC, project
from scoreaudit import cli
from scoreaudit.exitcodes import Exit

SECRET = "TOP-SECRET-9f3a"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("made")
    spec = project(d / "p", spec=PLAIN_SPEC, n_real=3)
    assert cli.main(["run", str(spec), "--out", str(d / "bundle"), "--quiet"]) == 0
    return d / "bundle"


@pytest.fixture()
def bundle(made, tmp_path) -> Path:
    b = tmp_path / "b"
    shutil.copytree(made, b)
    (tmp_path / "secret.txt").write_text(f'audit "{SECRET}" {{ version: 1 }}\n')
    return b


def test_the_untouched_bundle_verifies(bundle):
    assert cli.main(["verify", str(bundle)]) == Exit.OK


def test_padding_past_ten_thousand_entries_does_not_hide_a_link_out(bundle, capsys):
    for i in range(10_001):
        (bundle / f"d{i:05d}").mkdir()  # in the root: walked before spec.audit
    (bundle / "spec.audit").unlink()
    os.symlink(bundle.parent / "secret.txt", bundle / "spec.audit")
    assert cli.main(["report", str(bundle)]) == Exit.IO
    assert "spec.audit" in capsys.readouterr().err
    assert SECRET not in (bundle / "report.html").read_text(encoding="utf-8")
    assert cli.main(["verify", str(bundle)]) != Exit.OK
    assert SECRET not in capsys.readouterr().err


def test_a_hardlinked_spec_is_not_embedded(bundle, capsys):
    (bundle / "spec.audit").unlink()
    os.link(bundle.parent / "secret.txt", bundle / "spec.audit")
    assert cli.main(["report", str(bundle)]) == Exit.IO
    assert "spec.audit" in capsys.readouterr().err
    assert SECRET not in (bundle / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("key", ["tables", "table_sha256"])
def test_absolute_table_paths_in_results_are_never_opened(bundle, capsys, key):
    import hashlib

    outside = bundle.parent / "cells.parquet"
    shutil.copy(bundle / "tables" / "cells.parquet", outside)  # identical: opening it would find no difference
    results = json.loads((bundle / "results.json").read_text())
    if key == "tables":
        results["tables"]["cells"] = str(outside)
    else:
        results["table_sha256"] = {str(outside): hashlib.sha256(outside.read_bytes()).hexdigest()}
    (bundle / "results.json").write_text(json.dumps(results))
    assert cli.main(["verify", str(bundle)]) == Exit.MISMATCH
    assert "is not a path inside the bundle" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["results.json", "thumbnails.json", "ir.json", "manifest.json", "run.json"])
def test_deeply_nested_json_is_a_clear_error_not_a_traceback(bundle, capsys, name):
    (bundle / name).write_text("[" * 200_000 + "]" * 200_000)
    rc_verify = cli.main(["verify", str(bundle)])
    err = capsys.readouterr().err
    assert rc_verify in (Exit.MISMATCH, Exit.IO) and "Traceback" not in err and "RecursionError" not in err
    if name != "manifest.json":
        rc = cli.main(["report", str(bundle)])
        err = capsys.readouterr().err
        assert rc in (Exit.OK, Exit.IO) and "RecursionError" not in err
        if name in ("results.json", "thumbnails.json", "ir.json"):
            assert rc == Exit.IO and "nested deeper" in err


def _edit(bundle: Path, what: str) -> None:
    if what == "results_device":
        r = json.loads((bundle / "results.json").read_text())
        r["environment"]["device"] = "cuda:7 (edited)"
        r["tool"]["version"] = "99.0"
        (bundle / "results.json").write_text(json.dumps(r, indent=2))
    elif what == "run_log":
        with (bundle / "run.log").open("a") as fh:
            fh.write("edited line\n")
    elif what == "plan":
        p = json.loads((bundle / "plan.json").read_text())
        p["fingerprint"] = "0" * 64  # still a valid plan: only the manifest can tell
        (bundle / "plan.json").write_text(json.dumps(p))
    elif what == "image_hash":
        t = pd.read_parquet(bundle / "tables" / "images.parquet")
        t.loc[0, "content_hash"] = "0" * len(str(t.loc[0, "content_hash"]))
        t.to_parquet(bundle / "tables" / "images.parquet")
    elif what == "run_json":
        r = json.loads((bundle / "run.json").read_text())
        r["device"] = "tpu (edited)"
        (bundle / "run.json").write_text(json.dumps(r))


@pytest.mark.parametrize("manifest", ["deleted", "fifo"])
@pytest.mark.parametrize("what", ["results_device", "run_log", "plan", "image_hash", "run_json"])
@pytest.mark.timeout(300)
def test_report_never_launders_an_edit(bundle, capsys, what, manifest):
    _edit(bundle, what)
    assert cli.main(["verify", str(bundle)]) == Exit.MISMATCH
    (bundle / "manifest.json").unlink()
    if manifest == "fifo":
        os.mkfifo(bundle / "manifest.json")
    cli.main(["report", str(bundle)])
    capsys.readouterr()
    assert cli.main(["verify", str(bundle)]) == Exit.MISMATCH
    assert "manifest.json" in capsys.readouterr().err


def test_report_on_an_intact_bundle_keeps_it_verifiable(bundle):
    assert cli.main(["report", str(bundle)]) == Exit.OK
    assert cli.main(["verify", str(bundle)]) == Exit.OK


def test_an_interrupted_rerun_leaves_the_old_bundle_whole(made, tmp_path, monkeypatch):
    """Killed after run.json is rewritten, before the manifest: the old bundle still verifies."""
    spec = made.parent / "p" / "m.audit"
    out = tmp_path / "o"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    before = (out / "run.json").read_bytes()
    from scoreaudit.reports import manifest

    def killed(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(manifest, "write_manifest", killed)
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == Exit.INTERRUPTED
    monkeypatch.undo()
    assert (out / "run.json").read_bytes() == before  # the new run.json was written beside, not over it
    assert cli.main(["verify", str(out)]) == Exit.OK
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0  # the leftover is cleared
    assert cli.main(["verify", str(out)]) == Exit.OK
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o"]


def test_a_run_into_a_folder_of_the_users_keeps_its_files(made, tmp_path):
    """Only an earlier bundle is swapped out whole; a folder that is not one is written into, as before."""
    spec = made.parent / "p" / "m.audit"
    mine = tmp_path / "docs"
    mine.mkdir()
    (mine / "thesis.tex").write_text("keep me")
    assert cli.main(["run", str(spec), "--out", str(mine), "--quiet"]) == 0
    assert (mine / "thesis.tex").read_text() == "keep me" and (mine / "results.json").is_file()
