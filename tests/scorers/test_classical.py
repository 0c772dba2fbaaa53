"""Classical scorers against independent computations (OpenCV, scipy, hand arithmetic)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from scipy.fft import dctn

from scoreaudit.plugins.scorers.classical import (
    Colourfulness,
    Incompressibility,
    Sharpness,
    dct_matrix,
    high_frequency_share,
    luma601,
)


def _rgb(seed: int, shape=(48, 64)) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (*shape, 3)).astype(np.uint8)


def _smooth(seed: int, shape=(64, 80)) -> np.ndarray:
    """A natural-ish image: smoothed noise plus a gradient, so it has structure at every scale."""
    img = cv2.GaussianBlur(_rgb(seed, shape).astype(np.float32), (0, 0), 2.0)
    img += np.linspace(0, 60, shape[1], dtype=np.float32)[None, :, None]
    return np.clip(img, 0, 255).astype(np.uint8)


def test_luma_is_bt601_as_opencv():
    img = _rgb(1)
    ref = cv2.cvtColor(img.astype(np.float32), cv2.COLOR_RGB2GRAY)
    np.testing.assert_allclose(luma601(img[None])[0], ref, rtol=1e-6, atol=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sharpness_equals_opencv_laplacian_variance(seed):
    imgs = [_rgb(seed), _smooth(seed)]
    got = Sharpness().score(imgs, None, [])
    for g, img in zip(got, imgs):
        grey = cv2.cvtColor(img.astype(np.float32), cv2.COLOR_RGB2GRAY).astype(np.float64)
        ref = cv2.Laplacian(grey, cv2.CV_64F).var()
        assert g == pytest.approx(ref, rel=1e-6)
    assert got.dtype == np.float64


def test_sharpness_direction_blur_lowers_noise_raises():
    img = _smooth(3)
    blurred = cv2.GaussianBlur(img, (0, 0), 1.5)
    noisy = np.clip(img + np.random.default_rng(0).normal(0, 10, img.shape), 0, 255).astype(np.uint8)
    s = Sharpness().score([img, blurred, noisy], None, [])
    assert s[1] < s[0] < s[2]


def test_mixed_shapes_keep_input_order():
    a, b, c = _rgb(0, (32, 40)), _rgb(1, (50, 30)), _rgb(2, (32, 40))
    batch = Sharpness().score([a, b, c], None, [])
    singles = [Sharpness().score([x], None, [])[0] for x in (a, b, c)]
    np.testing.assert_array_equal(batch, singles)


def test_colourfulness_hand_computation():
    # red, green, blue, white: rg = [255, -255, 0, 0], yb = [127.5, 127.5, -255, 0]; both means 0.
    img = np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [255, 255, 255]]], dtype=np.uint8)
    var_rg = (255**2 + 255**2) / 4
    var_yb = (127.5**2 + 127.5**2 + 255**2) / 4
    # a flat orange-ish image: no spread, rg = 100, yb = 150 - 50 = 100
    flat = np.full((3, 5, 3), (200, 100, 50), dtype=np.uint8)
    grey = np.full((4, 4, 3), 77, dtype=np.uint8)
    got = Colourfulness().score([img, flat, grey], None, [])
    assert got[0] == pytest.approx(np.sqrt(var_rg + var_yb))
    assert got[1] == pytest.approx(0.3 * np.sqrt(100**2 + 100**2))
    assert got[2] == 0.0


def test_colourfulness_desaturation_lowers():
    img = _smooth(4)
    grey = luma601(img[None])[0][..., None]
    half = np.clip(0.5 * img + 0.5 * grey, 0, 255).astype(np.uint8)
    s = Colourfulness().score([img, half], None, [])
    assert s[1] < s[0]


def test_dct_matrix_matches_scipy():
    block = np.random.default_rng(5).uniform(0, 255, (8, 8))
    c = dct_matrix()
    np.testing.assert_allclose(c @ block @ c.T, dctn(block, norm="ortho"), atol=1e-9)


def test_incompressibility_against_scipy_block_dct():
    grey = luma601(_smooth(6, (40, 56))[None])[0]
    energy = np.zeros((8, 8))
    for r in range(0, 40, 8):
        for c in range(0, 56, 8):
            energy += dctn(grey[r:r + 8, c:c + 8], norm="ortho") ** 2
    u, v = np.indices((8, 8))
    ac = energy.sum() - energy[0, 0]
    ref = energy[(u + v) >= 8].sum() / ac
    assert high_frequency_share(grey[None])[0] == pytest.approx(ref, rel=1e-10)


def test_incompressibility_flat_noise_blur(astronaut):
    flat = np.full((64, 64, 3), 128, dtype=np.uint8)
    noise = np.random.default_rng(7).integers(0, 256, (512, 512, 3)).astype(np.uint8)
    blurred = [cv2.GaussianBlur(astronaut, (0, 0), s) for s in (0.7, 1.5)]
    s = Incompressibility().score([flat, noise, astronaut, *blurred], None, [])
    assert s[0] == 0.0
    assert s[1] == pytest.approx(28 / 63, abs=0.01)  # white noise: energy even over the 63 AC terms
    assert s[4] < s[3] < s[2] < s[1]


def test_incompressibility_tiny_image_is_zero():
    assert Incompressibility().score([np.zeros((5, 5, 3), np.uint8)], None, [])[0] == 0.0
