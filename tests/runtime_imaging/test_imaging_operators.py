"""Operators: bit-exact identity, documented dose behaviour, purity and pixel isolation."""

from __future__ import annotations

import numpy as np
import pytest
from skimage.color import rgb2lab

from scoreaudit.plugins.base import MeasureContext
from scoreaudit.registry import covariates, load_plugins, measures, operators

load_plugins()

#: Parameters beyond `region` that an operator needs for its contract test (none so far).
EXTRA_PARAMS: dict[str, dict] = {}


def _case(entry) -> tuple[dict, list[float]]:
    """(params, doses with the identity first) for any registered operator, from its declaration.

    `region` (when the operator takes one) names the test mask; the two other
    doses lie a fifth of the way from the identity towards each end of the
    declared dose range (or two fifths towards one end, when the identity is an end).
    """
    params = dict(EXTRA_PARAMS.get(entry.name, {}))
    if "region" in entry.params.model_fields:
        params["region"] = "r"
    identity = float(entry.meta["identity"])
    lo, hi = (float(x) for x in entry.meta["dose_range"])
    towards = [end for end in (lo, hi) if end != identity]
    steps = (0.2,) if len(towards) == 2 else (0.2, 0.4)
    doses = [identity + f * (end - identity) for end in towards for f in steps]
    return params, [identity] + doses


#: Every built-in operator (a new one gets these contract tests without editing this file).
CASES = {e.name: _case(e) for e in operators if e.impl.__module__.startswith("scoreaudit.")}


def test_every_operator_declares_what_the_contract_needs():
    assert set(CASES) >= {"lab_shift", "gaussian_blur", "hue_rotate", "jpeg", "noise", "torso_warp"}
    for name in CASES:
        meta = operators.get(name).meta
        assert {"identity", "dose_range", "pixel_local", "unit"} <= set(meta), name
        lo, hi = meta["dose_range"]
        assert lo <= meta["identity"] <= hi, name


def make(name, params):
    entry = operators.get(name)
    return entry, entry.impl(entry.validate(params))


def leakage(original, variant, mask, info=None, tolerance=1.0):
    entry = covariates.get("leakage")
    m = entry.impl(entry.validate({"tolerance": tolerance}))
    return m.compute(MeasureContext(original, variant, {"r": mask}, mask, info or {}, 0.0, 0.0))


@pytest.mark.parametrize("name", sorted(CASES))
def test_identity_is_bit_exact_and_doses_change_the_region(plugins, textured, centre_mask, name):
    params, doses = CASES[name]
    entry, op = make(name, params)
    assert entry.meta["identity"] == doses[0]
    before = textured.copy()
    outs = op.sweep(textured, centre_mask, doses, seed=11)
    assert np.array_equal(textured, before), "the input must not be modified"
    assert len(outs) == len(doses)
    assert np.array_equal(outs[0].image, textured) and outs[0].image.dtype == np.uint8
    for out in outs[1:]:
        assert out.image.shape == textured.shape and out.image.dtype == np.uint8
        assert not np.array_equal(out.image[centre_mask], textured[centre_mask])


@pytest.mark.parametrize("name", sorted(CASES))
def test_deterministic_and_independent_of_the_other_doses(plugins, textured, centre_mask, name):
    params, doses = CASES[name]
    _, op = make(name, params)
    full = op.sweep(textured, centre_mask, doses, seed=5)
    again = op.sweep(textured, centre_mask, doses, seed=5)
    single = op.sweep(textured, centre_mask, [doses[-1]], seed=5)
    assert all(np.array_equal(a.image, b.image) and dict(a.info) == dict(b.info) for a, b in zip(full, again))
    assert np.array_equal(full[-1].image, single[0].image)


@pytest.mark.parametrize("name", sorted(n for n in CASES if operators.get(n).meta["pixel_local"]))
def test_pixel_local_operators_leave_outside_untouched(plugins, textured, centre_mask, name):
    params, doses = CASES[name]
    entry, op = make(name, params)
    for out in op.sweep(textured, centre_mask, doses, seed=1):
        assert np.array_equal(out.image[~centre_mask], textured[~centre_mask])
        assert leakage(textured, out.image, centre_mask, out.info) == 0.0


def test_torso_warp_leaks_deforms_and_scales_width(plugins, textured, centre_mask):
    entry, op = make("torso_warp", {"region": "r"})
    assert entry.meta["pixel_local"] is False
    width = measures.get("width_ratio").impl(measures.get("width_ratio").validate({"region": "r"}))
    for dose, out in zip([0.8, 1.2], op.sweep(textured, centre_mask, [0.8, 1.2], seed=0)):
        assert leakage(textured, out.image, centre_mask, out.info) > 0.05
        assert 0.0 < out.info["deformation"] < 0.1
        ctx = MeasureContext(textured, out.image, {"r": centre_mask}, centre_mask, out.info, dose, 1.0)
        assert width.compute(ctx) == pytest.approx(dose, abs=0.03)
    # Inside the region, output column xo shows the original at c + (xo - c) / dose (bilinear).
    out = op.sweep(textured, centre_mask, [1.2], seed=0)[0].image
    c, half = (40 + 89) / 2.0, 25.0
    xo = np.arange(int(np.ceil(c - 1.2 * half)) + 1, int(c + 1.2 * half))
    src = c + (xo - c) / 1.2
    for y in (35, 50, 65):
        for ch in range(3):
            expected = np.interp(src, np.arange(128), textured[y, :, ch].astype(float))
            assert np.abs(out[y, xo, ch] - expected).max() <= 2.0


