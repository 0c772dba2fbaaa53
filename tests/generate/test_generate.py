"""Generated arms end to end on a tiny random diffusers pipeline (CPU, offline, built in the test)."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scoreaudit import api
from scoreaudit.compiler.ir import ArmIR, PluginCall
from scoreaudit.diagnostics import DiagnosticError
from scoreaudit.runtime.generation import (GenerationUnavailable, Generator, jobs_for, locate_pipeline,
                                           store_path)
from scoreaudit.testing.tiny_diffusion import save_tiny_sd

SPEC = '''audit "Generated" {{ seed: 1 }}
scorer p = planted(fidelity: 0.5, noise: 0.1)
arm gen = generate("pipe", prompts: {prompts}, seeds: {seeds}, steps: {steps}, guidance: 1.0, size: 32,
                   batch_size: {bs}, kind: synthetic)
{hypothesis}'''
CLAIM = '''hypothesis H "x" {
  abs(group_gap(gender, "man", "woman")) < 5.0 on gen for each scorer
}
'''
TEMPLATE = 'template("a portrait photo of a {gender} {job}", gender: ["man", "woman"], job: column(job, "jobs.csv"))'


@pytest.fixture(scope="module")
def pipe_dir(tmp_path_factory) -> Path:
    return save_tiny_sd(tmp_path_factory.mktemp("pipe") / "pipe", seed=3)


@pytest.fixture(autouse=True)
def _models_folder(pipe_dir, monkeypatch):
    """The pipeline lives outside the project, in a models folder the user names once (runtime/model_paths.py)."""
    monkeypatch.setenv("SCOREAUDIT_MODELS", str(pipe_dir.parent))


def _project(tmp: Path, pipe_dir: Path, *, prompts: str = TEMPLATE, seeds: str = "[0, 1]", bs: int = 1,
             steps: int = 2) -> Path:
    (tmp / "pipe").symlink_to(pipe_dir, target_is_directory=True)
    (tmp / "jobs.csv").write_text("job\nnurse\ndoctor\nnurse\n")
    spec = tmp / "gen.audit"
    spec.write_text(SPEC.format(prompts=prompts, seeds=seeds, bs=bs, steps=steps,
                                hypothesis=CLAIM if prompts == TEMPLATE else ""))
    return spec


def _manifest(out: Path) -> list[dict]:
    with (out / "generated" / "gen" / "manifest.csv").open() as fh:
        return list(csv.DictReader(fh))


def test_check_and_plan_count_images_and_denoising_steps(tmp_path, pipe_dir):
    spec = _project(tmp_path, pipe_dir)
    ir, plan = api.compile(spec)
    assert ir.arms["gen"].factors == ("gender", "job") and ir.arms["gen"].cluster == "cluster"
    step = plan.step("generate/gen")
    assert (step.images, step.denoising_steps) == (2 * 2 * 2, 2 * 2 * 2 * 2)  # gender × distinct jobs × seeds
    assert plan.images["gen"] == 8 and "decode/gen" in [s.id for s in plan.steps]
    assert "generate/gen" in plan.step("decode/gen").depends_on


def test_template_and_prompts_file_expand(tmp_path):
    from scoreaudit.compiler.prompts import expand_prompts

    (tmp_path / "jobs.csv").write_text("job\nnurse\ndoctor\nnurse\n")
    rows = expand_prompts({"template": "a {g} {job}", "factors": {"g": ["man", "woman"],
                                                                  "job": {"column": "job", "file": "jobs.csv"}}},
                          tmp_path)
    assert [r["prompt"] for r in rows] == ["a man nurse", "a man doctor", "a woman nurse", "a woman doctor"]
    assert rows[3]["factors"] == {"g": "woman", "job": "doctor"}
    (tmp_path / "p.txt").write_text("one\n\ntwo\n")
    assert [(r["prompt"], r["set"]) for r in expand_prompts("p.txt", tmp_path)] == [("one", 0), ("two", 1)]


def test_run_writes_pngs_and_manifest_and_reuses_the_store(tmp_path, pipe_dir):
    spec = _project(tmp_path, pipe_dir)
    out, cache = tmp_path / "out", tmp_path / "cache.sqlite"
    res = api.run(spec, out=out, device="cpu", cache=cache, progress=False, render_report=False)
    rows = _manifest(out)
    assert len(rows) == 8
    assert {(r["gender"], r["job"]) for r in rows} == {(g, j) for g in ("man", "woman") for j in ("nurse", "doctor")}
    assert {r["cluster"] for r in rows} == {"s0", "s1"}  # a counterfactual set per seed
    first = {r["id"]: (out / "generated" / "gen" / r["path"]).read_bytes() for r in rows}
    for r in rows:
        img = Image.open(out / "generated" / "gen" / r["path"])
        assert img.size == (32, 32) and img.mode == "RGB"
    # different seeds and different prompts give different images
    assert first["p0000_s0"] != first["p0000_s1"] and first["p0000_s0"] != first["p0002_s0"]
    assert "generate gen: 8 images, 0 from the store, 8 new" in (out / "run.log").read_text()
    assert any(c["outcome"] in ("supported", "refuted", "inconclusive") for c in res["cells"])
    # a second run into another folder regenerates nothing and gives the same bytes
    out2 = tmp_path / "out2"
    api.run(spec, out=out2, device="cpu", cache=cache, progress=False, render_report=False)
    assert "generate gen: 8 images, 8 from the store, 0 new" in (out2 / "run.log").read_text()
    assert {r["id"]: (out2 / "generated" / "gen" / r["path"]).read_bytes() for r in _manifest(out2)} == first
    # the output audits again as an images(...) arm
    again = tmp_path / "again.audit"
    again.write_text('audit "again" { seed: 1 }\nscorer p = planted(fidelity: 0.5)\n'
                     'arm gen = images("out/generated/gen", manifest: "out/generated/gen/manifest.csv", '
                     'cluster: cluster, factors: [gender, job], prompt: prompt)\n'
                     'hypothesis H "x" {\n  abs(group_gap(gender, "man", "woman")) < 5.0 on gen for each scorer\n}\n')
    res2 = api.run(again, out=tmp_path / "out3", device="cpu", cache=tmp_path / "c2.sqlite", progress=False,
                   render_report=False)
    assert len(res2["cells"]) == 1


def test_same_images_across_runs_and_batch_sizes(tmp_path, pipe_dir):
    spec = _project(tmp_path, pipe_dir)
    ir, _ = api.compile(spec)
    arm = ir.arms["gen"]
    folder, identity = locate_pipeline("gen", arm.call.params, tmp_path)
    jobs = jobs_for(arm, tmp_path, identity, "float32")[:5]
    one = Generator("gen", arm.call.params, folder, "cpu", "float32")
    singles = [one([j])[0] for j in jobs]
    batched = Generator("gen", arm.call.params, folder, "cpu", "float32")(jobs)
    again = [Generator("gen", arm.call.params, folder, "cpu", "float32")([j])[0] for j in jobs[:2]]
    assert again == singles[:2]  # bit-identical across runs
    for a, b in zip(singles, batched):  # batched convolutions may round differently by one level at most
        diff = np.abs(np.asarray(Image.open(__import__("io").BytesIO(a)), dtype=int)
                      - np.asarray(Image.open(__import__("io").BytesIO(b)), dtype=int))
        assert diff.max() <= 1


def test_content_key_covers_every_generation_setting(tmp_path, pipe_dir):
    spec = _project(tmp_path, pipe_dir)
    ir, _ = api.compile(spec)
    arm = ir.arms["gen"]
    _, identity = locate_pipeline("gen", arm.call.params, tmp_path)
    base = jobs_for(arm, tmp_path, identity, "float32")[0].key
    for change in ({"steps": 3}, {"guidance": 2.0}, {"size": 64}, {"scheduler": "DDPMScheduler"},
                   {"negative_prompt": "blurry"}):
        other = ArmIR(**{**arm.model_dump(), "call": PluginCall(plugin="generate", version="1",
                                                                params={**arm.call.params, **change})})
        assert jobs_for(other, tmp_path, identity, "float32")[0].key != base, change
    assert jobs_for(arm, tmp_path, identity, "float16")[0].key != base
    assert jobs_for(arm, tmp_path, identity + "x", "float32")[0].key != base


def test_missing_pipeline_files_are_named(tmp_path, pipe_dir):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(pipe_dir, broken)
    (broken / "unet" / "diffusion_pytorch_model.safetensors").unlink()
    with pytest.raises(GenerationUnavailable, match=r"lacks unet/ weights"):
        locate_pipeline("gen", {"pipeline": "broken"}, tmp_path)
    with pytest.raises(GenerationUnavailable, match=r"nothing is downloaded"):
        locate_pipeline("gen", {"pipeline": "no-such-org/no-such-model"}, tmp_path)


def test_unreadable_prompts_file_is_a_diagnostic(tmp_path, pipe_dir):
    spec = _project(tmp_path, pipe_dir, prompts='"missing.txt"')
    with pytest.raises(DiagnosticError) as e:
        api.run(spec, out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=False,
                render_report=False)
    assert "E0852" in str(e.value) and "missing.txt" in str(e.value)


def test_resume_after_sigkill_regenerates_nothing_committed(tmp_path, pipe_dir):
    # 25 steps per image: the kill lands mid-arm even on a loaded machine
    spec = _project(tmp_path, pipe_dir, prompts='"prompts.txt"', seeds="6", steps=25)
    (tmp_path / "prompts.txt").write_text("a red car\na blue house\n")
    cache = tmp_path / "cache.sqlite"
    store = tmp_path / "cache.sqlite.generated"
    env = {**os.environ, "PYTHONPATH": str(Path(api.__file__).resolve().parents[1])}
    cmd = [sys.executable, "-c", "import sys; from scoreaudit.cli import main; sys.exit(main())", "run", str(spec),
           "--out", str(tmp_path / "out"), "--cache", str(cache), "--device", "cpu", "-q"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.monotonic()
    while len(list(store.rglob("*.png"))) < 3:
        if proc.poll() is not None:
            pytest.fail(f"run ended before 3 images were committed: {proc.stderr.read().decode()[-2000:]}")
        assert time.monotonic() - t0 < 600, "generation did not progress"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = {p.name: p.read_bytes() for p in store.rglob("*.png")}
    assert 3 <= len(done) < 12
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-2000:]
    log = (tmp_path / "out" / "run.log").read_text()
    assert f"generate gen: 12 images, {len(done)} from the store, {12 - len(done)} new" in log
    assert all((store / n[:2] / n).read_bytes() == b for n, b in done.items())  # nothing rewritten
    assert len(_manifest(tmp_path / "out")) == 12


def test_generation_reports_images_and_steps_per_second(tmp_path, pipe_dir, capsys, monkeypatch):
    """Off a terminal, generation prints `progress:` lines for images and denoising steps, with rates."""
    monkeypatch.setenv("SCOREAUDIT_PROGRESS_SECONDS", "0")
    spec = _project(tmp_path, pipe_dir, seeds="0..1", bs=2)
    api.run(spec, out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=True,
            render_report=False)
    err = capsys.readouterr().err
    n = 2 * 2 * 2  # gender × job × seeds
    assert f"progress: generate gen (images) {n}/{n} (100%)" in err
    assert f"progress: generate gen (denoising steps) {n * 2}/{n * 2} (100%)" in err
    assert "/s" in err.split("denoising steps")[1].splitlines()[0]
    log = (tmp_path / "out" / "run.log").read_text()
    assert f"generate gen: {n} images, {n * 2} denoising steps in" in log and "images/s" in log


def test_generated_arm_gets_thumbnail_strips(tmp_path, pipe_dir):
    """The report's one-image-at-every-dose strip works on a generated arm (its images are in the output)."""
    import json

    spec = _project(tmp_path, pipe_dir, seeds="0..0")
    text = spec.read_text().replace("hypothesis H", "operator light = lab_shift(channel: L) doses -5, 0, 5\n"
                                                    "hypothesis H")
    spec.write_text(text)
    api.run(spec, out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=False,
            render_report=False)
    thumbs = json.loads((tmp_path / "out" / "thumbnails.json").read_text())
    assert thumbs["light"]["arm"] == "gen" and [d["dose"] for d in thumbs["light"]["doses"]] == [-5.0, 0.0, 5.0]


