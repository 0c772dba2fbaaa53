"""Command-line conventions (issue 30): a closed pipe ends quietly, verify speaks JSON, describe lists every kind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from scoreaudit import cli
from scoreaudit.exitcodes import Exit

ROOT = Path(__file__).resolve().parents[2]


def test_piping_into_head_ends_quietly():
    """`scoreaudit plan FILE | head -1`: the reader goes away; nothing is printed on stderr."""
    cmd = [sys.executable, "-c", "import sys; from scoreaudit.cli import main; sys.exit(main())",
           "plan", str(ROOT / "examples" / "skin_tone.audit")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "HF_HUB_OFFLINE": "1"})
    first = proc.stdout.readline()
    proc.stdout.close()  # as `head -1` does
    err = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert first.startswith(b"execution plan")
    assert "broken pipe" not in err.lower() and "Traceback" not in err, err


def _bundle(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    rng = np.random.default_rng(2)
    pd.DataFrame({"id": [f"i{k}" for k in range(20)], "s": rng.normal(size=20), "r": rng.normal(size=20)}).to_csv(
        tmp_path / "data" / "m.csv", index=False)
    (tmp_path / "a.audit").write_text(
        'audit "t" { version: 1 bootstrap: 200 }\nscorer s = precomputed(column: s)\n'
        'arm a = images("data/img", manifest: "data/m.csv")\n'
        'hypothesis A "r" {\n  spearman(column: r) within [-1, 1] on a for s\n}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "a.audit", "--out", "out", "--device", "cpu", "--quiet"]) == Exit.OK
    return tmp_path / "out"


def test_verify_format_json_says_ok_and_names_each_mismatch(tmp_path, capsys, monkeypatch):
    out = _bundle(tmp_path, monkeypatch)
    capsys.readouterr()
    assert cli.main(["verify", str(out), "--format", "json"]) == Exit.OK
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["status"] == "ok" and doc["mismatches"] == []
    log = out / "run.log"
    log.write_text(log.read_text() + "# edited\n")
    assert cli.main(["verify", str(out), "--format", "json"]) == Exit.MISMATCH
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["status"] == "mismatch"
    assert any("run.log" in m for m in doc["mismatches"]), doc


def test_describe_list_names_every_kind(capsys):
    assert cli.main(["describe", "--list"]) == Exit.OK
    text = capsys.readouterr().out
    for kind, name in (("probes", "reno"), ("probe_measures", "skin_exposure"), ("arms", "pairs"),
                       ("statistics", "fidelity_index"), ("settings", "alpha")):
        assert f"{kind}:" in text and name in text, kind
    assert cli.main(["describe", "--list", "probes"]) == Exit.OK
    assert capsys.readouterr().out.split() == ["probes:", "reno"]
