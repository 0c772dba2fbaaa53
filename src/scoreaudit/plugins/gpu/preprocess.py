"""A scorer's preprocessing (plugins/scorers/model_torch.Preprocess) applied to images already on the device.

The reference `Preprocess.batch` takes numpy images and resizes uint8 images with torch's
uint8 antialiased kernel on the CPU, as PIL does. Here the uint8 H×W×3 tensors stay where
they are: on the CPU the same uint8 kernel runs (identical output); on CUDA, which has no
uint8 antialiased kernel, the resize runs in float32 and is rounded and clamped to 8-bit
levels before the crop, so it differs from the CPU reference by at most one level on a few
pixels (tests/gpu hold it to 1/255). HPSv2's float pipeline is the reference's exactly.
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F


def _uint8_resize(pre, x: torch.Tensor, h: int, w: int, uint8_kernel: bool) -> torch.Tensor:
    if x.shape[-2:] == (h, w):
        return x
    if uint8_kernel:
        return F.interpolate(x, size=(h, w), mode=pre.interpolation, align_corners=False, antialias=True)
    y = F.interpolate(x.float(), size=(h, w), mode=pre.interpolation, align_corners=False, antialias=True)
    return torch.round(y).clamp(0, 255)


def group(pre, x: torch.Tensor, uint8_kernel: bool | None = None) -> torch.Tensor:
    """uint8 N×H×W×3 tensor (one shape) → float32 N×3×crop×crop normalised, on x's device."""
    device = x.device
    if uint8_kernel is None:
        uint8_kernel = device.type == "cpu"
    x = x.permute(0, 3, 1, 2)
    h, w = x.shape[-2:]
    if pre.mode == "longest_pad":
        x = x.float().div_(255.0)
        scale = pre.size / float(max(h, w))
        nh, nw = (round(h * scale), round(w * scale)) if scale != 1.0 else (h, w)
        x = pre._resize(x, nh, nw)
        ph, pw = pre.size - nh, pre.size - nw
        if ph or pw:
            x = F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2), value=0.0)
        mean = torch.tensor(pre.mean, device=device).view(1, 3, 1, 1)
        std = torch.tensor(pre.std, device=device).view(1, 3, 1, 1)
        return (x - mean) / std
    if pre.mode == "squash":
        nh = nw = pre.size
    elif h <= w:
        nh, nw = pre.size, int(pre.size * w / h)
    else:
        nh, nw = int(pre.size * h / w), pre.size
    if pre.round_uint8:
        x = _uint8_resize(pre, x, nh, nw, uint8_kernel)
    else:
        x = pre._resize(x.float(), nh, nw)
    c = pre.crop
    if nh < c or nw < c:
        ph, pw = max(c - nh, 0), max(c - nw, 0)
        x = F.pad(x, (pw // 2, (pw + 1) // 2, ph // 2, (ph + 1) // 2), value=0)
        nh, nw = x.shape[-2:]
    if pre.crop_rule == "torchvision":
        top, left = int(round((nh - c) / 2.0)), int(round((nw - c) / 2.0))
    else:
        top, left = (nh - c) // 2, (nw - c) // 2
    x = x[..., top: top + c, left: left + c]
    a, b = pre._affine(device)
    return torch.addcmul(b, x.float(), a)


def batch(pre, images: Sequence[torch.Tensor], dtype: torch.dtype, uint8_kernel: bool | None = None) -> torch.Tensor:
    """Device images of any shapes → the model input; same-shaped images are resized together."""
    by_shape: dict[tuple, list[int]] = {}
    for i, im in enumerate(images):
        by_shape.setdefault(tuple(im.shape), []).append(i)
    device = images[0].device
    out = torch.empty((len(images), 3, pre.crop, pre.crop), device=device, dtype=torch.float32)
    for idx in by_shape.values():
        out[idx] = group(pre, torch.stack([images[i] for i in idx]), uint8_kernel)
    return out.to(dtype)