def test_lab_shift_moves_mean_lightness_by_the_dose(plugins):
    rng = np.random.default_rng(4)
    img = rng.integers(70, 180, size=(60, 60, 3), dtype=np.uint8)  # mid-tones: no clipping at ±10
    mask = np.zeros((60, 60), bool)
    mask[10:50, 15:45] = True
    _, op = make("lab_shift", {"channel": "L", "region": "r"})
    base = rgb2lab(img)[mask][:, 0].mean()
    for dose, out in zip([-10.0, 10.0], op.sweep(img, mask, [-10.0, 10.0], seed=0)):
        assert out.info["gamut_clip"] == 0.0
        shifted = rgb2lab(out.image)[mask][:, 0].mean()  # skimage as the reference
        assert shifted - base == pytest.approx(dose, abs=0.3)
    _, op_b = make("lab_shift", {"channel": "b", "region": "r"})
    out = op_b.sweep(img, mask, [8.0], seed=0)[0].image
    assert rgb2lab(out)[mask][:, 2].mean() - rgb2lab(img)[mask][:, 2].mean() == pytest.approx(8.0, abs=0.4)


def test_lab_shift_reports_gamut_clipping(plugins):
    img = np.full((10, 10, 3), 250, np.uint8)
    _, op = make("lab_shift", {"channel": "L"})
    up, down = op.sweep(img, None, [20.0, -20.0], seed=0)
    assert up.info["gamut_clip"] == 1.0 and np.all(up.image == 255)
    assert down.info["gamut_clip"] == 0.0


def test_hue_rotate_keeps_lightness_and_chroma_and_turns_hue(plugins):
    rng = np.random.default_rng(6)
    img = np.clip(rng.normal([150, 120, 100], 10, size=(40, 40, 3)), 0, 255).astype(np.uint8)
    _, op = make("hue_rotate", {})
    out = op.sweep(img, None, [30.0], seed=0)[0]
    assert out.info["gamut_clip"] == 0.0
    a, b = rgb2lab(img), rgb2lab(out.image)
    assert np.abs(a[..., 0] - b[..., 0]).mean() < 0.5
    assert np.abs(np.hypot(a[..., 1], a[..., 2]) - np.hypot(b[..., 1], b[..., 2])).mean() < 0.5
    turn = np.degrees(np.arctan2(b[..., 2], b[..., 1]) - np.arctan2(a[..., 2], a[..., 1]))
    assert np.median((turn + 180) % 360 - 180) == pytest.approx(30.0, abs=1.0)


def test_blur_reduces_detail_more_with_sigma(plugins, textured, centre_mask):
    _, op = make("gaussian_blur", {"region": "r"})
    outs = op.sweep(textured, centre_mask, [1.0, 3.0], seed=0)
    def detail(img):
        return np.abs(np.diff(img.astype(float), axis=1))[centre_mask[:, 1:]].mean()
    assert detail(outs[1].image) < detail(outs[0].image) < detail(textured)


def test_blur_equals_whole_image_blur_inside_region(plugins, textured, centre_mask):
    import cv2

    _, op = make("gaussian_blur", {"region": "r"})
    out = op.sweep(textured, centre_mask, [2.5], seed=0)[0].image
    ref = cv2.GaussianBlur(textured, (0, 0), 2.5, borderType=cv2.BORDER_REFLECT_101)
    assert np.array_equal(out[centre_mask], ref[centre_mask])


def test_noise_sd_matches_dose_and_seed_matters(plugins):
    img = np.full((100, 100, 3), 128, np.uint8)
    _, op = make("noise", {})
    out = op.sweep(img, None, [10.0], seed=3)[0].image.astype(float) - 128
    assert out.std() == pytest.approx(10.0, rel=0.05)
    other = op.sweep(img, None, [10.0], seed=4)[0].image
    assert not np.array_equal(other, out + 128)


def test_jpeg_quality_orders_error(plugins, astronaut):
    _, op = make("jpeg", {})
    q90, q10 = op.sweep(astronaut, None, [90.0, 10.0], seed=0)
    err = [np.abs(o.image.astype(int) - astronaut).mean() for o in (q90, q10)]
    assert 0 < err[0] < err[1]


def test_empty_region_is_identity_for_every_operator(plugins, textured):
    empty = np.zeros(textured.shape[:2], bool)
    for name, (params, doses) in CASES.items():
        _, op = make(name, params)
        assert all(o.image is textured for o in op.sweep(textured, empty, doses, seed=0))


def test_noise_field_depends_on_the_image_not_only_the_seed(plugins):
    _, op = make("noise", {})
    a = np.full((30, 30, 3), 128, np.uint8)
    b = a.copy()
    b[0, 0, 0] = 127
    na = op.sweep(a, None, [10.0], seed=1)[0].image.astype(int) - a
    nb = op.sweep(b, None, [10.0], seed=1)[0].image.astype(int) - b
    assert np.mean(na == nb) < 0.2
