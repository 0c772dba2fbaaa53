"""Torch versions of every measure and covariate, one class per registered name.

Each takes the plugin's params and offers `compute(ctx)` on a `TorchMeasureContext`
(the reference MeasureContext with tensors: uint8 H×W×3 images, bool masks, info
values as floats or 0-d tensors) and returns a 0-d float64 tensor on the image's
device, NaN where the reference gives NaN. The arithmetic is plugins/measures.py's:
per-pixel CIELAB (gpu.colour), numpy's median (mean of the two middle values),
the same leakage threshold.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from scoreaudit.plugins.gpu import colour

TORCH_MEASURES: dict[str, type] = {}
TORCH_COVARIATES: dict[str, type] = {}
CHANNEL = {"L": 0, "a": 1, "b": 2}


@dataclass(frozen=True)
class TorchMeasureContext:
    original: torch.Tensor
    variant: torch.Tensor
    masks: Mapping[str, torch.Tensor]
    operator_mask: torch.Tensor | None
    info: Mapping[str, Any] = field(default_factory=dict)
    dose: float = 0.0
    identity: float = 0.0


def _nan(like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(math.nan, dtype=torch.float64, device=like.device)


def _scalar(value, like: torch.Tensor) -> torch.Tensor:
    return torch.as_tensor(value, dtype=torch.float64, device=like.device).reshape(())


def median(x: torch.Tensor) -> torch.Tensor:
    """numpy's median: the mean of the two middle values for an even count (torch.median takes the lower)."""
    s, _ = torch.sort(x)
    n = s.numel()
    return (s[(n - 1) // 2].double() + s[n // 2].double()) / 2.0


def _region_lab(image: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    pixels = image.reshape(-1, 3) if mask is None else image[mask.to(device=image.device, dtype=torch.bool)]
    return colour.srgb8_to_lab(pixels)


def measure(name: str):
    def deco(cls):
        TORCH_MEASURES[name] = cls
        return cls
    return deco


def covariate(name: str):
    def deco(cls):
        TORCH_COVARIATES[name] = cls
        return cls
    return deco


@measure("ita")
class Ita:
    def __init__(self, params) -> None:
        self.params = params

    def compute(self, ctx: TorchMeasureContext) -> torch.Tensor:
        lab = _region_lab(ctx.variant, ctx.masks[self.params.region])
        if lab.shape[0] == 0:
            return _nan(ctx.variant)
        angles = torch.rad2deg(torch.atan2(lab[:, 0] - 50.0, lab[:, 2]))
        return median(angles) if self.params.stat == "median" else angles.double().mean()


@measure("mean_lab")
class MeanLab:
    def __init__(self, params) -> None:
        self.params = params

    def compute(self, ctx: TorchMeasureContext) -> torch.Tensor:
        mask = None if self.params.region is None else ctx.masks[self.params.region]
        lab = _region_lab(ctx.variant, mask)
        if lab.shape[0] == 0:
            return _nan(ctx.variant)
        return lab[:, CHANNEL[self.params.channel]].double().mean()


@measure("width_ratio")
class WidthRatio:
    def __init__(self, params) -> None:
        self.params = params

    def compute(self, ctx: TorchMeasureContext) -> torch.Tensor:
        mask = ctx.masks[self.params.region]
        like = ctx.variant
        if not bool(mask.any()):
            return _nan(like)
        if not float(ctx.info.get("deformation", 0.0)):
            return _scalar(1.0, like)
        op = ctx.operator_mask
        if "width_ratio" in ctx.info and op is not None and (op is mask or bool(torch.equal(op, mask))):
            return _scalar(ctx.info["width_ratio"], like)
        return _nan(like)


@covariate("gamut_clip")
class GamutClip:
    def __init__(self, params=None) -> None:
        self.params = params

    def compute(self, ctx: TorchMeasureContext) -> torch.Tensor:
        return _scalar(ctx.info.get("gamut_clip", 0.0), ctx.variant)


@covariate("warp_deformation")
class WarpDeformation:
    def __init__(self, params=None) -> None:
        self.params = params

    def compute(self, ctx: TorchMeasureContext) -> torch.Tensor:
        return _scalar(ctx.info.get("deformation", 0.0), ctx.variant)


@covariate("leakage")
class Leakage:
    def __init__(self, params) -> None:
        self.params = params

    def compute(self, ctx: TorchMeasureContext) -> torch.Tensor:
        like = ctx.variant
        if ctx.operator_mask is None or ctx.variant is ctx.original:
            return _scalar(0.0, like)
        outside = ~ctx.operator_mask.to(device=like.device, dtype=torch.bool)
        n_out = outside.sum()
        if int(n_out) == 0:
            return _scalar(0.0, like)
        diff = (ctx.original.short() - ctx.variant.short()).abs()
        changed = (diff > math.floor(self.params.tolerance)).any(dim=-1)
        return (changed & outside).sum().double() / n_out.double()


def build(kind: str, name: str, params):
    """The torch implementation of measure/covariate `name` (KeyError when it has none)."""
    table = TORCH_MEASURES if kind == "measure" else TORCH_COVARIATES
    if name not in table:
        raise KeyError(f"{kind} {name!r} has no torch implementation (have: {', '.join(sorted(table))})")
    return table[name](params)
