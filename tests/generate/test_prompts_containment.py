"""Prompts files are data files: read only from under the spec's folder (E0707 otherwise, unless
`--allow-outside`), only when they are regular files (a FIFO never blocks a run), for generated arms,
template columns and probes alike, and `plan` counts nothing it may not read."""

from __future__ import annotations

import os

import pytest

from scoreaudit import api
from scoreaudit.compiler.prompts import PromptsError, PromptsOutside, expand_prompts
from scoreaudit.diagnostics import DiagnosticError

pytest.importorskip("diffusers")

from scoreaudit.testing.tiny_diffusion import save_tiny_sd  # noqa: E402

GEN = '''audit "Outside" {{ seed: 1 }}
scorer p = planted(fidelity: 0.5, noise: 0.1)
arm gen = generate("pipe", prompts: {prompts}, seeds: 1, steps: 2, guidance: 1.0, size: 32, kind: synthetic)
'''


@pytest.fixture(scope="module")
def pipe_dir(tmp_path_factory):
    return save_tiny_sd(tmp_path_factory.mktemp("pipe") / "pipe", seed=3)


@pytest.fixture(autouse=True)
def _models_folder(pipe_dir, monkeypatch):
    """The pipeline lives outside the project, in a models folder the user names once (runtime/model_paths.py)."""
    monkeypatch.setenv("SCOREAUDIT_MODELS", str(pipe_dir.parent))


def _project(tmp_path, pipe_dir, prompts: str):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pipe").symlink_to(pipe_dir, target_is_directory=True)  # a link into the user's models folder
    (tmp_path / "secret.txt").write_text("the first secret line\nthe second\n")
    (tmp_path / "secret.csv").write_text("job\nsecret job\n")
    spec = project / "gen.audit"
    spec.write_text(GEN.format(prompts=prompts))
    return spec


def test_expand_prompts_refuses_files_outside_the_base_folder(tmp_path):
    base = tmp_path / "project"
    base.mkdir()
    (tmp_path / "secret.txt").write_text("a secret\n")
    (base / "link.txt").symlink_to(tmp_path / "secret.txt")  # a link out is outside too
    (base / "ok.txt").write_text("a photo\n\nanother photo\n")
    assert [r["prompt"] for r in expand_prompts("ok.txt", base)] == ["a photo", "another photo"]
    for name in ("../secret.txt", str(tmp_path / "secret.txt"), "link.txt"):
        with pytest.raises(PromptsOutside, match="outside the spec's folder") as err:
            expand_prompts(name, base)
        assert err.value.code == "E0707"
    column = {"template": "a {x}", "factors": {"x": {"column": "x", "file": "../secret.csv"}}}
    (tmp_path / "secret.csv").write_text("x\nsecret\n")
    with pytest.raises(PromptsOutside):
        expand_prompts(column, base)
    assert [r["prompt"] for r in expand_prompts(column, base, allow_outside=True)] == ["a secret"]
    assert [r["prompt"] for r in expand_prompts("../secret.txt", base, allow_outside=True)] == ["a secret"]


def test_a_fifo_as_prompts_file_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "prompts.txt")  # nothing ever writes to it: a blocking read would hang the test
    with pytest.raises(PromptsError, match="FIFO") as err:
        expand_prompts("prompts.txt", tmp_path)
    assert err.value.code == "E0852"


@pytest.mark.parametrize("prompts", ['"../secret.txt"',
                                     'template("a {job}", job: column(job, "../secret.csv"))'])
def test_run_stops_with_E0707_and_plan_counts_nothing(tmp_path, pipe_dir, prompts):
    spec = _project(tmp_path, pipe_dir, prompts)
    _, plan = api.compile(spec)
    assert plan.step("generate/gen").images is None  # not read: "?" in the plan
    with pytest.raises(DiagnosticError) as err:
        api.run(spec, out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=False,
                render_report=False)
    (d,) = err.value.diagnostics
    assert d.code == "E0707" and d.message.startswith("arm 'gen': ") and "outside the spec's folder" in d.message
    assert "--allow-outside" in d.help
    assert not (tmp_path / "out" / "generated").exists()  # nothing generated from it
    api.run(spec, out=tmp_path / "out2", device="cpu", cache=tmp_path / "c.sqlite", progress=False,
            render_report=False, allow_outside=True)
    import json

    run = json.loads((tmp_path / "out2" / "run.json").read_text())
    assert run["generated"]["gen"]["generated"] in (1, 2)  # the secret file's prompts, with --allow-outside


def test_a_probe_with_prompts_outside_is_E0707_naming_the_probe(tmp_path, pipe_dir):
    spec = _project(tmp_path, pipe_dir, '"p.txt"')
    (spec.parent / "p.txt").write_text("a photo\n")
    spec.write_text(spec.read_text() + 'scorer pick = pickscore(prompt: "a photo")\n'
                    'probe q = reno(pick, pipeline: "pipe", prompts: "../secret.txt", iterations: 1, seeds: 0..1, '
                    'size: 32, measures: [skin_exposure])\n')
    _, plan = api.compile(spec)
    assert plan.step("probe/q").images is None
    from scoreaudit.runtime.probe import trajectories

    ir, _ = api.compile(spec)
    with pytest.raises(DiagnosticError) as err:
        trajectories(ir.probes["q"], spec.parent, "id", "float32", {})
    (d,) = err.value.diagnostics
    assert d.code == "E0707" and d.message.startswith("probe 'q': ")
    assert len(trajectories(ir.probes["q"], spec.parent, "id", "float32", {}, allow_outside=True)) == 4
