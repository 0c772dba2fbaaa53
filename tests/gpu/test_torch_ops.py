"""The torch device path (scoreaudit.plugins.gpu) against the numpy/OpenCV reference, run on the CPU.

Every registered operator, measure and covariate must have a torch twin and a case here
(the registry is enumerated, so a new plugin without one fails), and every dose of each case
is compared: images to 1/255 (one 8-bit level), CIELAB to 1e-3, measures and covariates to
1e-4, operator info to 1e-4.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the models extra is not installed (pip install 'scoreaudit[models]')")

from scoreaudit.plugins.gpu import colour as tcolour  # noqa: E402
from scoreaudit.plugins.gpu.measures import TORCH_COVARIATES, TORCH_MEASURES, TorchMeasureContext  # noqa: E402
from scoreaudit.plugins.gpu.operators import TORCH_OPERATORS, sweep  # noqa: E402
from scoreaudit.plugins import colour  # noqa: E402
from scoreaudit.plugins.base import MeasureContext, content_hash  # noqa: E402
from scoreaudit.registry import covariates, load_plugins, measures, operators  # noqa: E402

load_plugins(entry_points=False)

# Every operator: params and doses that cover identity, both signs, extremes and clipping.
OPERATOR_CASES = {
    "lab_shift": [({"channel": "L"}, [-100, -40, -5, -0.5, 0, 0.5, 5, 40, 100]),
                  ({"channel": "a"}, [-60, -7, 0, 7, 60]), ({"channel": "b"}, [-60, 0, 3, 60])],
    "hue_rotate": [({}, [-180, -90, -10, 0, 1, 30, 90, 180])],
    "gaussian_blur": [({}, [0, 0.3, 0.5, 1, 2.5, 4, 9])],
    "jpeg": [({}, [1, 5, 10, 30, 50, 75, 90, 99, 100])],
    "noise": [({}, [0, 0.5, 3, 10, 40, 255])],
    "torso_warp": [({"region": "r", "falloff": 0.15}, [0.5, 0.7, 0.95, 1.0, 1.05, 1.3, 2.0]),
                   ({"region": "r", "falloff": 0.4}, [0.8, 1.5])],
}
# Every measure and covariate: params against the masks below.
MEASURE_CASES = {
    "ita": [{"region": "r"}, {"region": "r", "stat": "mean"}, {"region": "empty"}],
    "mean_lab": [{"channel": "L"}, {"region": "r", "channel": "a"}, {"region": "r", "channel": "b"},
                 {"region": "empty"}],
    "width_ratio": [{"region": "r"}, {"region": "other"}, {"region": "empty"}],
}
COVARIATE_CASES = {"gamut_clip": [{}], "warp_deformation": [{}], "leakage": [{}, {"tolerance": 0.0}, {"tolerance": 3.0}]}


def _image(h=72, w=90, seed=3):
    """Smooth colours with saturated corners (so CIELAB edits clip) and noise (so blur and JPEG bite)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
    base = np.stack([np.sin(7 * xx + c) * np.cos(5 * yy - 2 * c) for c in range(3)], -1)
    img = 127.5 + 120 * base + rng.normal(0, 18, size=(h, w, 3))
    img[:6, :6] = (255, 0, 0)
    img[-6:, -6:] = (0, 0, 255)
    return np.clip(img, 0, 255).astype(np.uint8)


def _masks(img):
    h, w = img.shape[:2]
    r = np.zeros((h, w), bool)
    r[15:55, 25:60] = True
    r[30:40, 20:25] = True  # not a rectangle
    other = np.zeros((h, w), bool)
    other[2:10, 70:85] = True
    return {"r": r, "other": other, "empty": np.zeros((h, w), bool)}


IMAGES = [_image(), _image(41, 37, seed=9), _image(16, 300, seed=4)]


def _t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def test_every_operator_measure_and_covariate_has_a_torch_twin_and_a_case():
    assert set(operators.names()) <= set(TORCH_OPERATORS), "operators without a torch implementation"
    assert set(operators.names()) <= set(OPERATOR_CASES), "operators without an equivalence case here"
    assert set(measures.names()) <= set(TORCH_MEASURES) and set(measures.names()) <= set(MEASURE_CASES)
    assert set(covariates.names()) <= set(TORCH_COVARIATES) and set(covariates.names()) <= set(COVARIATE_CASES)


