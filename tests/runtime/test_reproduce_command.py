"""Provenance a reader can act on (issue 28): run.json and results.json record the command that reproduces the
bundle and, run from a git checkout, the tool's commit; Appendix D shows both, HTML-escaped.

The command is checked by running it: from the spec's folder, the recorded words give the same cells again.
The commit is checked against `git rev-parse HEAD` of this checkout (an independent reader of .git).
"""

from __future__ import annotations

import html as htmllib
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scoreaudit import api, cli
from scoreaudit.runtime.reproduce import git_provenance, run_command, source_checkout

SPEC = '''audit "Reproduce me" { version: 1 seed: 3 scale: raw bootstrap: 100 }
scorer sharp = sharpness()
arm real = images("data/real", manifest: "data/real.csv", kind: real, cluster: group)
region skin = skin()
operator light = lab_shift(channel: L, region: skin) doses -10, 0, 10
hypothesis H1 "Brightness leaves sharpness alone" {
  fidelity_index(light) > 0 on real for each scorer
}
report {
  formats: html
}
'''


def _project(folder: Path, n: int = 8) -> Path:
    """A spec and n planted 24 px images with a skin-coloured patch (two per group)."""
    rng = np.random.default_rng(0)
    imgs = folder / "data" / "real"
    imgs.mkdir(parents=True)
    rows = ["id,path,group"]
    for k in range(n):
        arr = rng.integers(20, 235, (24, 24, 3)).astype(np.uint8)
        arr[6:18, 6:18] = np.array([200 - 10 * k, 150 - 7 * k, 120 - 5 * k], dtype=np.uint8)
        Image.fromarray(arr).save(imgs / f"img_{k:03d}.png")
        rows.append(f"img_{k:03d},img_{k:03d}.png,g{k // 2}")
    (folder / "data" / "real.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = folder / "a.audit"
    spec.write_text(SPEC, encoding="utf-8")
    return spec


def _cells(bundle: Path) -> list[dict]:
    return json.loads((bundle / "results.json").read_text(encoding="utf-8"))["cells"]


def _appendix(bundle: Path) -> str:
    m = re.search(r'<section id="appendix".*?</section>', (bundle / "report.html").read_text(encoding="utf-8"), re.S)
    assert m
    return m.group(0)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """One run through the CLI with absolute paths from another folder, non-default result options."""
    base = tmp_path_factory.mktemp("repro")
    spec = _project(base / "proj")
    elsewhere = base / "elsewhere"
    elsewhere.mkdir()
    mp = pytest.MonkeyPatch()
    mp.chdir(elsewhere)
    try:
        rc = cli.main(["run", str(spec), "--out", str(spec.parent / "out" / "a"), "--device", "cpu",
                       "--tensor-path", "off", "-q"])
    finally:
        mp.undo()
    assert rc == 0
    return spec, spec.parent / "out" / "a"


def test_run_json_records_the_command_with_the_result_options_and_no_local_folders(ran):
    spec, bundle = ran
    run = json.loads((bundle / "run.json").read_text(encoding="utf-8"))
    assert run["command"] == "scoreaudit run a.audit --out out/a --device cpu --tensor-path off"
    assert str(spec.parent) not in run["command"] and str(Path.home()) not in run["command"]
    results = json.loads((bundle / "results.json").read_text(encoding="utf-8"))
    assert results["environment"]["command"] == run["command"]
    assert results["environment"]["git"] == run["git"]


def test_the_recorded_command_reproduces_the_same_cells(ran, monkeypatch):
    spec, bundle = ran
    before = _cells(bundle)
    assert before and all(c.get("estimate") is not None for c in before)  # something real to reproduce
    words = shlex.split(json.loads((bundle / "run.json").read_text(encoding="utf-8"))["command"])
    assert words[:2] == ["scoreaudit", "run"]
    shutil.rmtree(spec.parent / ".scoreaudit", ignore_errors=True)  # recomputed, not read back from the cache
    monkeypatch.chdir(spec.parent)  # the command runs from the spec's folder
    assert cli.main(words[1:]) == 0
    assert _cells(bundle) == before
    assert json.loads((bundle / "run.json").read_text(encoding="utf-8"))["command"] == shlex.join(words)


def test_out_outside_the_project_and_options_that_change_results(tmp_path):
    spec = tmp_path / "proj" / "a b.audit"
    assert run_command(spec, tmp_path / "elsewhere" / "x", allow_outside=True, executor="ray") == \
        "scoreaudit run 'a b.audit' --out OUT --executor ray --allow-outside"
    # a re-run writes into a staging folder `.a.next` that is swapped in: the command names the bundle's place
    assert run_command(spec, tmp_path / "proj" / "out" / ".a.next", device="cuda", tensor_path="on") == \
        "scoreaudit run 'a b.audit' --out out/a --device cuda --tensor-path on"
    assert run_command(spec, tmp_path / "proj" / "res") == "scoreaudit run 'a b.audit' --out res"


def test_the_commit_is_this_checkouts_head(ran):
    root = source_checkout()
    git = shutil.which("git")
    if root is None or git is None:
        pytest.skip("scoreaudit is not imported from a git checkout here")
    head = subprocess.run([git, "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                          timeout=10, check=True).stdout.strip()
    recorded = json.loads((ran[1] / "run.json").read_text(encoding="utf-8"))["git"]
    assert re.fullmatch(r"[0-9a-f]{40}", recorded["commit"])
    assert recorded["commit"] == head == git_provenance()["commit"]
    assert isinstance(recorded["dirty"], bool)


def test_a_wheel_install_records_no_commit(monkeypatch):
    import scoreaudit.runtime.reproduce as rep

    monkeypatch.setattr(rep, "source_checkout", lambda: None)
    assert rep.git_provenance() is None


def test_head_commit_reads_loose_packed_and_detached_refs(tmp_path):
    from scoreaudit.runtime.reproduce import head_commit

    a, b = "a" * 40, "0123456789abcdef" * 2 + "01234567"
    g = tmp_path / ".git"
    (g / "refs" / "heads").mkdir(parents=True)
    (g / "HEAD").write_text("ref: refs/heads/main\n")
    assert head_commit(g) is None  # an unborn branch: nothing recorded, nothing guessed
    (g / "packed-refs").write_text(f"# pack-refs with: peeled\n{b} refs/heads/main\n")
    assert head_commit(g) == b
    (g / "refs" / "heads" / "main").write_text(a + "\n")
    assert head_commit(g) == a  # a loose ref is newer than the packed one
    (g / "HEAD").write_text(b + "\n")
    assert head_commit(g) == b


def test_appendix_shows_the_recorded_command_and_commit(ran):
    _, bundle = ran
    env = json.loads((bundle / "results.json").read_text(encoding="utf-8"))["environment"]
    appendix = htmllib.unescape(_appendix(bundle))
    assert env["command"] in appendix
    assert "scoreaudit verify out/a" in appendix
    if env.get("git"):
        assert env["git"]["commit"] in appendix and "not recorded by this run" not in appendix


def test_appendix_escapes_a_recorded_command(ran, tmp_path):
    _, bundle = ran
    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    results = json.loads((copy / "results.json").read_text(encoding="utf-8"))
    results["environment"]["command"] = "scoreaudit run '<b>x&y</b>.audit' --out OUT"
    results["environment"]["git"] = {"commit": "f" * 40, "dirty": True}
    (copy / "results.json").write_text(json.dumps(results), encoding="utf-8")
    api.render(copy, formats=["html"])
    raw = _appendix(copy)
    assert "<b>x" not in raw and "&lt;b&gt;x&amp;y&lt;/b&gt;.audit" in raw
    assert "f" * 40 + " (with uncommitted changes)" in htmllib.unescape(raw)
