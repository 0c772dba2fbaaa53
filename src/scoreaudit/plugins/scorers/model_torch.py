"""Shared torch code of the model scorers: device, precision, batched preprocessing.

Imported only from the scorers' constructors (torch is heavy). Preprocessing
works on tensors built from the runtime's uint8 H×W×3 RGB arrays and follows
the official pipelines step by step (shortest-edge or longest-edge resize,
centre crop or pad, scaling, normalisation), including each library's
rounding rules. Resizing uses torch's antialiased bicubic, which is what the
official pipelines do when they resize tensors (HPSv2) and close to PIL's
bicubic when they resize PIL images (CLIP, open_clip, PickScore, ImageReward):
the resized image is rounded to uint8 as PIL does, and tests/models measure the
remaining score difference against the PIL pipelines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from scoreaudit.plugins.base import ScorerUnavailable

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def resolve_precision(device: str, ctor_precision: str, param_precision: str) -> torch.dtype:
    """The scorer's `precision:` wins over the runtime's; "auto" = fp16 on CUDA, fp32 on the CPU."""
    choice = param_precision if param_precision != "auto" else ctor_precision
    if choice in (None, "auto"):
        return torch.float16 if device.startswith("cuda") else torch.float32
    if choice not in DTYPES:
        raise ScorerUnavailable(f"unknown precision {choice!r}: use auto, fp32, fp16 or bf16")
    return DTYPES[choice]


def resolve_device(device: str) -> str:
    if device in (None, "auto"):
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ScorerUnavailable(
            f"device {device!r} was requested but torch sees no CUDA device; run with --device cpu"
        )
    return device


@dataclass(frozen=True)
class Preprocess:
    """How one official pipeline turns an image into the model's input tensor.

    mode "shortest": resize the short side to `size` (long side int(size·long/short),
    torchvision and HF agree), then centre-crop `crop`; crop offsets follow
    `crop_rule` ("torchvision": round((h−c)/2), "hf": (h−c)//2).
    mode "longest_pad" (HPSv2): resize the long side to `size` (round(dim·scale)),
    pad with zeros (before normalisation) to size×size, left/top = pad//2; the
    resize is done on the float [0, 1] tensor with no rounding, exactly as the
    official transform does.
    """

    size: int
    crop: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    mode: Literal["shortest", "longest_pad", "squash"] = "shortest"
    crop_rule: Literal["torchvision", "hf"] = "torchvision"
    interpolation: Literal["bicubic", "bilinear"] = "bicubic"
    round_uint8: bool = True  # the official pipeline resizes a uint8 PIL image

    def _resize(self, x: torch.Tensor, h: int, w: int) -> torch.Tensor:
        if x.shape[-2:] == (h, w):
            return x
        return F.interpolate(x, size=(h, w), mode=self.interpolation, align_corners=False, antialias=True)

    @staticmethod
    def _as_rgb(img: np.ndarray) -> np.ndarray:
        arr = np.asarray(img)
        if arr.ndim == 2:
            arr = np.repeat(arr[:, :, None], 3, axis=2)
        if arr.ndim != 3 or arr.shape[2] not in (3, 4) or arr.dtype != np.uint8:
            raise ValueError(f"expected a uint8 H×W×3 RGB image, got {arr.dtype} {arr.shape}")
        return arr[:, :, :3]

    def group(self, arrs: Sequence[np.ndarray], device: str) -> torch.Tensor:
        """Same-sized uint8 H×W×3 images → float32 N×3×crop×crop, normalised (one resize call per group)."""
        x = torch.from_numpy(np.stack(arrs)).to(device).permute(0, 3, 1, 2).float()  # np.stack copies
        h, w = arrs[0].shape[:2]
        if self.mode == "longest_pad":
            x = x / 255.0
            scale = self.size / float(max(h, w))
            if scale != 1.0:
                nh, nw = round(h * scale), round(w * scale)
                x = self._resize(x, nh, nw)
            else:
                nh, nw = h, w
            ph, pw = self.size - nh, self.size - nw
            if ph or pw:
                x = F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2), value=0.0)
        else:
            if self.mode == "squash":
                nh = nw = self.size
            elif h <= w:
                nh, nw = self.size, int(self.size * w / h)
            else:
                nh, nw = int(self.size * h / w), self.size
            x = self._resize(x, nh, nw)
            if self.round_uint8:
                x = x.round().clamp_(0, 255)
            x = x / 255.0
            c = self.crop
            if nh < c or nw < c:  # torchvision pads with zeros when the image is smaller than the crop
                ph, pw = max(c - nh, 0), max(c - nw, 0)
                x = F.pad(x, (pw // 2, (pw + 1) // 2, ph // 2, (ph + 1) // 2), value=0.0)
                nh, nw = x.shape[-2:]
            if self.crop_rule == "torchvision":
                top, left = int(round((nh - c) / 2.0)), int(round((nw - c) / 2.0))
            else:
                top, left = (nh - c) // 2, (nw - c) // 2
            x = x[..., top : top + c, left : left + c]
        mean = torch.tensor(self.mean, device=device).view(1, 3, 1, 1)
        std = torch.tensor(self.std, device=device).view(1, 3, 1, 1)
        return (x - mean) / std

    def one(self, img: np.ndarray, device: str) -> torch.Tensor:
        return self.group([self._as_rgb(img)], device)[0]

    def batch(self, images: Sequence[np.ndarray], device: str, dtype: torch.dtype) -> torch.Tensor:
        """Images of one shape are resized together (an audit's variants share their base image's size)."""
        arrs = [self._as_rgb(im) for im in images]
        by_shape: dict[tuple, list[int]] = {}
        for i, a in enumerate(arrs):
            by_shape.setdefault(a.shape, []).append(i)
        out = torch.empty((len(arrs), 3, self.crop, self.crop), device=device, dtype=torch.float32)
        for idx in by_shape.values():
            out[idx] = self.group([arrs[i] for i in idx], device)
        return out.to(dtype)


def chunks(n: int, size: int):
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def unique_prompts(prompts: Sequence[str] | None, n: int, scorer: str) -> tuple[list[str], list[int]]:
    """Distinct prompts and, per image, the index of its prompt (text is encoded once per prompt)."""
    if prompts is None or len(prompts) != n:
        raise ValueError(f"{scorer} needs one prompt per image (got {0 if prompts is None else len(prompts)} for {n})")
    order: dict[str, int] = {}
    idx = []
    for p in prompts:
        if not isinstance(p, str):
            raise ValueError(f"{scorer}: prompt {p!r} is not text")
        idx.append(order.setdefault(p, len(order)))
    return list(order), idx


def run_batched(
    images: Sequence[np.ndarray], batch_size: int, fn: Callable[[slice], torch.Tensor]
) -> np.ndarray:
    """Call `fn` on slices of at most `batch_size` images and return float64 scores."""
    out = np.empty(len(images), dtype=np.float64)
    for sl in chunks(len(images), batch_size):
        out[sl] = fn(sl).detach().float().cpu().numpy().reshape(-1)
    return out
