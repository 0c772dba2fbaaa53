"""Reads: nothing outside the project is opened, listed or loaded, and containment holds for the file opened."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from containment_helpers import PLAIN_SPEC, project
from scoreaudit import api, cli
from scoreaudit.exitcodes import Exit


def _arm_spec(arm: str) -> str:
    return PLAIN_SPEC.replace('arm real = images("data/real", manifest: "data/real.csv", kind: real)', arm)


def test_a_swapped_in_link_after_the_manifest_check_is_not_read(tmp_path):
    """The race of the issue (30 of 60 images read): the check passes, then the files become links out."""
    from scoreaudit.compiler.ir import AuditIR  # noqa: F401
    from scoreaudit.runtime.images import decode_record
    from scoreaudit.runtime.manifests import load_manifest

    spec = project(tmp_path / "p", spec=PLAIN_SPEC, n_real=3)
    ir, _ = api.compile(spec)
    arm = ir.arms["real"]
    result = load_manifest(arm, spec.parent, root=spec.parent)
    assert len(result.records) == 3
    secret = tmp_path / "secret.png"
    shutil.copy(result.records[0].path, secret)  # a readable image, so only containment can refuse it
    for rec in result.records:  # after the check, before the decode
        os.unlink(rec.path)
        os.symlink(secret, rec.path)
    for rec in result.records:
        d = decode_record(rec, result.max_pixels)
        assert getattr(d, "stage", None) == "decode" and "leaves the project" in d.reason


def test_a_swapped_in_link_inside_the_project_is_still_read(tmp_path):
    from scoreaudit.runtime.images import decode_record
    from scoreaudit.runtime.manifests import load_manifest

    spec = project(tmp_path / "p", spec=PLAIN_SPEC, n_real=2)
    ir, _ = api.compile(spec)
    result = load_manifest(ir.arms["real"], spec.parent, root=spec.parent)
    rec = result.records[0]
    inner = spec.parent / "copy.png"
    shutil.copy(rec.path, inner)
    os.unlink(rec.path)
    os.symlink(inner, rec.path)
    assert decode_record(rec, result.max_pixels).image.shape[2] == 3


@pytest.mark.parametrize("target", ["csv", "/proc/self/environ"])
def test_plan_never_opens_an_outside_manifest_to_count_it(tmp_path, target):
    spec = project(tmp_path / "p", spec=PLAIN_SPEC, n_real=3)
    outside = tmp_path / "outside.csv"
    if target == "csv":
        outside.write_text("id,path\n" + "".join(f"x{i},x{i}.png\n" for i in range(7)))
    else:
        os.symlink("/proc/self/environ", outside)
    os.symlink(outside, spec.parent / "data" / "linked.csv")
    spec.write_text(PLAIN_SPEC.replace('manifest: "data/real.csv"', 'manifest: "data/linked.csv"'))
    from scoreaudit.compiler.plan import count_images

    ir = api.check(spec, tables=False).ir
    assert count_images(ir.arms["real"], spec.parent) is None  # unknown, never 7 (nor the environment's lines)


def test_plan_never_lists_an_outside_folder(tmp_path):
    spec = project(tmp_path / "p", spec=PLAIN_SPEC, n_real=3)
    (tmp_path / "pics").mkdir()
    for i in range(5):
        (tmp_path / "pics" / f"{i}.png").write_bytes(b"")
    os.symlink(tmp_path / "pics", spec.parent / "data" / "pics")
    spec.write_text(_arm_spec('arm real = images("data/pics", kind: real)'))
    from scoreaudit.compiler.plan import count_images

    ir = api.check(spec, tables=False).ir
    assert count_images(ir.arms["real"], spec.parent) is None


@pytest.mark.parametrize("arm", ['arm real = images("../pics", kind: real)',
                                 'arm real = images("data/pics", kind: real)',
                                 'arm real = images("data/real", manifest: "../m.csv", kind: real)'])
def test_check_refuses_what_run_refuses(tmp_path, capsys, arm):
    """Issue 26: check exited 0 where run then refused an outside image folder with E0707."""
    spec = project(tmp_path / "p", spec=PLAIN_SPEC, n_real=3)
    (tmp_path / "pics").mkdir()
    shutil.copy(spec.parent / "data/real.csv", tmp_path / "m.csv")
    os.symlink(tmp_path / "pics", spec.parent / "data" / "pics")
    spec.write_text(_arm_spec(arm))
    assert cli.main(["check", str(spec)]) == Exit.SPEC
    err = capsys.readouterr().err
    assert "E0707" in err and "m.audit:3:" in err  # located at the arm
    assert cli.main(["run", str(spec), "--quiet", "--out", str(tmp_path / "o")]) == Exit.SPEC
    assert "E0707" in capsys.readouterr().err
    assert cli.main(["check", str(spec), "--allow-outside"]) == 0


MODEL_SPEC = '''audit "w" { version: 1 seed: 1 bootstrap: 100 }
scorer aes = laion_aesthetic(weights: "WEIGHTS")
arm real = images("data/real", manifest: "data/real.csv", kind: real)
operator blur = gaussian_blur() doses 0, 1, 2
hypothesis H1 "h" { curve(blur) < 0 on real for each scorer }
'''


@pytest.mark.parametrize("where", ["relative", "absolute", "symlinked"])
def test_scorer_weights_outside_the_model_roots_are_e0707_at_check_weights_and_run(tmp_path, capsys,
                                                                                   monkeypatch, where):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("SCOREAUDIT_MODELS", raising=False)
    spec = project(tmp_path / "p", spec=PLAIN_SPEC, n_real=3)
    w = tmp_path / "models" / "head.pth"
    w.parent.mkdir()
    w.write_bytes(b"not a checkpoint")
    value = {"relative": "../models/head.pth", "absolute": str(w), "symlinked": "head.pth"}[where]
    if where == "symlinked":
        os.symlink(w, spec.parent / "head.pth")
    spec.write_text(MODEL_SPEC.replace("WEIGHTS", value))
    assert cli.main(["check", str(spec)]) == Exit.SPEC
    err = capsys.readouterr().err
    assert "E0707" in err and "weights" in err and "m.audit:2:" in err
    assert cli.main(["weights", str(spec)]) == Exit.SPEC and "E0707" in capsys.readouterr().err
    assert cli.main(["run", str(spec), "--quiet", "--out", str(tmp_path / "o")]) == Exit.SPEC
    assert "E0707" in capsys.readouterr().err
    # the user names the folder once: then the same spec is accepted (the checkpoint itself is then judged)
    monkeypatch.setenv("SCOREAUDIT_MODELS", str(tmp_path / "models"))
    checked = api.check(spec)
    assert not [d for d in checked.diagnostics if d.code == "E0707"]


@pytest.mark.parametrize("pipeline", ["../pipe", "ABS", "linked"])
def test_a_pipeline_folder_outside_is_e0707(tmp_path, capsys, monkeypatch, pipeline):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.delenv("SCOREAUDIT_MODELS", raising=False)
    d = tmp_path / "p"
    d.mkdir()
    (tmp_path / "pipe").mkdir()
    (tmp_path / "pipe" / "model_index.json").write_text("{}")
    if pipeline == "linked":
        os.symlink(tmp_path / "pipe", d / "linked")
    value = str(tmp_path / "pipe") if pipeline == "ABS" else pipeline
    example = (Path(__file__).resolve().parents[2] / "examples" / "generated.audit").read_text()
    import re

    src = re.sub(r'pipeline: "[^"]*"', f'pipeline: "{value}"', example, count=1)
    (d / "g.audit").write_text(src)
    for f in ("prompts",):
        ex = Path(__file__).resolve().parents[2] / "examples" / f
        if ex.exists():
            shutil.copytree(ex, d / f)
    checked = api.check(d / "g.audit")
    codes = [x.code for x in checked.diagnostics if x.is_error]
    assert "E0707" in codes, [str(x.message) for x in checked.diagnostics]


@pytest.mark.parametrize("suffix", ["csv", "json"])
def test_a_manifest_swapped_for_a_link_after_the_containment_check_is_not_read(tmp_path, monkeypatch, suffix):
    """The manifest is opened contained on its descriptor: swapped between `inside` and the read, it is refused."""
    import json as _json

    from scoreaudit.runtime import manifests

    spec = project(tmp_path / "p", spec=PLAIN_SPEC, n_real=3)
    man = spec.parent / "data" / f"real.{suffix}"
    if suffix == "json":
        import csv as _csv

        rows = list(_csv.DictReader((spec.parent / "data/real.csv").open()))
        man.write_text(_json.dumps(rows))
        spec.write_text(PLAIN_SPEC.replace("data/real.csv", "data/real.json"))
    secret = tmp_path / f"secret.{suffix}"
    shutil.copy(man, secret)  # a valid manifest: only containment can refuse it
    ir, _ = api.compile(spec)
    real_inside = manifests._inside

    def swap_after_check(path, root):  # the check passes, then the file becomes a link out
        ok = real_inside(path, root)
        if Path(path) == man and ok and not man.is_symlink():
            man.unlink()
            os.symlink(secret, man)
        return ok

    monkeypatch.setattr(manifests, "_inside", swap_after_check)
    result = manifests.load_manifest(ir.arms["real"], spec.parent, root=spec.parent, probe=False)
    assert not result.records and [d.code for d in result.diagnostics] == ["E0707"]