def test_a_rerun_into_the_same_output_replays_the_generated_images_memos(tmp_path, pipe_dir, monkeypatch):
    """The output copies keep the store's time and are not rewritten, so their memos (path, size, time)
    hold: the second run decodes none of the generated images, and its tables are the first run's."""
    import scoreaudit.runtime.arm_runner as runner

    spec = _project(tmp_path, pipe_dir)
    kw = dict(out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=False, render_report=False)
    api.run(spec, **kw)
    png = tmp_path / "out" / "generated" / "gen" / "p0000_s0.png"
    before = png.stat().st_mtime_ns
    first = (tmp_path / "out" / "tables" / "scores.parquet").read_bytes()
    decoded = []
    real = runner.decode_record
    monkeypatch.setattr(runner, "decode_record", lambda rec, *a: decoded.append(rec.image_id) or real(rec, *a))
    api.run(spec, **kw)
    assert decoded == []  # every image replayed from its memo
    assert png.stat().st_mtime_ns == before
    assert (tmp_path / "out" / "tables" / "scores.parquet").read_bytes() == first
    good = png.read_bytes()
    png.write_bytes(b"\x00" * len(good))  # a damaged copy (new time) is copied from the store again
    api.run(spec, **kw)
    assert png.read_bytes() == good and png.stat().st_mtime_ns == before and decoded == []


