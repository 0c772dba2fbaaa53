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
    assert "fetching pipeline weights-test/gen" in captured.err and "2 of 2 ready" in captured.out
    calls.clear()
    assert main(["weights", "--download", str(project)]) == 0 and calls == []  # nothing left to fetch


def test_download_offline_names_the_cause_once(project, capsys):
    assert main(["weights", "--download", str(project)]) == 3  # HF_HUB_OFFLINE=1 in the tests
    err = capsys.readouterr().err
    assert err.count("failed:") == 1 and "failed: pipeline weights-test/gen" in err
    assert "HF_HUB_OFFLINE is set" in err
