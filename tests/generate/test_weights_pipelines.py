"""`scoreaudit weights SPEC` lists the diffusers pipelines of a spec's generated arms and probes, and
`--download` fetches the missing ones through diffusers' own file selection (a stand-in here: no network)."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("diffusers")

import diffusers  # noqa: E402

from scoreaudit.cli import main  # noqa: E402
from scoreaudit.testing.tiny_diffusion import save_tiny_sd  # noqa: E402
from scoreaudit.testing.tiny_models import hf_snapshot  # noqa: E402

SPEC = '''audit "Pipelines" { seed: 1 }
scorer p = planted(fidelity: 0.5, noise: 0.1)
arm local = generate("pipe", prompts: "prompts.txt", seeds: 1, steps: 2, guidance: 1.0, size: 32, kind: synthetic)
arm hub = generate("weights-test/gen", prompts: "prompts.txt", seeds: 1, steps: 2, guidance: 1.0, size: 32,
                   kind: synthetic)
'''


@pytest.fixture()
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf"))
    save_tiny_sd(tmp_path / "tiny", seed=3)
    shutil.copytree(tmp_path / "tiny", tmp_path / "pipe")
    (tmp_path / "prompts.txt").write_text("a red car\n")
    spec = tmp_path / "p.audit"
    spec.write_text(SPEC)
    return spec


def test_listing_names_each_pipeline_ready_or_missing(project, capsys):
    assert main(["weights", str(project)]) == 3  # the Hub pipeline is not here
    out = capsys.readouterr().out
    assert f"{project}:local  [ready]" in out and "folder under the spec's folder" in out
    assert f"{project}:hub  [NOT READY]" in out and "missing (not in the Hugging Face cache" in out
    assert 'hf download weights-test/gen --include "*.json" "*.txt" "*.fp16.safetensors"' in out
    assert "1 of 2 ready" in out
    assert main(["weights", "--format", "json", str(project)]) == 3
    rows = {r["target"].rsplit(":", 1)[1]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["local"]["kind"] == "pipeline" and rows["local"]["ready"] and rows["local"]["fetch"] == []
    assert not rows["hub"]["ready"] and rows["hub"]["fetch"][0].startswith("hf download weights-test/gen")
    # an incomplete folder: the missing files named, nothing to fetch
    (project.parent / "pipe" / "unet" / "diffusion_pytorch_model.safetensors").unlink()
    assert main(["weights", str(project)]) == 3
    assert "lacks unet/ weights" in capsys.readouterr().out


def test_download_fetches_missing_pipelines_then_they_are_ready(project, monkeypatch, capsys):
    import huggingface_hub.constants as hc

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    calls = []

    def fake_download(repo, variant=None, revision=None, cache_dir=None, **kw):
        calls.append((repo, variant))
        if variant == "fp16":  # what diffusers says for a repo without fp16 files: the plain ones are fetched
            raise ValueError(f"You are trying to load the model files of the `variant={variant}`, but no such "
                             "modeling files are available.")
        snap = hf_snapshot(cache_dir, repo)
        shutil.copytree(project.parent / "tiny", snap, dirs_exist_ok=True)
        return str(snap)

    monkeypatch.setattr(diffusers.DiffusionPipeline, "download", staticmethod(fake_download))
    assert main(["weights", "--download", str(project)]) == 0
    captured = capsys.readouterr()
    assert calls == [("weights-test/gen", "fp16"), ("weights-test/gen", None)]  # only the missing one
    assert "fetching diffusers pipeline weights-test/gen" in captured.err and "2 of 2 ready" in captured.out
    calls.clear()
    assert main(["weights", "--download", str(project)]) == 0 and calls == []  # nothing left to fetch


def test_download_offline_names_the_cause_once(project, capsys):
    assert main(["weights", "--download", str(project)]) == 3  # HF_HUB_OFFLINE=1 in the tests
    err = capsys.readouterr().err
    assert err.count("failed:") == 1 and "failed: weights-test/gen:" in err
    assert "HF_HUB_OFFLINE is set" in err


PROBE_SPEC = '''audit "Probe models" { seed: 1 }
scorer ir = image_reward()
probe r = reno(scorer: ir, pipeline: "pipe", prompts: "prompts.txt", iterations: 2, direction: maximize, seeds: 1,
               size: 32, measures: [ita, clip_attribute(labels: ["man", "woman"], model: "{model}")])
'''


def _clip_folder(folder, weights=True):
    folder.mkdir(parents=True)
    for name in ("config.json", "preprocessor_config.json", "vocab.json", "merges.txt"):
        (folder / name).write_text("{}")
    if weights:
        (folder / "model.safetensors").write_bytes(b"stand-in: listed, never loaded here")


def test_a_probes_clip_attribute_model_is_listed_and_fetched(project, monkeypatch, capsys):
    import huggingface_hub
    import huggingface_hub.constants as hc

    spec = project.parent / "probe.audit"
    _clip_folder(project.parent / "clip")
    spec.write_text(PROBE_SPEC.replace("{model}", "clip"))
    assert main(["weights", str(spec)]) == 3  # image_reward's weights are not in this cache
    out = capsys.readouterr().out
    assert f"{spec}:r  [ready]" in out  # the pipeline and the local CLIP folder
    assert "CLIP model (clip_attribute, anchor) clip: folder under the spec's folder" in out
    (project.parent / "clip" / "model.safetensors").unlink()  # incomplete: named, nothing to fetch
    assert main(["weights", str(spec)]) == 3
    assert "the folder 'clip' lacks model.safetensors" in capsys.readouterr().out
    # a Hugging Face id not in the cache: missing, with the files to fetch; --download fetches them
    spec.write_text(PROBE_SPEC.replace("{model}", "weights-test/clip"))
    assert main(["weights", "--format", "json", str(spec)]) == 3
    rows = [r for r in json.loads(capsys.readouterr().out) if r["kind"] == "clip_model"]
    assert len(rows) == 1 and not rows[0]["ready"]
    assert rows[0]["fetch"] == ['hf download weights-test/clip --include "*.json" "*.txt" "*.safetensors"']
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)
    real, asked = huggingface_hub.snapshot_download, []

    def fake_snapshot(repo, revision=None, cache_dir=None, allow_patterns=None, local_files_only=False, **kw):
        if local_files_only:
            return real(repo, revision=revision, cache_dir=cache_dir, local_files_only=True, **kw)
        asked.append((repo, allow_patterns))
        _clip_folder(hf_snapshot(cache_dir, repo) / "x")
        snap = hf_snapshot(cache_dir, repo)
        for f in (snap / "x").iterdir():
            f.rename(snap / f.name)
        return str(snap)

    def no_scorer_files(repo_id, filename, **kw):  # the scorer's files are not this test's business
        raise RuntimeError("stand-in: no network")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_scorer_files)
    assert main(["weights", "--download", str(spec)]) == 3  # image_reward still missing
    captured = capsys.readouterr()
    assert asked == [("weights-test/clip", ["*.json", "*.txt", "*.safetensors"])]
    assert "fetching CLIP model (clip_attribute, anchor) weights-test/clip" in captured.err
    assert f"{spec}:r  [ready]" in captured.out
