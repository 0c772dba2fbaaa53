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


# ---------------------------------------------------------------- hand-edited JSON: one line, never a traceback

_WRONG = [None, 5, "x", [], {}, [1, "a"], {"a": None}, -1.5, True]


def _edit(bundle: Path, name: str, path: tuple, value) -> None:
    p = bundle / name
    data = json.loads(p.read_text())
    if not path:
        data = value
    else:
        x = data
        for k in path[:-1]:
            x = x[k]
        x[path[-1]] = value
    p.write_text(json.dumps(data))


def _paths(x, pre=()):
    yield pre
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _paths(v, pre + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x[:3]):
            yield from _paths(v, pre + (i,))


def _report_and_verify(b: Path, capsys) -> list[tuple[str, int, str]]:
    out = []
    for cmd in ("report", "verify"):
        capsys.readouterr()
        rc = cli.main([cmd, str(b)])  # an exception here is the traceback a user would see
        out.append((cmd, rc, capsys.readouterr().err))
    return out


def test_a_misshapen_results_json_is_one_line_naming_the_key(copy, capsys):
    _edit(copy, "results.json", ("cells",), {"a": None})
    (rep, rc, err), (ver, vrc, verr) = _report_and_verify(copy, capsys)
    assert rc == Exit.IO and "results.json: 'cells' is an object" in err and "run the audit again" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert vrc == Exit.MISMATCH and "results.json: 'cells' is an object: not what `scoreaudit run` writes" in verr


def test_unknown_report_format_is_a_usage_error(bundle, capsys):
    assert cli.main(["report", str(bundle), "--formats", "html,docx"]) == Exit.USAGE
    assert "unknown report format(s) docx" in capsys.readouterr().err


@pytest.mark.slow  # 45 s over its five files, measured
@pytest.mark.parametrize("name", ["results.json", "ir.json", "manifest.json", "lock.json", "run.json"])
def test_type_confused_bundle_json_never_gives_a_traceback(bundle, tmp_path, capsys, name):
    """Every top-level key of each file, and 40 random deeper values, replaced by values of other JSON types."""
    import random

    rng = random.Random(name)
    data = json.loads((bundle / name).read_text())
    cases = [((), "[]"), ((), {})] + [((k,), rng.choice(_WRONG)) for k in data]
    deep = [p for p in _paths(data) if len(p) >= 2]
    cases += [(rng.choice(deep), rng.choice(_WRONG)) for _ in range(40 if deep else 0)]
    for path, value in cases:
        b = tmp_path / "b"
        shutil.rmtree(b, ignore_errors=True)
        shutil.copytree(bundle, b)
        if value == "[]":
            (b / name).write_text("[]")
        else:
            _edit(b, name, path, value)
        for cmd, rc, err in _report_and_verify(b, capsys):
            assert rc in (Exit.OK, Exit.MISMATCH, Exit.IO), (name, path, value, cmd, rc, err)
            assert "Traceback" not in err
