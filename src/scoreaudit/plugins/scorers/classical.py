"""Embedded no-reference scorers: no weights, no download, numpy only.

All three read the image as float64 in 0..255. Grey is ITU-R BT.601 luma,
Y' = 0.299 R + 0.587 G + 0.114 B, on the gamma-encoded sRGB values (no
rounding). Images of one shape are scored as one stacked array; a batch of
mixed shapes is scored per shape group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from scoreaudit.plugins.base import ScoreItem
from scoreaudit.registry import NoParams, scorers

BT601 = np.array([0.299, 0.587, 0.114])
DCT_BLOCK = 8
HIGH_FREQ_CUTOFF = 8  # DCT coefficient (u, v) is "high frequency" when u + v >= 8


def luma601(images: np.ndarray) -> np.ndarray:
    """BT.601 luma of a stack (N, H, W, 3) of 8-bit RGB images, float64 0..255."""
    return images[..., :3].astype(np.float64) @ BT601


def by_shape(images: Sequence[np.ndarray], fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Apply a stacked-batch function to each group of same-shaped images; scores in input order."""
    out = np.empty(len(images), dtype=np.float64)
    groups: dict[tuple[int, ...], list[int]] = {}
    for k, img in enumerate(images):
        groups.setdefault(np.shape(img), []).append(k)
    for idx in groups.values():
        out[idx] = fn(np.stack([np.asarray(images[k]) for k in idx]))
    return out


def laplacian_variance(grey: np.ndarray) -> np.ndarray:
    """Variance of the 4-neighbour Laplacian per image of a stack (N, H, W).

    Borders are mirrored without repeating the edge pixel (OpenCV's default
    BORDER_REFLECT_101), so this equals `cv2.Laplacian(g, cv2.CV_64F).var()`.
    """
    p = np.pad(grey, ((0, 0), (1, 1), (1, 1)), mode="reflect")
    lap = p[:, :-2, 1:-1] + p[:, 2:, 1:-1] + p[:, 1:-1, :-2] + p[:, 1:-1, 2:] - 4.0 * grey
    return lap.reshape(lap.shape[0], -1).var(axis=1)


def hasler_susstrunk(images: np.ndarray) -> np.ndarray:
    """Colourfulness M = σ_rgyb + 0.3·μ_rgyb per image (Hasler & Süsstrunk 2003).

    rg = R − G, yb = (R + G)/2 − B; σ_rgyb = sqrt(σ_rg² + σ_yb²) and
    μ_rgyb = sqrt(μ_rg² + μ_yb²), population moments over all pixels.
    """
    x = images[..., :3].astype(np.float64).reshape(images.shape[0], -1, 3)
    rg = x[..., 0] - x[..., 1]
    yb = 0.5 * (x[..., 0] + x[..., 1]) - x[..., 2]
    sigma = np.sqrt(rg.var(axis=1) + yb.var(axis=1))
    mu = np.sqrt(rg.mean(axis=1) ** 2 + yb.mean(axis=1) ** 2)
    return sigma + 0.3 * mu


def dct_matrix(n: int = DCT_BLOCK) -> np.ndarray:
    """Orthonormal DCT-II matrix C (coefficients = C · block · Cᵀ)."""
    k = np.arange(n)[:, None]
    i = np.arange(n)[None, :]
    c = np.sqrt(2.0 / n) * np.cos(np.pi * (2 * i + 1) * k / (2 * n))
    c[0] /= np.sqrt(2.0)
    return c


def high_frequency_share(grey: np.ndarray, cutoff: int = HIGH_FREQ_CUTOFF) -> np.ndarray:
    """Share of the AC energy of 8×8 block DCTs that lies at u + v >= cutoff, per image (N, H, W).

    The image is cropped to whole blocks; energies are pooled over all blocks
    before dividing. An image with no AC energy (flat) scores 0. White noise
    spreads its energy evenly over the 63 AC coefficients, so it scores
    28/63 ≈ 0.444 with the default cutoff.
    """
    n, h, w = grey.shape
    hb, wb = h // DCT_BLOCK, w // DCT_BLOCK
    if hb == 0 or wb == 0:
        return np.zeros(n)
    blocks = grey[:, : hb * DCT_BLOCK, : wb * DCT_BLOCK].reshape(n, hb, DCT_BLOCK, wb, DCT_BLOCK)
    c = dct_matrix()
    coef = np.einsum("ui,nbiwj,vj->nbwuv", c, blocks, c, optimize=True)
    energy = (coef**2).sum(axis=(1, 2))  # (n, 8, 8)
    u, v = np.indices((DCT_BLOCK, DCT_BLOCK))
    ac = energy.reshape(n, -1)[:, 1:].sum(axis=1)
    high = energy[:, (u + v) >= cutoff].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(ac > 1e-9 * DCT_BLOCK * DCT_BLOCK * hb * wb, high / ac, 0.0)
    return share


class _Classical:
    def __init__(self, params=None, device: str = "cpu", precision: str = "auto") -> None:
        self.params = params

    def weights_hash(self) -> str | None:
        return None

    def score(self, images: Sequence[np.ndarray], prompts: Sequence[str] | None,
              items: Sequence[ScoreItem]) -> np.ndarray:
        return by_shape(images, self._batch)

    def _batch(self, stack: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


@scorers.register("sharpness", params=NoParams, version="1", needs_prompt=False, requires=())
class Sharpness(_Classical):
    """Variance of the Laplacian of the grey image (higher = sharper).

    Grey = BT.601 luma in 0..255; 4-neighbour Laplacian with mirrored borders
    (as OpenCV's `cv2.Laplacian` with ksize 1). Blur lowers it, noise raises it.
    """

    def _batch(self, stack: np.ndarray) -> np.ndarray:
        return laplacian_variance(luma601(stack))


@scorers.register("colourfulness", params=NoParams, version="1", needs_prompt=False, requires=())
class Colourfulness(_Classical):
    """Hasler–Süsstrunk colourfulness M = σ_rgyb + 0.3·μ_rgyb (higher = more colourful).

    From rg = R − G and yb = (R + G)/2 − B on 0..255 sRGB values; 0 for any grey image.
    """

    def _batch(self, stack: np.ndarray) -> np.ndarray:
        return hasler_susstrunk(stack)


@scorers.register("incompressibility", params=NoParams, version="1", needs_prompt=False, requires=(),
                  differentiable=True)
class Incompressibility(_Classical):
    """Share of 8×8 block-DCT AC energy at high frequencies, u + v >= 8 (higher = more fine detail / noise).

    JPEG-style: BT.601 luma cut into 8×8 blocks, orthonormal DCT-II, energy
    pooled over blocks, DC excluded. 0 for a flat image, ≈ 0.444 (28/63) for
    white noise; blur lowers it. Differentiable (`score_tensor`, the same
    arithmetic in torch), so a probe can optimise it: the seed paper's
    distribution-free baseline.
    """

    def _batch(self, stack: np.ndarray) -> np.ndarray:
        return high_frequency_share(luma601(stack))

    def score_tensor(self, images, prompts=None):
        """The score of (N, 3, H, W) images in 0..1 with gradients (plugins/scorers/classical_torch.py)."""
        from scoreaudit.plugins.scorers.classical_torch import incompressibility_tensor

        return incompressibility_tensor(images, BT601, dct_matrix(), HIGH_FREQ_CUTOFF)