def test_cielab_conversions_match_to_1e_3():
    rng = np.random.default_rng(0)
    rgb = np.concatenate([rng.integers(0, 256, (20000, 3)), np.array([[0, 0, 0], [255, 255, 255], [255, 0, 0]])])
    rgb = rgb.astype(np.uint8)
    lab_ref = colour.srgb8_to_lab(rgb)
    lab = tcolour.srgb8_to_lab(_t(rgb)).numpy()
    assert np.abs(lab - lab_ref).max() <= 1e-3
    # and back, from colours in and out of the gamut
    lab_in = np.concatenate([lab_ref, lab_ref + rng.normal(0, 30, lab_ref.shape).astype(np.float32)])
    back_ref, clip_ref = colour.lab_to_srgb8(lab_in)
    back, clip = tcolour.lab_to_srgb8(_t(lab_in))
    assert np.abs(back.numpy().astype(int) - back_ref.astype(int)).max() <= 1
    assert (clip.numpy() != clip_ref).mean() < 1e-3  # only colours on the ±0.5-level boundary may differ
    assert np.abs(tcolour.lab_to_encoded(_t(lab_in)).numpy() - colour._lab_to_encoded(lab_in)).max() <= 1e-3 / 100


def _cases():
    for name, cases in OPERATOR_CASES.items():
        for k, (params, doses) in enumerate(cases):
            for i in range(len(IMAGES)):
                for region in ("r", None):
                    if name == "torso_warp" and region is None:
                        continue
                    yield pytest.param(name, params, doses, i, region, id=f"{name}-{k}-img{i}-{region or 'all'}")


@pytest.mark.parametrize("name,params,doses,image_index,region", list(_cases()))
def test_operator_matches_reference_at_every_dose(name, params, doses, image_index, region):
    img = IMAGES[image_index]
    mask = _masks(img)["r"] if region else None
    entry = operators.get(name)
    p = entry.params.model_validate(params)
    ref = entry.impl(p).sweep(img, mask, doses, seed=11)
    ours = sweep(name, p, _t(img), None if mask is None else _t(mask), doses, seed=11, image_hash=content_hash(img))
    assert len(ours) == len(doses)
    for dose, r, (t, info) in zip(doses, ref, ours):
        diff = np.abs(t.numpy().astype(int) - r.image.astype(int))
        assert diff.max() <= 1, (dose, diff.max())  # 1/255
        if mask is not None and name != "torso_warp":
            assert np.array_equal(t.numpy()[~mask], img[~mask])  # pixel-local: outside untouched
        assert set(info) == set(r.info), dose
        for k, v in r.info.items():
            assert math.isclose(float(info[k]), v, abs_tol=1e-4), (dose, k, float(info[k]), v)
        if r.image is img:
            assert np.array_equal(t.numpy(), img)


def _measure_contexts(name):
    """(reference ctx, torch ctx) per dose of the operator `name` on the first image."""
    img = IMAGES[0]
    masks = _masks(img)
    params, doses = OPERATOR_CASES[name][0]
    entry = operators.get(name)
    p = entry.params.model_validate(params)
    op_mask = masks["r"]
    ref = entry.impl(p).sweep(img, op_mask, doses, seed=5)
    ours = sweep(name, p, _t(img), _t(op_mask), doses, seed=5, image_hash=content_hash(img))
    tmasks = {k: _t(v) for k, v in masks.items()}
    for dose, r, (t, info) in zip(doses, ref, ours):
        identity = operators.get(name).meta["identity"]
        rc = MeasureContext(original=img, variant=r.image, masks=masks, operator_mask=op_mask, info=r.info,
                            dose=dose, identity=identity)
        tc = TorchMeasureContext(original=_t(img), variant=_t(img) if r.image is img else t, masks=tmasks,
                                 operator_mask=tmasks["r"], info=info, dose=dose, identity=identity)
        # the same variant pixels on both sides, so only the measure is compared
        tc_same = TorchMeasureContext(original=tc.original, variant=_t(r.image), masks=tmasks,
                                      operator_mask=tmasks["r"], info=info, dose=dose, identity=identity)
        yield rc, (tc if r.image is img else tc_same)


