"""Tiny models for the probe tests: a one-step SD pipeline, ImageReward and a CLIP for `clip_attribute`."""

from __future__ import annotations

import os
import shutil
from functools import lru_cache
from pathlib import Path

from scoreaudit.testing.tiny_diffusion import save_tiny_sd
from scoreaudit.testing.tiny_models import build_pickscore, build_prompt_scorers

SESSION = Path(os.environ["HF_HUB_CACHE"]).parent


@lru_cache(maxsize=None)
def tiny_pipeline() -> Path:
    """A tiny SD pipeline folder (built once per test session)."""
    folder = SESSION / "probe-sd"
    if not (folder / "model_index.json").exists():
        save_tiny_sd(SESSION / "probe-sd.tmp", seed=3)
        os.replace(SESSION / "probe-sd.tmp", folder)
    return folder


@lru_cache(maxsize=None)
def tiny_scorers() -> Path:
    """ImageReward and PickScore in the session's fake HF cache; a CLIPModel folder for clip_attribute."""
    cache = Path(os.environ["HF_HUB_CACHE"])
    build_prompt_scorers(cache, seed=2)
    local = SESSION / "probe-local"
    if not (local / "pickscore" / "config.json").exists():
        build_pickscore(cache, local, seed=2)
    return local / "pickscore"


def project(tmp: Path, body: str, prompts=("a portrait photo of a person", "a photo of a nurse")) -> Path:
    """A spec folder with the tiny pipeline, the CLIP folder and a prompts file; returns the spec path."""
    shutil.copytree(tiny_pipeline(), tmp / "sd", dirs_exist_ok=True)
    shutil.copytree(tiny_scorers(), tmp / "clip", dirs_exist_ok=True)
    (tmp / "prompts.txt").write_text("\n".join(prompts) + "\n")
    spec = tmp / "probe.audit"
    spec.write_text(body)
    return spec
