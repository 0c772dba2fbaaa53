"""`scoreaudit weights`, weights resolution and `check`'s W0810, on a throwaway Hugging Face cache.

No network: `--download` runs against a stand-in for `huggingface_hub.hf_hub_download` that
writes files into the cache layout huggingface_hub itself reads (refs/main + snapshots/<commit>/),
and, with HF_HUB_OFFLINE=1, against the real one (which refuses at once).
"""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import pytest

huggingface_hub = pytest.importorskip("huggingface_hub", reason="the models extra is not installed")

from scoreaudit import api  # noqa: E402
from scoreaudit.cli import main  # noqa: E402
from scoreaudit.plugins.scorers.model_weights import checkpoint_problem  # noqa: E402
from scoreaudit.registry import load_plugins, scorers  # noqa: E402
from scoreaudit.runtime.scorers import resolve_paths  # noqa: E402

COMMIT = "89abcdef0123456789abcdef0123456789abcdef"
load_plugins()


def write_valid(path: Path) -> None:
    """A file that passes checkpoint_problem for its suffix (structure only, no real tensors)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".safetensors":
        header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
        path.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    elif path.suffix in (".pt", ".pth", ".bin"):
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
            z.writestr("archive/version", b"3\n")
    elif path.suffix == ".json":
        path.write_text("{}")
    else:
        path.write_text("[PAD]\n[UNK]\n")


def cache_file(cache: Path, repo: str, name: str) -> Path:
    root = cache / ("models--" + repo.replace("/", "--"))
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(COMMIT)
    return root / "snapshots" / COMMIT / name


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    c = tmp_path / "hf"
    c.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(c))
    return c


@pytest.fixture()
def online(monkeypatch):
    """The tests run with HF_HUB_OFFLINE=1; a test whose hf_hub_download is a stand-in lifts it."""
    import huggingface_hub.constants as hc

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", False)


class FakeHub:
    """hf_hub_download's contract: fetch REPO/NAME into the cache, return its path; EntryNotFound for absent names."""

    def __init__(self, cache: Path, absent=(), corrupt=()):
        self.cache, self.absent, self.corrupt, self.calls = cache, set(absent), set(corrupt), []

    def __call__(self, repo_id, filename, cache_dir=None, force_download=False, **kw):
        from huggingface_hub.errors import EntryNotFoundError

        self.calls.append((repo_id, filename))
        assert Path(cache_dir) == self.cache  # into the cache scoreaudit reads
        if (repo_id, filename) in self.absent:
            raise EntryNotFoundError(f"{filename} not in {repo_id}")
        path = cache_file(self.cache, repo_id, filename)
        if (repo_id, filename) in self.corrupt:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"<html>rate limited</html>")
        else:
            write_valid(path)
        return str(path)


def test_listing_names_every_file_with_hf_download_lines(cache, capsys):
    assert main(["weights", "pickscore", "image_reward", "laion_aesthetic"]) == 3  # not ready: environment
    out = capsys.readouterr().out
    assert "hf download yuvalkirstain/PickScore_v1 config.json model.safetensors" in out
    assert ("hf download laion/CLIP-ViT-H-14-laion2B-s32B-b79K preprocessor_config.json tokenizer_config.json "
            "vocab.json merges.txt special_tokens_map.json config.json") in out
    assert "hf download THUDM/ImageReward ImageReward.pt med_config.json" in out
    assert "hf download bert-base-uncased vocab.txt" in out
    assert "hf download camenduru/improved-aesthetic-predictor sac+logos+ava1-l14-linearMSE.pth" in out
    assert "hf download timm/vit_large_patch14_clip_224.openai open_clip_model.safetensors" in out
    assert "about 1.8 GB" in out and "0 of 3 ready" in out
    assert main(["weights", "--format", "json", "hpsv2"]) == 3
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["fetch"] == ["hf download xswu/HPSv2 HPS_v2.1_compressed.pt"]


def test_unknown_scorer_is_a_usage_error(cache, capsys):
    assert main(["weights", "no_such_scorer"]) == 2
    assert "no scorer called 'no_such_scorer'" in capsys.readouterr().err
    assert main(["weights", "pikscore"]) == 2
    assert "did you mean 'pickscore'?" in capsys.readouterr().err


