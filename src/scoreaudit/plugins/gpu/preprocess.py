"""A scorer's preprocessing (plugins/scorers/model_torch.Preprocess) applied to images already on the device.

The reference `Preprocess.batch` takes numpy images and resizes uint8 images with torch's
uint8 antialiased kernel on the CPU, as PIL does. Here the uint8 H×W×3 tensors stay where
they are: on the CPU the same uint8 kernel runs (identical output); on CUDA, which has no
uint8 antialiased kernel, the resize runs in float32 and is rounded and clamped to 8-bit
levels before the crop, so it differs from the CPU reference by at most one level on a few
pixels (tests/gpu hold it to 1/255). HPSv2's float pipeline is the reference's exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def group(pre, x: torch.Tensor, uint8_kernel: bool | None = None) -> torch.Tensor:
    """uint8 N×H×W×3 tensor (one shape) → float32 N×3×crop×crop normalised, on x's device."""
    if uint8_kernel is None:
        uint8_kernel = x.device.type == "cpu"
    return pre.tensor_group(x, x.device, uint8_kernel)


def batch(pre, images: Sequence[torch.Tensor], dtype: torch.dtype, uint8_kernel: bool | None = None) -> torch.Tensor:
    """Device images of any shapes → the model input; same-shaped images are resized together."""
    by_shape: dict[tuple, list[int]] = {}
    for i, im in enumerate(images):
        by_shape.setdefault(tuple(im.shape), []).append(i)
    if len(by_shape) == 1:  # one shape (the usual batch): no copy into a second buffer, as the host path
        return group(pre, torch.stack(list(images)), uint8_kernel).to(dtype)
    device = images[0].device
    out = torch.empty((len(images), 3, pre.crop, pre.crop), device=device, dtype=torch.float32)
    for idx in by_shape.values():
        out[idx] = group(pre, torch.stack([images[i] for i in idx]), uint8_kernel)
    return out.to(dtype)
