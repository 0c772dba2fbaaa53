"""Files: nothing outside the project folder is read, only regular files are opened, outputs never follow links."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from hardening_helpers import MASK_SPEC, project, set_mask
from scoreaudit import cli
from scoreaudit.exitcodes import Exit
from scoreaudit.safeio import UnsafePath, file_problem, inside, read_regular, write_atomic


@pytest.mark.parametrize("value", ["../../../outside.png", "/etc/passwd", "../../../../../../etc/hostname"])
def test_mask_paths_leaving_the_project_are_refused_before_any_work(tmp_path, capsys, value):
    spec = project(tmp_path / "p")
    (tmp_path / "outside.png").write_bytes((tmp_path / "p/data/real/masks/astro_000.png").read_bytes())
    set_mask(tmp_path / "p", 1, value)
    rc = cli.main(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == Exit.SPEC and "E0707" in err and "face_mask" in err
    assert not (tmp_path / "out" / "results.json").exists()


def test_mask_path_outside_is_allowed_with_the_flag(tmp_path):
    spec = project(tmp_path / "p")
    (tmp_path / "outside.png").write_bytes((tmp_path / "p/data/real/masks/astro_001.png").read_bytes())
    set_mask(tmp_path / "p", 1, "../../../outside.png")
    rc = cli.main(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--allow-outside"])
    assert rc == 0
    excl = json.loads((tmp_path / "out" / "results.json").read_text())["exclusions"]
    assert not [e for e in excl if e["image_id"] == "astro_001"]


def test_a_symlinked_mask_pointing_outside_is_refused(tmp_path, capsys):
    spec = project(tmp_path / "p")
    (tmp_path / "secret.png").write_bytes(b"x")
    os.symlink(tmp_path / "secret.png", tmp_path / "p/data/real/masks/link.png")
    set_mask(tmp_path / "p", 0, "masks/link.png")
    rc = cli.main(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert rc == Exit.SPEC and "E0707" in capsys.readouterr().err


@pytest.mark.timeout(180)
def test_a_fifo_mask_is_an_exclusion_not_a_hang(tmp_path):
    spec = project(tmp_path / "p")
    os.mkfifo(tmp_path / "p/data/real/masks/pipe.png")
    set_mask(tmp_path / "p", 2, "masks/pipe.png")
    rc = cli.main(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert rc == 0
    excl = json.loads((tmp_path / "out" / "results.json").read_text())["exclusions"]
    mine = [e for e in excl if e["image_id"] == "astro_002"]
    assert mine and "FIFO" in mine[0]["reason"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["fifo", "dir", "dev"])
def test_images_and_manifests_that_are_not_regular_files_are_refused(tmp_path, capsys, kind):
    d = tmp_path / "p"
    spec = project(d)
    target = d / "data/real/astro_003.png"
    target.unlink()
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dir":
        target.mkdir()
    else:
        os.symlink("/dev/zero", target)  # a device (and outside the project)
    rc = cli.main(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"])
    assert rc == 0
    excl = json.loads((tmp_path / "out" / "results.json").read_text())["exclusions"]
    reason = [e for e in excl if e["image_id"] == "astro_003"][0]["reason"]
    assert {"fifo": "FIFO", "dir": "directory", "dev": "leaves the project"}[kind] in reason
    # a manifest that is a FIFO: one message, no hang
    (d / "data/real.csv").unlink()
    os.mkfifo(d / "data/real.csv")
    rc = cli.main(["run", str(spec), "--out", str(tmp_path / "out2"), "--quiet"])
    assert rc == Exit.SPEC and "FIFO" in capsys.readouterr().err


def test_safeio_primitives(tmp_path):
    (tmp_path / "a").write_bytes(b"abc")
    os.mkfifo(tmp_path / "f")
    assert read_regular(tmp_path / "a") == b"abc" and file_problem(tmp_path / "a") is None
    with pytest.raises(UnsafePath):
        read_regular(tmp_path / "f")  # opened non-blocking: refused, never waits for a writer
    assert "FIFO" in file_problem(tmp_path / "f") and "directory" in file_problem(tmp_path)
    assert inside(tmp_path / "a", tmp_path) and not inside(tmp_path / ".." / "x", tmp_path)
    # an atomic write replaces a planted link instead of writing through it
    (tmp_path / "victim").write_text("keep")
    os.symlink(tmp_path / "victim", tmp_path / "out.txt")
    write_atomic(tmp_path / "out.txt", "new")
    assert (tmp_path / "victim").read_text() == "keep" and not (tmp_path / "out.txt").is_symlink()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


CORRELATE_SPEC = '''audit "c" { version: 1 seed: 1 bootstrap: 100 }
scorer sharp = sharpness()
arm syn = images("data/synthetic", manifest: "data/synthetic.csv", kind: synthetic, cluster: prompt_id, factors: [tone])
hypothesis C "c" { correlate(group_gap(tone, light, dark), by: tone, table: "TABLE", column: v) > 0 on syn for each scorer }
'''


@pytest.mark.parametrize("table", ["../t.csv", "/etc/passwd"])
def test_correlate_table_outside_is_refused(tmp_path, capsys, table):
    d = tmp_path / "p"
    project(d)
    (tmp_path / "t.csv").write_text("tone,v\nlight,1\n")
    (d / "c.audit").write_text(CORRELATE_SPEC.replace("TABLE", table))
    rc = cli.main(["run", str(d / "c.audit"), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == Exit.SPEC and "E0707" in err, err


def _correlate_bundle(tmp_path):
    """A project with a correlate table, run into tmp_path/out: (project folder, bundle folder)."""
    d = tmp_path / "p"
    project(d)
    (d / "t.csv").write_text("tone,v\nlight,1\nmedium,2\ndark,3\n")
    (d / "c.audit").write_text(CORRELATE_SPEC.replace("TABLE", "t.csv"))
    out = tmp_path / "out"
    assert cli.main(["run", str(d / "c.audit"), "--out", str(out), "--quiet"]) == 0
    return d, out


def test_correlate_reads_only_the_bundles_copy(tmp_path, capsys):
    d, out = _correlate_bundle(tmp_path)
    copies = list((out / "inputs").iterdir())
    assert len(copies) == 1 and copies[0].read_bytes() == (d / "t.csv").read_bytes()
    # the bundle moves elsewhere and the project is gone: verify still recomputes from the copy
    moved = tmp_path / "moved"
    shutil.copytree(out, moved)
    shutil.rmtree(d)
    assert cli.main(["verify", str(moved)]) == 0


def test_a_crafted_bundle_cannot_read_outside_itself(tmp_path, capsys):
    d, out = _correlate_bundle(tmp_path)
    ir = json.loads((out / "ir.json").read_text())
    ir["source_path"] = "/etc/passwd"
    (out / "ir.json").write_text(json.dumps(ir))
    secret = tmp_path / "secret.json"
    secret.write_text('{"cells": []}')
    (out / "results.json").unlink()
    os.symlink(secret, out / "results.json")
    capsys.readouterr()
    assert cli.main(["verify", str(out)]) == Exit.MISMATCH or cli.main(["verify", str(out)]) != 0
    err = capsys.readouterr().err
    assert "outside" in err
    assert cli.main(["report", str(out)]) == Exit.IO
    assert "outside" in capsys.readouterr().err


def test_output_folder_problems_are_one_line_and_exit_code_6(tmp_path, capsys):
    spec = project(tmp_path / "p")
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert cli.main(["run", str(spec), "--out", str(a_file), "--quiet"]) == Exit.IO
    assert "not a folder" in capsys.readouterr().err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, tmp_path / "linked")
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "linked"), "--quiet"]) == Exit.IO
    assert "symbolic link" in capsys.readouterr().err and not list(elsewhere.iterdir())
    out = tmp_path / "out"
    out.mkdir()
    victim = tmp_path / "victim.json"
    victim.write_text("keep")
    os.symlink(victim, out / "results.json")
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == Exit.IO
    assert "symbolic link" in capsys.readouterr().err and victim.read_text() == "keep"
    # deeper: a link planted in a subfolder a run writes into (generated images, copied inputs)
    (out / "results.json").unlink()
    (out / "generated" / "real").mkdir(parents=True)
    os.symlink(victim, out / "generated" / "real" / "img_0.png.tmp")
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == Exit.IO
    err = capsys.readouterr().err
    assert "img_0.png.tmp in the output folder is a symbolic link" in err and victim.read_text() == "keep"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores permissions")
def test_read_only_output_folder_and_cache(tmp_path, capsys):
    spec = project(tmp_path / "p")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert cli.main(["run", str(spec), "--out", str(ro / "out"), "--quiet"]) == Exit.IO
        err = capsys.readouterr().err
        assert "Traceback" not in err and "ermission" in err and len(err.strip().splitlines()) == 1
        assert cli.main(["run", str(spec), "--out", str(tmp_path / "o"), "--cache", str(ro / "c.sqlite"),
                         "--quiet"]) == Exit.IO
        err = capsys.readouterr().err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    finally:
        ro.chmod(0o755)


@pytest.mark.parametrize("where", ["out", "cache"])
def test_unwritable_places_are_one_line_and_exit_code_6(tmp_path, capsys, where):
    """/proc refuses new files even for root: the same path as a read-only folder."""
    spec = project(tmp_path / "p")
    args = ["run", str(spec), "--quiet", "--out", str(tmp_path / "o")]
    args += ["--out", "/proc/version/out"] if where == "out" else ["--cache", "/proc/scoreaudit-cache.sqlite"]
    assert cli.main(args) == Exit.IO
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err
