"""Score cache keys follow the precision a model scorer's forwards run at (no model is built here).

fp32 keys are unchanged from before autocast existed (device and parameters only); a reduced
precision adds its name, so autocast scores never stand in for exact ones, and changing what a
scorer's `precision: auto` means on a device changes the keys of the scores it makes there.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from scoreaudit.compiler.ir import PluginCall, ScorerIR
from scoreaudit.keys import step_key
from scoreaudit.registry import load_plugins, scorers
from scoreaudit.runtime.scoring import ScorerSlot, forward_precision

load_plugins()

RECORD = SimpleNamespace(arm="a", image_id="img1")
ITEM = SimpleNamespace(operator="blur", dose=1.0)
HASH = "0" * 64


def slot(plugin: str, device: str, **params) -> ScorerSlot:
    ctx = SimpleNamespace(device=device, spec_dir=Path("."))
    sir = ScorerIR(name="s", call=PluginCall(plugin=plugin, version="1", params={"prompt": "a cat", **params}),
                   needs_prompt=True)
    return ScorerSlot(ctx, sir)


def key(plugin: str, device: str, **params) -> str:
    return slot(plugin, device, **params).request(RECORD, HASH, "a cat", ITEM, lambda: None).step.key


@pytest.mark.parametrize("plugin", ["laion_aesthetic", "pickscore", "image_reward", "hpsv2", "clip_score"])
def test_keys_differ_by_precision_and_device(plugin):
    keys = {(dev, p): key(plugin, dev, precision=p) for dev in ("cpu", "cuda") for p in ("auto", "fp32", "fp16", "bf16")}
    assert len(set(keys.values())) == len(keys)


def test_fp32_keys_are_the_keys_from_before_autocast():
    """Same formula as before this change: the device and the parameters, no precision input."""
    for device, precision in (("cpu", "fp32"), ("cpu", "auto"), ("cuda", "fp32"), ("cuda", "auto")):
        s = slot("pickscore", device, precision=precision)  # PickScore's auto is fp32 everywhere
        want = step_key("score", "pickscore", "1", s.key_params, {"image": HASH, "prompt": "a cat", "device": device},
                        "score s a/img1 blur@1.0").key
        assert s.request(RECORD, HASH, "a cat", ITEM, lambda: None).step.key == want
    s = slot("pickscore", "cuda", precision="bf16")
    old = step_key("score", "pickscore", "1", s.key_params, {"image": HASH, "prompt": "a cat", "device": "cuda"}, "").key
    assert s.request(RECORD, HASH, "a cat", ITEM, lambda: None).step.key != old


def test_changing_what_auto_means_changes_the_keys(monkeypatch):
    cls = scorers.get("hpsv2").impl
    assert forward_precision(scorers.get("hpsv2"), {"precision": "auto"}, "cuda") == cls.AUTO_PRECISION["cuda"]
    before = key("hpsv2", "cuda", precision="auto")
    explicit = key("hpsv2", "cuda", precision=cls.AUTO_PRECISION["cuda"])
    assert before != explicit  # the declared argument is part of the key too
    monkeypatch.setattr(cls, "AUTO_PRECISION", {"cuda": "bf16"})
    assert key("hpsv2", "cuda", precision="auto") != before
    monkeypatch.setattr(cls, "AUTO_PRECISION", {})
    assert key("hpsv2", "cuda", precision="auto") != before
    assert key("hpsv2", "cpu", precision="auto") == key("hpsv2", "cpu", precision="auto")


def test_scorers_without_a_precision_are_keyed_as_before():
    assert forward_precision(scorers.get("sharpness"), {}, "cuda") is None
