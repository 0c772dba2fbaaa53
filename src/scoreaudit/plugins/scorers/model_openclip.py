"""The open_clip-based scorers: LAION aesthetic, HPSv2, CLIP score.

Imported only from the scorers' constructors. Models are built with
open_clip from their architecture config, without letting open_clip fetch
anything, and the weights are loaded strictly from the files located by
`model_weights` (local path or Hugging Face cache).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import nn

from scoreaudit.plugins.base import ScorerUnavailable
from scoreaudit.plugins.scorers.model_torch import (
    Precision,
    Preprocess,
    PromptCache,
    frozen,
    plain,
    resolve_device,
    resolve_precision,
    run_batched,
    unique_prompts,
)
from scoreaudit.plugins.scorers.model_weights import WeightsError, load_state_dict, load_strict

OPENAI_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_STD = (0.26862954, 0.26130258, 0.27577711)


def _open_clip():
    try:
        import open_clip
    except ImportError as e:
        raise ScorerUnavailable(f"open_clip is not importable ({e}); install the models extra: pip install 'scoreaudit[models]'") from None
    return open_clip


class _NoRandomInitWarning(logging.Filter):
    """open_clip logs "initialized randomly" when built without weights; ours are loaded right after."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "initialized randomly" not in record.getMessage()


def build_open_clip(name: str, quick_gelu: bool = False) -> nn.Module:
    """An open_clip model of architecture `name` (built-in name or local-dir:DIR), random weights, fp32, CPU.

    quick_gelu: the weights were trained with QuickGELU (open_clip's pretrained table says so
    for the OpenAI tags); the model is built with it, as the original CLIP ran.
    """
    open_clip = _open_clip()
    quiet = _NoRandomInitWarning()
    logging.getLogger().addFilter(quiet)
    try:
        if name.startswith("local-dir:"):
            return open_clip.create_model(name, pretrained=None, load_weights=False, force_quick_gelu=quick_gelu)
        return open_clip.create_model(name, pretrained=None, force_quick_gelu=quick_gelu)
    except Exception as e:  # noqa: BLE001 - unknown name or bad config: a user error
        raise ScorerUnavailable(f"open_clip cannot build model {name!r}: {e}") from None
    finally:
        logging.getLogger().removeFilter(quiet)


def load_open_clip_weights(model: nn.Module, path: Path, label: str) -> None:
    """The official checkpoint into the model, strictly (only open_clip's own harmless fix-ups)."""
    state = load_state_dict(path, label)
    if "logit_scale" in state and state["logit_scale"].ndim != model.logit_scale.ndim:
        state["logit_scale"] = state["logit_scale"].reshape(model.logit_scale.shape)
    optional = [k for k in model.state_dict() if k.endswith("position_ids") or k == "logit_bias"]
    load_strict(model, state, label, path, optional=optional)


# open_clip resize modes scoreaudit reproduces (longest_pad is not)
_RESIZE_MODES: dict[str, Literal["shortest", "squash"]] = {"shortest": "shortest", "squash": "squash"}


def open_clip_preprocess(model: nn.Module, tag_cfg: dict | None) -> Preprocess:
    """open_clip's eval transform (image_transform_v2) as a tensor pipeline."""
    cfg = dict(getattr(model.visual, "preprocess_cfg", {}) or {})
    if tag_cfg:
        cfg.update({k: v for k, v in tag_cfg.items() if k in ("mean", "std", "interpolation", "resize_mode")})
    size = model.visual.image_size
    size = size[0] if isinstance(size, (tuple, list)) else size
    mode = _RESIZE_MODES.get(cfg.get("resize_mode", "shortest"))
    if mode is None:
        raise ScorerUnavailable(f"open_clip resize_mode {cfg.get('resize_mode')!r} is not supported by scoreaudit")
    return Preprocess(
        size=int(size),
        crop=int(size),
        mean=tuple(cfg.get("mean", OPENAI_MEAN)),
        std=tuple(cfg.get("std", OPENAI_STD)),
        mode=mode,
        crop_rule="torchvision",
        interpolation=cfg.get("interpolation", "bicubic"),
    )


