"""Torch versions of every pixel operator, one function per registered name.

`TORCH_OPERATORS[name](params, image, mask, doses, seed, image_hash)` → list of
(image tensor, info) per dose, in order; `image` is a uint8 H×W×3 tensor on any device,
`mask` a bool H×W tensor or None, `image_hash` the image's content hash (noise seeds
its field with it, as the reference does). Semantics, identities, clipping and info
are plugins/operators.py's; the doses of a sweep are computed together where the
operator allows (CIELAB edits of all doses in one conversion). Info values are 0-d
tensors on the image's device (no host sync per variant).

Where the reference is OpenCV, the kernel is reproduced rather than approximated:
gaussian_blur uses OpenCV's kernel size and weights for 8-bit images, torso_warp
quantises source coordinates to 1/32 px as cv2.remap does, borders reflect
without repeating the edge (BORDER_REFLECT_101). JPEG goes through torchvision's
libjpeg encoder/decoder (nvJPEG on CUDA), whose 4:2:0 encoding is OpenCV's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from scoreaudit.plugins.gpu import colour

Output = tuple[torch.Tensor, dict]
TORCH_OPERATORS: dict[str, Callable[..., list[Output]]] = {}


def register(name: str):
    def deco(fn):
        TORCH_OPERATORS[name] = fn
        return fn
    return deco


def _identity(dose: float, identity: float) -> bool:
    from scoreaudit.compiler.doses import same_dose  # the one definition of "the same dose"

    return same_dose(dose, identity)


def _region(image: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return torch.ones(image.shape[:2], dtype=torch.bool, device=image.device)
    return mask.to(device=image.device, dtype=torch.bool)


def _zero(image: torch.Tensor, value: float = 0.0) -> torch.Tensor:
    return torch.tensor(value, dtype=torch.float64, device=image.device)


def _lab_sweep(image, mask, doses, identity, edit) -> list[Output]:
    region = _region(image, mask)
    todo = [i for i, d in enumerate(doses) if not _identity(d, identity)]
    outputs: list[Output] = [(image, {"gamut_clip": _zero(image)}) for _ in doses]
    if not todo or not bool(region.any()):
        return outputs
    lab = colour.srgb8_to_lab(image[region])  # N×3, once per sweep
    edited = torch.stack([edit(lab, float(doses[i])) for i in todo])  # D×N×3: one conversion for all doses
    rgb, clipped = colour.lab_to_srgb8(edited)
    for j, i in enumerate(todo):
        out = image.clone()
        out[region] = rgb[j]
        outputs[i] = (out, {"gamut_clip": clipped[j].double().mean()})
    return outputs


CHANNEL = {"L": 0, "a": 1, "b": 2}


@register("lab_shift")
def lab_shift(params, image, mask, doses, seed=0, image_hash=None) -> list[Output]:
    ch = CHANNEL[params.channel]

    def edit(lab, dose):
        out = lab.clone()
        out[:, ch] += dose
        return out

    return _lab_sweep(image, mask, doses, 0.0, edit)


@register("hue_rotate")
def hue_rotate(params, image, mask, doses, seed=0, image_hash=None) -> list[Output]:
    def edit(lab, dose):
        theta = math.radians(dose)
        c = torch.tensor(np.float32(math.cos(theta)), device=lab.device)
        s = torch.tensor(np.float32(math.sin(theta)), device=lab.device)
        out = lab.clone()
        out[:, 1] = lab[:, 1] * c - lab[:, 2] * s
        out[:, 2] = lab[:, 1] * s + lab[:, 2] * c
        return out

    return _lab_sweep(image, mask, doses, 0.0, edit)


def reflect101(idx: torch.Tensor, n: int) -> torch.Tensor:
    """Indices reflected into [0, n) without repeating the edge (OpenCV BORDER_REFLECT_101)."""
    if n == 1:
        return torch.zeros_like(idx)
    period = 2 * (n - 1)
    idx = torch.remainder(idx, period)
    return torch.where(idx > n - 1, period - idx, idx)


def opencv_gaussian_kernel(sigma: float) -> np.ndarray:
    """The 1-D kernel cv2.GaussianBlur uses on 8-bit images for ksize (0, 0): size round(6σ+1)|1."""
    import cv2

    ksize = int(round(sigma * 3 * 2 + 1)) | 1
    return cv2.getGaussianKernel(ksize, sigma, cv2.CV_64F).ravel()


def _blur(crop: torch.Tensor, sigma: float) -> torch.Tensor:
    """Separable Gaussian of a uint8 H×W×3 crop, reflected borders, rounded back to uint8."""
    k = torch.as_tensor(opencv_gaussian_kernel(sigma), dtype=torch.float32, device=crop.device)
    r = (len(k) - 1) // 2
    h, w = crop.shape[:2]
    x = crop.permute(2, 0, 1).float()  # 3×H×W
    cols = reflect101(torch.arange(-r, w + r, device=crop.device), w)
    x = x[:, :, cols].unsqueeze(1)  # 3×1×H×(W+2r)
    x = F.conv2d(x, k.view(1, 1, 1, -1))
    rows = reflect101(torch.arange(-r, h + r, device=crop.device), h)
    x = x[:, :, rows, :]
    x = F.conv2d(x, k.view(1, 1, -1, 1)).squeeze(1)
    return torch.round(x).clamp(0, 255).to(torch.uint8).permute(1, 2, 0)


@register("gaussian_blur")
def gaussian_blur(params, image, mask, doses, seed=0, image_hash=None) -> list[Output]:
    region = _region(image, mask)
    outputs: list[Output] = []
    any_region = bool(region.any())
    if any_region:
        ys = torch.nonzero(region.any(dim=1)).ravel()
        xs = torch.nonzero(region.any(dim=0)).ravel()
        ya, yb, xa, xb = int(ys[0]), int(ys[-1]), int(xs[0]), int(xs[-1])
    h, w = region.shape
    for dose in doses:
        if _identity(dose, 0.0) or not any_region:
            outputs.append((image, {}))
            continue
        r = int(math.ceil(4 * float(dose))) + 2  # the reference's crop: same pixels, less work
        y0, y1, x0, x1 = max(0, ya - r), min(h, yb + 1 + r), max(0, xa - r), min(w, xb + 1 + r)
        blurred = _blur(image[y0:y1, x0:x1], float(dose))
        out = image.clone()
        sub = region[y0:y1, x0:x1]
        window = out[y0:y1, x0:x1]
        window[sub] = blurred[sub]
        outputs.append((out, {}))
    return outputs


@register("jpeg")
def jpeg(params, image, mask, doses, seed=0, image_hash=None) -> list[Output]:
    import warnings

    with warnings.catch_warnings():  # torchvision 0.29 announces a move to TorchCodec on import
        warnings.simplefilter("ignore", DeprecationWarning)
        from torchvision.io import decode_jpeg, encode_jpeg

    region = _region(image, mask)
    chw = None
    outputs: list[Output] = []
    for dose in doses:
        quality = int(round(float(dose)))
        if quality >= 100 or not bool(region.any()):
            outputs.append((image, {}))
            continue
        if chw is None:
            chw = image.permute(2, 0, 1).contiguous()
        with warnings.catch_warnings():  # each call repeats the TorchCodec notice
            warnings.simplefilter("ignore", DeprecationWarning)
            data = encode_jpeg(chw, quality=max(1, quality))  # on CUDA: nvJPEG on the device
            decoded = decode_jpeg(data, device=data.device) if data.device.type == "cuda" else decode_jpeg(data)
        decoded = decoded.permute(1, 2, 0)
        out = image.clone()
        out[region] = decoded[region]
        outputs.append((out, {}))
    return outputs


@register("noise")
def noise(params, image, mask, doses, seed=0, image_hash=None) -> list[Output]:
    region = _region(image, mask)
    field = base = None
    outputs: list[Output] = []
    for dose in doses:
        if _identity(dose, 0.0) or not bool(region.any()):
            outputs.append((image, {}))
            continue
        if field is None:
            if image_hash is None:
                from scoreaudit.plugins.base import content_hash

                image_hash = content_hash(image.cpu().numpy())
            # The reference's field, bit for bit: numpy's generator seeded by (seed, content hash),
            # drawn once on the host and sent to the device once per sweep.
            rng = np.random.default_rng([int(seed) & (2**63 - 1), int(image_hash[:16], 16)])
            full = torch.from_numpy(rng.standard_normal(tuple(image.shape), dtype=np.float32)).to(image.device)
            field = full[region]
            base = image[region].float()
        noisy = torch.round(base + torch.tensor(np.float32(dose), device=image.device) * field).clamp(0, 255)
        out = image.clone()
        out[region] = noisy.to(torch.uint8)
        outputs.append((out, {}))
    return outputs


def _smooth_fade(t: torch.Tensor) -> torch.Tensor:
    t = t.clamp(0.0, 1.0)
    return 1.0 - t * t * (3.0 - 2.0 * t)


def torso_maps(mask: torch.Tensor, dose: float, falloff: float) -> torch.Tensor:
    """map_x (float32 H×W): the reference TorsoWarp.maps in float64 torch (map_y is the row index)."""
    h, w_img = mask.shape
    dev = mask.device
    cols = torch.nonzero(mask.any(dim=0)).ravel()
    rows = torch.nonzero(mask.any(dim=1)).ravel()
    x0, x1, y0, y1 = int(cols[0]), int(cols[-1]), int(rows[0]), int(rows[-1])
    c = (x0 + x1) / 2.0
    half = (x1 - x0 + 1) / 2.0
    edge = dose * half
    shift = (dose - 1.0) * half
    band_x = max(falloff * w_img, 1.5 * abs(shift) + 1.0)
    x = torch.arange(w_img, dtype=torch.float64, device=dev)
    r = (x - c).abs()
    inner = c + (x - c) / dose
    outer = x - torch.sign(x - c) * shift * _smooth_fade((r - edge) / band_x)
    disp_x = torch.where(r <= edge, inner, outer) - x
    y = torch.arange(h, dtype=torch.float64, device=dev)
    dist_y = torch.maximum(torch.maximum(y0 - y, y - y1), torch.zeros_like(y))
    band_y = max(falloff * h, 1.0)
    weight_y = torch.where(dist_y == 0, torch.ones_like(y), _smooth_fade(dist_y / band_y))
    return (x[None, :] + weight_y[:, None] * disp_x[None, :]).float()


def remap_rows(image: torch.Tensor, map_x: torch.Tensor) -> torch.Tensor:
    """cv2.remap(INTER_LINEAR, BORDER_REFLECT_101) for a map that moves pixels only along rows.

    OpenCV rounds each source coordinate to 1/32 px (INTER_TAB_SIZE) before interpolating;
    the same is done here, so the two differ only in the final rounding (≤ 1 level).
    """
    h, w = map_x.shape
    q = torch.round(map_x.double() * 32.0).long()
    x0 = torch.div(q, 32, rounding_mode="floor")
    fx = (q - x0 * 32).float() / 32.0
    i0, i1 = reflect101(x0, w), reflect101(x0 + 1, w)
    src = image.float() if image.ndim == 3 else image.float()[..., None]
    rows = torch.arange(h, device=image.device)[:, None]
    v = src[rows, i0] * (1.0 - fx)[..., None] + src[rows, i1] * fx[..., None]
    out = torch.round(v).clamp(0, 255).to(torch.uint8)
    return out if image.ndim == 3 else out[..., 0]


def _mean_width(mask: torch.Tensor) -> torch.Tensor:
    per_row = mask.sum(dim=1).double()
    used = per_row > 0
    return per_row[used].mean() if bool(used.any()) else torch.tensor(float("nan"), dtype=torch.float64)


@register("torso_warp")
def torso_warp(params, image, mask, doses, seed=0, image_hash=None) -> list[Output]:
    region = _region(image, mask)
    outputs: list[Output] = []
    for dose in doses:
        if _identity(dose, 1.0) or not bool(region.any()):
            outputs.append((image, {"deformation": _zero(image), "width_ratio": _zero(image, 1.0)}))
            continue
        map_x = torso_maps(region, float(dose), params.falloff)
        out = remap_rows(image, map_x)
        warped = remap_rows(region.to(torch.uint8) * 255, map_x) >= 128
        x = torch.arange(image.shape[1], dtype=torch.float32, device=image.device)[None, :]
        deformation = (map_x - x).abs().double().mean() / image.shape[1]
        outputs.append((out, {"deformation": deformation,
                              "width_ratio": _mean_width(warped) / _mean_width(region)}))
    return outputs


def sweep(name: str, params, image: torch.Tensor, mask: torch.Tensor | None, doses: Sequence[float],
          seed: int = 0, image_hash: str | None = None) -> list[Output]:
    """The torch sweep of operator `name` (KeyError names the operators without one)."""
    if name not in TORCH_OPERATORS:
        raise KeyError(f"operator {name!r} has no torch implementation (have: {', '.join(sorted(TORCH_OPERATORS))})")
    return TORCH_OPERATORS[name](params, image, mask, doses, seed, image_hash)