def test_a_pipeline_downloaded_as_its_fp16_variant_loads_and_makes_the_same_images(tmp_path, pipe_dir):
    """`hf download REPO --include "*.fp16.*" ...` leaves only `*.fp16.safetensors` weights, which
    `from_pretrained` loads only with variant="fp16" (without it: "no file named model.safetensors")."""
    from diffusers import DiffusionPipeline

    from scoreaudit.runtime.generation import weights_variant
    from scoreaudit.testing.tiny_models import hf_snapshot

    variant_dir = tmp_path / "pipe16"
    DiffusionPipeline.from_pretrained(str(pipe_dir)).save_pretrained(str(variant_dir), variant="fp16")
    assert not list(variant_dir.rglob("diffusion_pytorch_model.safetensors"))  # only variant weights
    assert weights_variant(variant_dir) == "fp16" and weights_variant(pipe_dir) is None
    spec = _project(tmp_path, pipe_dir)
    arm = api.compile(spec)[0].arms["gen"]
    job = jobs_for(arm, tmp_path, "id", "float32")[:1]
    plain = Generator("gen", arm.call.params, pipe_dir, "cpu", "float32")(job)
    # the same tensors under variant names: the same pixels (the weights are saved as they are)
    assert Generator("gen", arm.call.params, variant_dir, "cpu", "float32")(job) == plain
    # in the Hugging Face cache: it loads, and the variant is part of the pipeline's identity
    cache = Path(os.environ["HF_HUB_CACHE"])  # the session's throwaway cache (tests/conftest.py)
    import shutil

    for repo, src in (("variant-test/plain", pipe_dir), ("variant-test/half", variant_dir)):
        shutil.copytree(src, hf_snapshot(cache, repo), dirs_exist_ok=True)
    folder, identity = locate_pipeline("gen", {"pipeline": "variant-test/half"}, tmp_path)
    assert identity.endswith("#fp16") and Generator("gen", arm.call.params, folder, "cpu", "float32")(job) == plain
    assert "#" not in locate_pipeline("gen", {"pipeline": "variant-test/plain"}, tmp_path)[1]
    # one component in variant form only (mixed): that variant, loading the rest as they are
    mixed = tmp_path / "mixed"
    shutil.copytree(pipe_dir, mixed)
    (mixed / "unet" / "diffusion_pytorch_model.safetensors").unlink()
    shutil.copy(variant_dir / "unet" / "diffusion_pytorch_model.fp16.safetensors", mixed / "unet")
    assert weights_variant(mixed) == "fp16"
    assert Generator("gen", arm.call.params, mixed, "cpu", "float32")(job) == plain