def test_a_built_in_scorer_is_ready_with_nothing_to_fetch(cache, capsys):
    assert main(["weights", "sharpness"]) == 0
    out = capsys.readouterr().out
    assert "sharpness  [ready]" in out and "reads no weight files" in out and "1 of 1 ready" in out
    assert main(["weights", "sharpness", "hpsv2"]) == 3  # the model scorer is still missing
    assert "1 of 2 ready" in capsys.readouterr().out


def test_download_fetches_every_missing_file_then_the_scorers_are_ready(cache, online, monkeypatch, capsys):
    fake = FakeHub(cache, absent={("timm/vit_large_patch14_clip_224.openai", "open_clip_model.safetensors")})
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    assert main(["weights", "--download", "laion_aesthetic", "image_reward", "hpsv2"]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 ready" in out
    assert ("timm/vit_large_patch14_clip_224.openai", "open_clip_pytorch_model.bin") in fake.calls  # the alternative
    assert len(fake.calls) == 2 + 1 + 3 + 1  # laion (with the retry), image_reward's three, hpsv2's one
    for name in ("laion_aesthetic", "image_reward", "hpsv2"):
        e = scorers.get(name)
        assert e.impl.readiness(e.params())[0], name
    # a second call fetches nothing
    fake.calls.clear()
    assert main(["weights", "--download", "laion_aesthetic"]) == 0
    assert fake.calls == []


def test_a_corrupt_download_is_not_ready(cache, online, monkeypatch, capsys):
    fake = FakeHub(cache, corrupt={("xswu/HPSv2", "HPS_v2.1_compressed.pt")})
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    assert main(["weights", "--download", "hpsv2"]) == 3
    captured = capsys.readouterr()
    assert "INVALID" in captured.out and "not a torch checkpoint" in captured.out
    e = scorers.get("hpsv2")
    ready, detail = e.impl.readiness(e.params())
    assert not ready and "not a torch checkpoint" in detail


def test_download_offline_fails_cleanly(cache, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import huggingface_hub.constants as hc

    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    assert main(["weights", "--download", "hpsv2"]) == 3
    err = capsys.readouterr().err
    assert "failed: xswu/HPSv2/HPS_v2.1_compressed.pt: cannot reach the Hugging Face Hub" in err
    assert "HF_HUB_OFFLINE is set in this environment: unset it to download" in err  # the cause, named
    # several scorers: one failure naming the cause, no "fetching" lines, the Hub never asked
    fake = FakeHub(cache)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    assert main(["weights", "--download", "hpsv2", "image_reward"]) == 3
    captured = capsys.readouterr()
    assert captured.err.count("failed:") == 1 and "fetching" not in captured.err and fake.calls == []
    assert "the 3 other missing download(s) were not tried" in captured.err
    assert "hf download THUDM/ImageReward ImageReward.pt med_config.json" in captured.out  # still listed


def test_download_stops_at_the_first_unreachable_hub(cache, online, monkeypatch, capsys):
    from huggingface_hub.errors import LocalEntryNotFoundError

    calls = []

    def no_network(repo_id, filename, **kw):
        calls.append((repo_id, filename))
        raise LocalEntryNotFoundError("Connection error, and the file is not in the local cache")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", no_network)
    assert main(["weights", "--download", "image_reward", "hpsv2"]) == 3
    err = capsys.readouterr().err
    assert len(calls) == 1 and err.count("failed:") == 1
    assert "offline or no network" in err and "the 3 other missing download(s) were not tried" in err


@pytest.mark.parametrize("content,problem", [
    (b"", "empty"),
    (b"<html>", "not a torch checkpoint"),
])
def test_checkpoint_problem_rejects_non_checkpoints(tmp_path, content, problem):
    p = tmp_path / "x.pt"
    p.write_bytes(content)
    assert problem in checkpoint_problem(p)


def test_checkpoint_problem_catches_truncation(tmp_path):
    good = tmp_path / "m.safetensors"
    write_valid(good)
    assert checkpoint_problem(good) is None
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(good.read_bytes()[:-3])
    assert "not a complete safetensors file" in checkpoint_problem(cut)
    pt = tmp_path / "m.pt"
    write_valid(pt)
    assert checkpoint_problem(pt) is None
    short = tmp_path / "short.pt"
    short.write_bytes(pt.read_bytes()[: len(pt.read_bytes()) // 2])
    assert checkpoint_problem(short) is not None


def test_real_torch_checkpoints_pass(tmp_path):
    torch = pytest.importorskip("torch")
    p = tmp_path / "real.pt"
    torch.save({"state_dict": {"w": torch.ones(3)}}, p)
    assert checkpoint_problem(p) is None
    from safetensors.torch import save_file

    save_file({"w": torch.ones(3)}, str(tmp_path / "real.safetensors"))
    assert checkpoint_problem(tmp_path / "real.safetensors") is None


def test_relative_weights_resolve_against_the_spec_folder(tmp_path, cache, monkeypatch):
    assert resolve_paths({"weights": "w/head.pth", "prompt": "x"}, tmp_path) == {
        "weights": str(tmp_path / "w/head.pth"), "prompt": "x"}
    assert resolve_paths({"model": "local-dir:m", "weights": None}, tmp_path)["model"] == f"local-dir:{tmp_path / 'm'}"
    assert resolve_paths({"weights": "/abs/h.pth"}, tmp_path)["weights"] == "/abs/h.pth"
    spec_dir = tmp_path / "project"
    write_valid(spec_dir / "w" / "HPS_v2.1_compressed.pt")
    (spec_dir / "a.audit").write_text(SPEC.replace("WEIGHTS", ', weights: "w"'))
    monkeypatch.chdir(tmp_path)  # elsewhere: the path must not depend on the working directory
    checked = api.check(spec_dir / "a.audit", environment=True)
    warned = [d.message for d in checked.diagnostics if d.code == "W0810"]
    assert len(warned) == 1 and warned[0].startswith("scorer `laion`"), warned  # hps found its local file
    (spec_dir / "w" / "HPS_v2.1_compressed.pt").write_bytes(b"truncated")
    warned = [d.message for d in api.check(spec_dir / "a.audit", environment=True).diagnostics if d.code == "W0810"]
    assert any("scorer `hps`" in m and "not a torch checkpoint" in m for m in warned), warned


SPEC = '''audit "Weights" { version: 1  seed: 1 }
scorer hps = hpsv2(prompt: "a photo"WEIGHTS)
scorer laion = laion_aesthetic()
arm real = images("data", kind: real)
region face = face()
measure ita = ita(region: face)
operator light = lab_shift(channel: L, region: face) doses -5, 0, 5
hypothesis H1 "light matters" {
  fidelity_index(light) > 0 on real for each scorer
}
'''


def test_check_warns_about_every_scorer_that_cannot_run(cache, tmp_path):
    """W0810 golden: each scorer that cannot run is named with all of its missing files."""
    spec = tmp_path / "a.audit"
    spec.write_text(SPEC.replace("WEIGHTS", ""))
    checked = api.check(spec, environment=True)
    w = [d for d in checked.diagnostics if d.code == "W0810"]
    assert [d.message.split(":")[0] for d in w] == ["scorer `hps` (hpsv2) cannot run here",
                                                     "scorer `laion` (laion_aesthetic) cannot run here"]
    laion = w[1].message
    assert "sac+logos+ava1-l14-linearMSE.pth" in laion and "open_clip_model.safetensors" in laion
    from scoreaudit.diagnostics import render_all

    text = render_all(w, checked.source).replace(str(cache), "$HF_HUB_CACHE").replace(str(spec), "a.audit")
    golden = Path(__file__).parent / "golden" / "W0810.expected"
    import os

    if os.environ.get("SCOREAUDIT_REGEN") == "1" or not golden.exists():
        golden.write_text(text + "\n")
    assert text + "\n" == golden.read_text()
    # without `environment` (run, lsp, plan) the spec's validity is all that is checked
    assert not [d for d in api.check(spec).diagnostics if d.code == "W0810"]
