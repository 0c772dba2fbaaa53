"""Tiny plugins for the runtime tests, registered by `register()` (also in crash-test subprocesses).

Every fake scorer appends one line per scored image to the file named by
$SA_FAKE_LOG (scorer, image id, operator, dose), so tests count exactly what
was computed, across processes; $SA_FAKE_SLEEP slows each call down.
"""

from __future__ import annotations

import os
import time
from typing import Optional, Union

import numpy as np

from scoreaudit.plugins.base import OperatorOutput
from scoreaudit.registry import REGISTRIES, ColumnValue, Params, load_plugins


def _record(name: str, items, prompts=None) -> None:
    path = os.environ.get("SA_FAKE_LOG")
    delay = float(os.environ.get("SA_FAKE_SLEEP", "0") or 0)
    if delay:
        time.sleep(delay * len(items))
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            for k, it in enumerate(items):
                p = "" if prompts is None else prompts[k]
                fh.write(f"{name}\t{it.arm}/{it.image_id}\t{it.operator}\t{it.dose!r}\t{p}\n")
            fh.flush()
            os.fsync(fh.fileno())


class MeanParams(Params):
    gain: float = 1.0
    prompt: Optional[Union[str, ColumnValue]] = None


class FakeMean:
    """Mean pixel value times `gain` (a scorer whose every output a test can recompute)."""

    def __init__(self, params, device: str = "cpu", precision: str = "auto"):
        self.params = params
        self.device = device

    def weights_hash(self):
        return "0" * 64

    def score(self, images, prompts, items):
        _record("fake_mean", items)
        return np.array([self.params.gain * float(np.asarray(im, dtype=np.float64).mean()) for im in images])


class FakePrompt(FakeMean):
    """len(prompt) + mean/1000: checks which prompt each image got."""

    def score(self, images, prompts, items):
        _record("fake_prompt", items, prompts)
        return np.array([len(p) + float(np.mean(im)) / 1000.0 for im, p in zip(images, prompts)])


class FakePartial(FakeMean):
    """Like fake_mean, but has no score for images whose id ends in "1" (ScoreUnavailableForItem)."""

    def score(self, images, prompts, items):
        from scoreaudit.plugins.base import ScoreUnavailableForItem

        out = super().score(images, prompts, items)
        bad = {k: "too dull to score" for k, it in enumerate(items) if it.image_id.endswith("1")}
        if bad:
            out[list(bad)] = np.nan
            raise ScoreUnavailableForItem(bad, out)
        return out


class ItemParams(Params):
    measure: Optional[str] = None


class FakeItem:
    """10·u + 100·placebo + Δmeasure: reads only the ScoreItem (like planted scorers)."""

    def __init__(self, params, device: str = "cpu", precision: str = "auto"):
        self.params = params

    def weights_hash(self):
        return None

    def score(self, images, prompts, items):
        _record("fake_item", items)
        m = self.params.measure
        return np.array([10 * it.u + 100 * it.placebo + (it.measures.get(m, 0.0) if m else 0.0) for it in items])


class DarkParams(Params):
    threshold: int = 128


class FakeDark:
    """Pixels whose grey level is below `threshold` (empty on a white image)."""

    def __init__(self, params, device: str = "cpu"):
        self.params = params

    def compute(self, image, ctx):
        return np.asarray(image, dtype=np.float64).mean(axis=2) < self.params.threshold


class FakeFragile:
    """Adds `dose` to every pixel, but refuses 64-pixel-high images (an operator that fails on one image)."""

    def __init__(self, params, device: str = "cpu"):
        self.params = params

    def sweep(self, image, mask, doses, seed=0):
        if image.shape[0] == 64:
            raise ValueError("cannot handle a 64-pixel-high image")
        return [OperatorOutput(np.clip(image.astype(int) + int(d), 0, 255).astype(np.uint8)) for d in doses]


class CrashParams(Params):
    plan: str  # JSON file: {"once": [image ids], "always": [image ids], "markers": folder}


class FakeCrashy(FakeMean):
    """fake_mean, but kills its own process (like a segfault or an OOM kill) on chosen images:
    `once` images the first time only (a marker file remembers), `always` images on every try."""

    def score(self, images, prompts, items):
        import json
        from pathlib import Path

        plan = json.loads(Path(self.params.plan).read_text())
        for it in items:
            marker = Path(plan["markers"]) / it.image_id
            if it.image_id in plan.get("always", []) or (it.image_id in plan.get("once", []) and not marker.exists()):
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
                os._exit(17)
        return np.array([float(np.asarray(im, dtype=np.float64).mean()) for im in images])


FAKES = (("scorer", "fake_crashy", FakeCrashy, CrashParams, {"needs_prompt": False}),
         ("scorer", "fake_mean", FakeMean, MeanParams, {"needs_prompt": False}),
         ("scorer", "fake_prompt", FakePrompt, MeanParams, {"needs_prompt": True}),
         ("scorer", "fake_item", FakeItem, ItemParams, {"needs_prompt": False, "uses_item": True}),
         ("scorer", "fake_partial", FakePartial, MeanParams, {"needs_prompt": False}),
         ("region", "fake_dark", FakeDark, DarkParams, {}),
         ("operator", "fake_fragile", FakeFragile, None, {"identity": 0.0, "dose_range": (-50.0, 50.0),
                                                         "pixel_local": True}))


def register() -> None:
    """Add the fakes to the registries (tests remove them again: other test folders list every plugin)."""
    load_plugins()
    for kind, name, cls, params, meta in FAKES:
        reg = REGISTRIES[kind]
        if name not in reg:
            extra = {"requires": ()} if kind == "scorer" else {}
            kwargs = {"params": params} if params is not None else {}
            reg.register(name, version="1", **kwargs, **meta, **extra)(cls)


def unregister() -> None:
    for kind, name, *_ in FAKES:
        REGISTRIES[kind]._entries.pop(name, None)  # test-only: the registry has no public removal
