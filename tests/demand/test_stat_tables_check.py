"""check refuses the correlate tables the run refuses (issue 26): outside the project (E0707) or not a file (E0730)."""

from __future__ import annotations

import os

import pytest

from scoreaudit import cli
from scoreaudit.exitcodes import Exit

SPEC = '''audit "c" { version: 1 seed: 1 bootstrap: 100 }
scorer sharp = sharpness()
arm syn = images("data/synthetic", manifest: "data/synthetic.csv", kind: synthetic, cluster: prompt_id, factors: [tone])
hypothesis C "c" { correlate(group_gap(tone, light, dark), by: tone, table: "TABLE", column: v) > 0 on syn for each scorer }
'''


def _verdict(capsys, argv):
    capsys.readouterr()
    rc = cli.main(argv)
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("case", ["outside", "folder", "fifo"])
def test_check_and_run_refuse_the_same_table(tmp_path, capsys, monkeypatch, case):
    d = tmp_path / "p"
    d.mkdir()
    table = {"outside": "../t.csv", "folder": "t_dir", "fifo": "t.fifo"}[case]
    (tmp_path / "t.csv").write_text("tone,v\nlight,1\n")
    if case == "folder":
        (d / "t_dir").mkdir()
    if case == "fifo":
        os.mkfifo(d / "t.fifo")
    (d / "c.audit").write_text(SPEC.replace("TABLE", table))
    monkeypatch.chdir(d)
    code = "E0707" if case == "outside" else "E0730"
    rc, err = _verdict(capsys, ["check", "c.audit"])
    assert rc == Exit.SPEC and f"c.audit:4:12: error[{code}]" in err, err
    rc, err = _verdict(capsys, ["run", "c.audit", "--out", "out", "--quiet"])
    # the run refuses for the same reason at the same place (E0730 keeps a data path's exit code, 6)
    assert rc == (Exit.SPEC if code == "E0707" else Exit.IO) and f"c.audit:4:12: error[{code}]" in err, err
    assert not (d / "out").exists()