class OpenClipPair:
    """An open_clip model (fp32 weights) on its device with image/text encoders and prompt-embedding cache.

    Image forwards run at the scorer's `precision` (autocast for fp16/bf16); text is encoded
    once per prompt, in fp32 (it costs nothing per image, so it stays exact).
    """

    def __init__(self, model: nn.Module, tokenizer, pre: Preprocess, device: str, precision: Precision):
        self.device, self.precision = device, precision
        self.dtype = torch.float32  # weights and inputs; autocast lowers the forward's ops
        self.model = model.to(device=device, dtype=torch.float32).eval()
        self.tokenizer = tokenizer
        self.pre = pre
        self._text = PromptCache(self._encode_text)

    @torch.inference_mode()
    def image_features(self, images: Sequence[np.ndarray]) -> torch.Tensor:
        x = self.pre.batch(images, self.device, self.dtype)
        with self.precision.forward():
            return self.model.encode_image(x).float()

    def _encode_text(self, prompts: list[str]) -> torch.Tensor:
        return self.model.encode_text(self.tokenizer(prompts).to(self.device)).float()

    def image_features_tensor(self, x: torch.Tensor) -> torch.Tensor:
        """Differentiable image embeddings of float N×3×H×W images in [0, 1] (the probes' path)."""
        frozen(self.model)
        x = self.pre.tensor(x.to(self.device), self.dtype)
        with self.precision.for_gradients().forward():
            return self.model.encode_image(x).float()

    @torch.inference_mode()
    def text_features(self, prompts: Sequence[str]) -> torch.Tensor:
        """One embedding per prompt; each distinct prompt is encoded once per scorer, across batches."""
        return torch.stack(self._text.get(prompts))


def _normalise(x: torch.Tensor) -> torch.Tensor:
    """x / ‖x‖ with a zero norm left as 1 (the LAION reference's numpy `normalized`)."""
    n = x.norm(dim=-1, keepdim=True)
    return x / torch.where(n == 0, torch.ones_like(n), n)


# ---------------------------------------------------------------- LAION aesthetic


