"""runtime.colour against scikit-image (the independent reference)."""

from __future__ import annotations

import warnings

import numpy as np
from skimage.color import lab2rgb, rgb2lab

from scoreaudit.plugins.colour import clip_share, lab_to_srgb, lab_to_srgb8, srgb8_to_lab, srgb_to_lab


def test_forward_matches_skimage_on_random_images():
    rng = np.random.default_rng(1)
    for _ in range(3):
        img = rng.integers(0, 256, size=(64, 80, 3), dtype=np.uint8)
        ours = srgb8_to_lab(img)
        ref = rgb2lab(img)
        assert ours.dtype == np.float32
        assert np.abs(ours[..., 0] - ref[..., 0]).max() < 0.5
        assert np.abs(ours - ref).max() < 0.01  # in practice ~1e-4
        assert np.abs(srgb_to_lab(img / 255.0) - ref).max() < 0.01


def test_inverse_matches_skimage_inside_and_outside_gamut():
    rng = np.random.default_rng(2)
    lab = np.stack([rng.uniform(0, 100, (50, 60)), rng.uniform(-90, 90, (50, 60)),
                    rng.uniform(-90, 90, (50, 60))], axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # skimage warns about negative Z values
        ref = lab2rgb(lab)
    ours, clipped = lab_to_srgb(lab)
    assert np.abs(ours - ref).max() < 1e-3
    assert 0.2 < clip_share(clipped) < 1.0  # random Lab is mostly out of gamut


def test_round_trip_of_every_8bit_colour_sample_is_exact():
    rng = np.random.default_rng(3)
    img = rng.integers(0, 256, size=(200, 200, 3), dtype=np.uint8)
    back, clipped = lab_to_srgb8(srgb8_to_lab(img))
    assert np.array_equal(back, img)
    assert not clipped.any()


def test_clipping_is_reported_only_when_it_changes_the_8bit_value():
    lab = np.array([[50.0, 0.0, 0.0], [100.0, 0.0, 0.0], [120.0, 0.0, 0.0], [50.0, 120.0, 0.0]])
    rgb, clipped = lab_to_srgb8(lab)
    assert clipped.tolist() == [False, False, True, True]
    assert rgb[2].tolist() == [255, 255, 255]
    assert clip_share(clipped) == 0.5
    assert clip_share(np.zeros(0, bool)) == 0.0
