"""Fast sRGB (D65) ↔ CIELAB in float32 numpy, with gamut clipping that is counted.

Why not scikit-image: `rgb2lab`/`lab2rgb` work in float64 on whole images and
take ~80 ms per 512² round trip; operators convert only the region's pixels,
for every dose at once, so this module works on any `(..., 3)` array and keeps
float32 throughout. The constants are scikit-image's (sRGB primaries, the
2° D65 white point (0.95047, 1, 1.08883), the 0.008856 / 7.787 CIE
linearisation), so results agree with `skimage.color.rgb2lab` / `lab2rgb` to
float32 precision (tests assert max |ΔL*| < 0.5; in practice ~1e-4).

Entry points:
- `srgb8_to_lab(rgb_uint8)`: 8-bit sRGB → L*a*b* (exact 256-entry linearisation table).
- `srgb_to_lab(rgb_float)`: sRGB in [0, 1] → L*a*b*.
- `lab_to_srgb(lab)`: → (sRGB float32 clipped into [0, 1], clipped mask).
- `lab_to_srgb8(lab)`: → (uint8 sRGB, clipped mask).

A pixel counts as *clipped* when clipping into the sRGB cube changes its
8-bit value, i.e. some encoded channel lies below −0.5/255 or above
1 + 0.5/255 before clipping (colours that merely round into range are not
clipped). Operators report the share of clipped region pixels as
`info["gamut_clip"]`.
"""

from __future__ import annotations

import numpy as np

# sRGB (D65) linear RGB → XYZ, as in skimage.color.colorconv.xyz_from_rgb.
XYZ_FROM_RGB = np.array(
    [
        [0.412453, 0.357580, 0.180423],
        [0.212671, 0.715160, 0.072169],
        [0.019334, 0.119193, 0.950227],
    ],
    dtype=np.float64,
)
RGB_FROM_XYZ = np.linalg.inv(XYZ_FROM_RGB)
WHITE_D65 = np.array([0.95047, 1.0, 1.08883], dtype=np.float64)

_EPS = 0.008856  # CIE (6/29)^3, as scikit-image rounds it
_KAPPA = 7.787  # CIE linear-segment slope (skimage's constant)
_F_BREAK = 0.2068966  # f(_EPS): where the inverse switches segment

# Fold the white point into the matrices: XYZ/white in one multiply.
_M_FWD = (XYZ_FROM_RGB / WHITE_D65[:, None]).T.astype(np.float32)  # rows→ x/xw, y/yw, z/zw
_M_INV = (RGB_FROM_XYZ * WHITE_D65[None, :]).T.astype(np.float32)

_HALF_LEVEL = 0.5 / 255.0


def _srgb_decode(v: np.ndarray) -> np.ndarray:
    v = v.astype(np.float32, copy=False)
    return np.where(v > 0.04045, ((v + 0.055) / 1.055) ** np.float32(2.4), v / np.float32(12.92)).astype(
        np.float32, copy=False
    )


# Exact linearisation of every 8-bit level (computed in float64, stored float32).
_LUT8 = np.where(
    (np.arange(256) / 255.0) > 0.04045,
    ((np.arange(256) / 255.0 + 0.055) / 1.055) ** 2.4,
    (np.arange(256) / 255.0) / 12.92,
).astype(np.float32)


def _linear_to_lab(lin: np.ndarray) -> np.ndarray:
    shape = lin.shape
    t = lin.reshape(-1, 3) @ _M_FWD  # x/xw, y/yw, z/zw
    f = np.where(t > _EPS, np.cbrt(t), t * np.float32(_KAPPA) + np.float32(16.0 / 116.0))
    out = np.empty_like(f)
    out[:, 0] = 116.0 * f[:, 1] - 16.0
    out[:, 1] = 500.0 * (f[:, 0] - f[:, 1])
    out[:, 2] = 200.0 * (f[:, 1] - f[:, 2])
    return out.reshape(shape)


def srgb8_to_lab(rgb: np.ndarray) -> np.ndarray:
    """uint8 sRGB `(..., 3)` → float32 L*a*b* (L* in [0, 100])."""
    if rgb.dtype != np.uint8:
        raise TypeError(f"srgb8_to_lab expects uint8, got {rgb.dtype}")
    return _linear_to_lab(_LUT8[rgb])


def srgb_to_lab(rgb: np.ndarray) -> np.ndarray:
    """sRGB float in [0, 1] `(..., 3)` → float32 L*a*b*."""
    return _linear_to_lab(_srgb_decode(np.asarray(rgb, dtype=np.float32)))


def _lab_to_encoded(lab: np.ndarray) -> np.ndarray:
    """L*a*b* → sRGB-encoded float32, NOT clipped (may leave [0, 1])."""
    shape = lab.shape
    lab = np.asarray(lab, dtype=np.float32).reshape(-1, 3)
    fy = (lab[:, 0] + np.float32(16.0)) / np.float32(116.0)
    f = np.empty_like(lab)
    f[:, 0] = lab[:, 1] / np.float32(500.0) + fy
    f[:, 1] = fy
    f[:, 2] = np.maximum(fy - lab[:, 2] / np.float32(200.0), 0.0)  # skimage clamps z at 0
    t = np.where(f > _F_BREAK, f * f * f, (f - np.float32(16.0 / 116.0)) / np.float32(_KAPPA))
    lin = t @ _M_INV
    pos = np.maximum(lin, 0.0)
    enc = np.where(
        lin > 0.0031308,
        np.float32(1.055) * pos ** np.float32(1.0 / 2.4) - np.float32(0.055),
        lin * np.float32(12.92),
    ).astype(np.float32, copy=False)
    return enc.reshape(shape)


def _clip(enc: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    clipped = np.asarray(((enc < -_HALF_LEVEL) | (enc > 1.0 + _HALF_LEVEL)).any(axis=-1))
    return np.clip(enc, 0.0, 1.0), clipped


def lab_to_srgb(lab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L*a*b* `(..., 3)` → (sRGB float32 in [0, 1], bool `(...)` mask of clipped pixels)."""
    return _clip(_lab_to_encoded(lab))


def lab_to_srgb8(lab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """L*a*b* `(..., 3)` → (uint8 sRGB, bool `(...)` mask of pixels that were clipped)."""
    enc, clipped = _clip(_lab_to_encoded(lab))
    return np.rint(enc * np.float32(255.0)).astype(np.uint8), clipped


def clip_share(clipped: np.ndarray) -> float:
    """Share of pixels clipped (0.0 for an empty selection)."""
    return float(clipped.mean()) if clipped.size else 0.0