class LaionHead(nn.Module):
    """The official MLP: Linear, Dropout, Linear, Dropout, Linear, Dropout, Linear, Linear (no activations)."""

    def __init__(self, dims: Sequence[int]):
        super().__init__()
        d = list(dims)  # [in, 1024, 128, 64, 16, 1] officially
        self.layers = nn.Sequential(
            nn.Linear(d[0], d[1]), nn.Dropout(0.2), nn.Linear(d[1], d[2]), nn.Dropout(0.2),
            nn.Linear(d[2], d[3]), nn.Dropout(0.1), nn.Linear(d[3], d[4]), nn.Linear(d[4], d[5]),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


LAION_HEAD_KEYS = [f"layers.{i}.{p}" for i in (0, 2, 4, 6, 7) for p in ("weight", "bias")]


def load_laion_head(path: Path) -> LaionHead:
    state = load_state_dict(path, "laion_aesthetic head")
    if not all(k in state for k in LAION_HEAD_KEYS):
        raise WeightsError(
            f"laion_aesthetic head: {path} lacks the official keys layers.{{0,2,4,6,7}}.{{weight,bias}} "
            f"(found {', '.join(sorted(state)[:5])}); pass sac+logos+ava1-l14-linearMSE.pth unchanged"
        )
    w = [state[f"layers.{i}.weight"] for i in (0, 2, 4, 6, 7)]
    dims = [w[0].shape[1]] + [t.shape[0] for t in w]
    head = LaionHead(dims)
    load_strict(head, state, "laion_aesthetic head", path)
    return head.eval()


class LaionImpl:
    def __init__(self, files: dict, device: str, precision: Precision, arch: str, tag: str, batch_size: int):
        open_clip = _open_clip()
        model = build_open_clip(arch)
        load_open_clip_weights(model, files["clip"], f"laion_aesthetic CLIP {arch}")
        self.head = load_laion_head(files["head"]).to(device)  # fp32, as the reference runs it
        embed = model.visual.output_dim
        if self.head.layers[0].in_features != embed:
            raise WeightsError(
                f"laion_aesthetic: the head takes {self.head.layers[0].in_features}-d embeddings but {arch} "
                f"gives {embed}-d ones; the head and the CLIP weights do not belong together"
            )
        pre = open_clip_preprocess(model, open_clip.get_pretrained_cfg(arch, tag))
        self.clip = OpenClipPair(model, None, pre, device, precision)
        self.batch_size = batch_size

    @torch.inference_mode()
    def score(self, images, prompts) -> np.ndarray:
        def fn(sl):
            return self.head(_normalise(self.clip.image_features(images[sl])))

        return run_batched(images, self.batch_size, fn)

    def score_tensor(self, x: torch.Tensor, prompts) -> torch.Tensor:
        frozen(self.head)
        return self.head(_normalise(self.clip.image_features_tensor(x))).reshape(-1)


# ---------------------------------------------------------------- HPSv2


def hps_preprocess(model: nn.Module) -> Preprocess:
    """HPSv2's `preprocess_val` (light_augmentation=True): ToTensor, ResizeMaxSize (longest side, zero pad), Normalize."""
    size = model.visual.image_size
    size = size[0] if isinstance(size, (tuple, list)) else size
    return Preprocess(size=int(size), crop=int(size), mean=OPENAI_MEAN, std=OPENAI_STD, mode="longest_pad", round_uint8=False)


class HpsImpl:
    def __init__(self, files: dict, device: str, precision: Precision, arch: str, batch_size: int):
        open_clip = _open_clip()
        model = build_open_clip(arch)
        load_open_clip_weights(model, files["checkpoint"], "hpsv2")
        self.clip = OpenClipPair(model, open_clip.get_tokenizer(arch), hps_preprocess(model), device, precision)
        self.batch_size = batch_size

    @torch.inference_mode()
    def score(self, images, prompts) -> np.ndarray:
        uniq, idx = unique_prompts(prompts, len(images), "hpsv2")
        text = _normalise(self.clip.text_features(uniq))
        idx_t = torch.tensor(idx, device=text.device)

        def fn(sl):
            img = _normalise(self.clip.image_features(images[sl]))
            return (img * text[idx_t[sl]]).sum(-1)

        return run_batched(images, self.batch_size, fn)

    def score_tensor(self, x: torch.Tensor, prompts) -> torch.Tensor:
        uniq, idx = unique_prompts(prompts, len(x), "hpsv2")
        text = plain(_normalise(self.clip.text_features(uniq)))
        img = _normalise(self.clip.image_features_tensor(x))
        return (img * text[torch.tensor(idx, device=text.device)]).sum(-1)


# ---------------------------------------------------------------- CLIP score


def read_open_clip_config(folder: Path) -> dict:
    try:
        return json.loads((folder / "open_clip_config.json").read_text())
    except (OSError, ValueError) as e:
        raise ScorerUnavailable(f"clip_score: cannot read {folder / 'open_clip_config.json'} ({e})") from None


class ClipScoreImpl:
    def __init__(self, files: dict, device: str, precision: Precision, arch: str, tag: str | None, batch_size: int):
        open_clip = _open_clip()
        folder = files.get("folder")
        name = f"local-dir:{folder}" if folder is not None else arch
        tag_cfg = open_clip.get_pretrained_cfg(arch, tag) if (folder is None and tag) else None
        model = build_open_clip(name, quick_gelu=bool((tag_cfg or {}).get("quick_gelu", False)))
        load_open_clip_weights(model, files["checkpoint"], f"clip_score {arch}")
        pre = open_clip_preprocess(model, tag_cfg)
        self.clip = OpenClipPair(model, open_clip.get_tokenizer(name), pre, device, precision)
        self.batch_size = batch_size

    @torch.inference_mode()
    def score(self, images, prompts) -> np.ndarray:
        uniq, idx = unique_prompts(prompts, len(images), "clip_score")
        text = _normalise(self.clip.text_features(uniq))
        idx_t = torch.tensor(idx, device=text.device)

        def fn(sl):
            img = _normalise(self.clip.image_features(images[sl]))
            return 100.0 * (img * text[idx_t[sl]]).sum(-1).clamp(min=0)

        return run_batched(images, self.batch_size, fn)

    def score_tensor(self, x: torch.Tensor, prompts) -> torch.Tensor:
        uniq, idx = unique_prompts(prompts, len(x), "clip_score")
        text = plain(_normalise(self.clip.text_features(uniq)))
        img = _normalise(self.clip.image_features_tensor(x))
        return 100.0 * (img * text[torch.tensor(idx, device=text.device)]).sum(-1).clamp(min=0)


__all__ = ["ClipScoreImpl", "HpsImpl", "LaionImpl", "resolve_device", "resolve_precision"]
