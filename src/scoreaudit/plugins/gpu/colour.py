"""sRGB (D65) ↔ CIELAB in float32 torch: the same constants, rounding and clip rule as plugins.colour."""

from __future__ import annotations

import torch

from scoreaudit.plugins import colour as ref

_EPS, _KAPPA, _F_BREAK, _HALF = ref._EPS, ref._KAPPA, ref._F_BREAK, ref._HALF_LEVEL


_CONSTS: dict[tuple[int, str], torch.Tensor] = {}


def _const(array, like: torch.Tensor) -> torch.Tensor:
    """A float32 copy of a reference constant on like's device, made once per device (not one upload per call)."""
    key = (id(array), str(like.device))
    t = _CONSTS.get(key)
    if t is None:
        t = _CONSTS[key] = torch.as_tensor(array, dtype=torch.float32, device=like.device)
    return t


def srgb8_to_lab(rgb: torch.Tensor) -> torch.Tensor:
    """uint8 sRGB `(..., 3)` → float32 L*a*b* (the exact 256-level linearisation table)."""
    if rgb.dtype != torch.uint8:
        raise TypeError(f"srgb8_to_lab expects uint8, got {rgb.dtype}")
    lut = _const(ref._LUT8, rgb)
    return linear_to_lab(lut[rgb.long()])


def linear_to_lab(lin: torch.Tensor) -> torch.Tensor:
    shape = lin.shape
    t = lin.reshape(-1, 3) @ _const(ref._M_FWD, lin)
    f = torch.where(t > _EPS, t.clamp(min=0).pow(1.0 / 3.0), t * _KAPPA + 16.0 / 116.0)
    out = torch.stack((116.0 * f[:, 1] - 16.0, 500.0 * (f[:, 0] - f[:, 1]), 200.0 * (f[:, 1] - f[:, 2])), dim=1)
    return out.reshape(shape)


def lab_to_encoded(lab: torch.Tensor) -> torch.Tensor:
    """L*a*b* → sRGB-encoded float32, not clipped."""
    shape = lab.shape
    lab = lab.reshape(-1, 3).float()
    fy = (lab[:, 0] + 16.0) / 116.0
    f = torch.stack((lab[:, 1] / 500.0 + fy, fy, torch.clamp(fy - lab[:, 2] / 200.0, min=0.0)), dim=1)
    t = torch.where(f > _F_BREAK, f * f * f, (f - 16.0 / 116.0) / _KAPPA)
    lin = t @ _const(ref._M_INV, lab)
    enc = torch.where(lin > 0.0031308, 1.055 * lin.clamp(min=0).pow(1.0 / 2.4) - 0.055, lin * 12.92)
    return enc.reshape(shape)


def lab_to_srgb8(lab: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """L*a*b* → (uint8 sRGB, bool mask of pixels clipped into the gamut)."""
    enc = lab_to_encoded(lab)
    clipped = ((enc < -_HALF) | (enc > 1.0 + _HALF)).any(dim=-1)
    return torch.round(enc.clamp(0.0, 1.0) * 255.0).to(torch.uint8), clipped