@pytest.mark.parametrize("kind,name,params", [
    *[("measure", n, p) for n, ps in MEASURE_CASES.items() for p in ps],
    *[("covariate", n, p) for n, ps in COVARIATE_CASES.items() for p in ps],
])
@pytest.mark.parametrize("operator", ["lab_shift", "torso_warp", "gaussian_blur"])
def test_measures_and_covariates_match_reference(kind, name, params, operator):
    registry, table = (measures, TORCH_MEASURES) if kind == "measure" else (covariates, TORCH_COVARIATES)
    entry = registry.get(name)
    p = entry.params.model_validate(params)
    ref_impl, our_impl = entry.impl(p), table[name](p)
    for rc, tc in _measure_contexts(operator):
        want = ref_impl.compute(rc)
        got = float(our_impl.compute(tc))
        if math.isnan(want):
            assert math.isnan(got), (rc.dose, got)
        else:
            assert math.isclose(got, want, abs_tol=1e-4), (rc.dose, got, want)


def test_measures_on_torch_variants_stay_within_1e_4_of_reference_variants():
    """End to end: measures of the torch variants against measures of the reference variants."""
    entry = measures.get("ita")
    p = entry.params.model_validate({"region": "r"})
    img = IMAGES[0]
    masks = _masks(img)
    e = operators.get("lab_shift")
    lp = e.params.model_validate({"channel": "L"})
    doses = [-20, -3, 0, 3, 20]
    ref = e.impl(lp).sweep(img, masks["r"], doses, seed=1)
    ours = sweep("lab_shift", lp, _t(img), _t(masks["r"]), doses, seed=1)
    for r, (t, info) in zip(ref, ours):
        rc = MeasureContext(img, r.image, masks, masks["r"], r.info, 0.0, 0.0)
        tc = TorchMeasureContext(_t(img), t, {k: _t(v) for k, v in masks.items()}, _t(masks["r"]), info)
        # one 8-bit level on a few pixels moves a median ITA by far less than a degree
        assert abs(float(TORCH_MEASURES["ita"](p).compute(tc)) - entry.impl(p).compute(rc)) < 0.05


def test_leakage_counts_changes_outside_the_region():
    img = IMAGES[0]
    masks = _masks(img)
    variant = img.copy()
    outside = np.argwhere(~masks["r"])[:37]
    variant[outside[:, 0], outside[:, 1], 1] ^= 0x10  # 16 levels on one channel
    p = covariates.get("leakage").params.model_validate({})
    tc = TorchMeasureContext(_t(img), _t(variant), {}, _t(masks["r"]))
    assert float(TORCH_COVARIATES["leakage"](p).compute(tc)) == pytest.approx(37 / (~masks["r"]).sum())


@pytest.mark.parametrize("name", sorted(OPERATOR_CASES))
def test_on_device_glue_returns_the_reference_outputs(name):
    """What a CUDA run calls (plugins.operators.on_device), exercised on the CPU device."""
    from scoreaudit.plugins.operators import on_device

    img = IMAGES[0]
    mask = _masks(img)["r"]
    params, doses = OPERATOR_CASES[name][0]
    entry = operators.get(name)
    p = entry.params.model_validate(params)
    ref = entry.impl(p).sweep(img, mask, doses, seed=3)
    got = on_device(name, p, "cpu", img, mask, doses, seed=3)
    for r, g in zip(ref, got):
        assert g.image.dtype == np.uint8 and g.image.shape == img.shape
        assert np.abs(g.image.astype(int) - r.image.astype(int)).max() <= 1
        assert (g.image is img) == (r.image is img)  # the identity dose returns the input itself
        assert set(g.info) == set(r.info) and all(isinstance(v, float) for v in g.info.values())
