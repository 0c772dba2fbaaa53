"""Writes never pass through a symbolic link planted inside the project (any ancestor, not just the parent)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from containment_helpers import PLAIN_SPEC, project, tree
from scoreaudit import cli
from scoreaudit.exitcodes import Exit


def _run(spec: Path, *extra: str) -> int:
    return cli.main(["run", str(spec), "--quiet", *extra])


@pytest.fixture
def proj(tmp_path):
    spec = project(tmp_path / "p", spec=PLAIN_SPEC, n_real=3)
    (tmp_path / "elsewhere").mkdir()
    return spec, tmp_path / "elsewhere"


@pytest.mark.parametrize("link", [".scoreaudit", ".scoreaudit/cache.sqlite", ".scoreaudit/cache.sqlite-wal",
                                  ".scoreaudit/cache.sqlite-shm"])
def test_a_cache_linked_outside_is_refused_and_nothing_is_written_there(proj, capsys, link):
    spec, outside = proj
    target = outside / "x"
    if link == ".scoreaudit":
        target.mkdir()
    (spec.parent / ".scoreaudit").mkdir(exist_ok=True) if link != ".scoreaudit" else None
    os.symlink(target, spec.parent / link)
    rc = _run(spec)
    err = capsys.readouterr().err
    assert rc == Exit.IO and "symbolic link inside the project" in err and link.split("/")[-1] in err
    assert tree(outside) == (["x"] if link == ".scoreaudit" else [])  # no database, WAL or shm out there


def test_a_default_out_folder_linked_outside_is_refused(proj, capsys):
    spec, outside = proj
    os.symlink(outside, spec.parent / "out")
    assert _run(spec) == Exit.IO
    assert "out" in capsys.readouterr().err and tree(outside) == []


@pytest.mark.parametrize("rel", ["a/link/b/bundle", "link/bundle", "a/b/c/link"])
def test_a_link_anywhere_between_the_project_and_out_is_refused(proj, capsys, rel):
    spec, outside = proj
    parts = rel.split("/")
    i = parts.index("link")
    (spec.parent.joinpath(*parts[:i])).mkdir(parents=True, exist_ok=True)
    os.symlink(outside, spec.parent.joinpath(*parts[:i + 1]))
    from scoreaudit.safeio import planted_link

    assert planted_link(spec.parent / rel, spec.parent) == str(spec.parent.joinpath(*parts[:i + 1]))
    assert _run(spec, "--out", str(spec.parent / rel)) == Exit.IO
    assert "symbolic link inside the project" in capsys.readouterr().err
    assert tree(outside) == []


def test_an_explicit_out_outside_the_project_is_the_users_choice(proj):
    spec, outside = proj
    os.symlink(outside, spec.parent.parent / "mine")  # the user's own link, outside the project
    assert _run(spec, "--out", str(spec.parent.parent / "mine" / "bundle")) == Exit.OK
    assert (outside / "bundle" / "results.json").is_file()


def test_a_lock_linked_outside_is_never_read(proj, tmp_path):
    spec, outside = proj
    assert cli.main(["lock", str(spec)]) == 0
    lock = spec.with_name(spec.name + ".lock")
    lock.rename(outside / "real.lock")  # a valid lock of this very spec, but outside the project
    os.symlink(outside / "real.lock", lock)
    assert _run(spec, "--out", str(tmp_path / "o")) == Exit.OK
    status = json.loads((tmp_path / "o" / "lock.json").read_text())
    assert status["status"] == "not pre-registered" and "unreadable" in status["detail"]


def test_a_dotdot_after_a_planted_link_does_not_escape(proj, tmp_path, capsys):
    """`p/link/../x` is `outside/../x` to the system (the link is followed first), not `p/x`."""
    spec, outside = proj
    os.symlink(outside / "deep", spec.parent / "link")
    (outside / "deep").mkdir()
    assert _run(spec, "--out", str(spec.parent / "link" / ".." / "escaped")) == Exit.IO
    assert "symbolic link inside the project" in capsys.readouterr().err
    assert not (outside / "escaped").exists() and not (spec.parent / "escaped").exists()
