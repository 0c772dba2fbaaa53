"""Regions (face, skin, mask, boolean expressions) and measures, against direct computations."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image
from skimage.color import rgb2lab

from scoreaudit.compiler import ir
from scoreaudit.plugins.base import MeasureContext, RegionContext
from scoreaudit.registry import covariates, measures, regions
from scoreaudit.runtime.images import ImageFailure
from scoreaudit.runtime.regions import RegionEvaluator, evaluation_order


def call(plugin, **params):
    return ir.RegionCallIR(call=ir.PluginCall(plugin=plugin, version="1", params=params))


def region(name, expr, *deps):
    return ir.RegionIR(name=name, expr=expr, depends_on=tuple(deps))


def measure(kind, name, **params):
    registry = measures if kind == "measure" else covariates
    entry = registry.get(name)
    return entry.impl(entry.validate(params))


@pytest.fixture(scope="module")
def astro_regions(plugins, astronaut):
    spec = {  # declared out of dependency order on purpose
        "rest": region("rest", ir.RegionNotIR(operand=ir.RegionRefIR(name="skin")), "skin"),
        "skin": region("skin", call("skin", within="face"), "face"),
        "face": region("face", call("face")),
    }
    return RegionEvaluator(spec).evaluate(astronaut, {}, ".")


def test_face_is_found_on_the_astronaut(astro_regions):
    face = astro_regions.masks["face"]
    ys, xs = np.nonzero(face)
    # The astronaut's face is roughly x 175–275, y 65–165 in the 512² image.
    assert 190 < xs.mean() < 260 and 80 < ys.mean() < 150
    assert 0.02 < astro_regions.coverage["face"] < 0.08


def test_skin_is_inside_the_face_and_rest_is_its_complement(astro_regions):
    face, skin, rest = (astro_regions.masks[k] for k in ("face", "skin", "rest"))
    assert skin.any() and not (skin & ~face).any()
    assert np.array_equal(rest, ~skin)
    assert astro_regions.coverage["skin"] + astro_regions.coverage["rest"] == pytest.approx(1.0)
    assert astro_regions.coverage["skin"] == pytest.approx(skin.mean())


def test_ita_on_the_astronauts_skin_is_plausible_and_matches_skimage(astro_regions, astronaut):
    skin = astro_regions.masks["skin"]
    lab = rgb2lab(astronaut)[skin]
    direct = np.median(np.degrees(np.arctan2(lab[:, 0] - 50.0, lab[:, 2])))
    ctx = MeasureContext(astronaut, astronaut, {"skin": skin}, skin, {}, 0.0, 0.0)
    ita = measure("measure", "ita", region="skin").compute(ctx)
    assert 30.0 < ita < 60.0
    assert ita == pytest.approx(direct, abs=0.05)
    mean_ita = measure("measure", "ita", region="skin", stat="mean").compute(ctx)
    assert mean_ita == pytest.approx(np.mean(np.degrees(np.arctan2(lab[:, 0] - 50.0, lab[:, 2]))), abs=0.05)


def test_ita_rises_when_skin_is_lightened(plugins, astro_regions, astronaut):
    from scoreaudit.registry import operators

    skin = astro_regions.masks["skin"]
    op = operators.get("lab_shift").impl(operators.get("lab_shift").validate({"region": "skin"}))
    ita = measure("measure", "ita", region="skin")
    values = [ita.compute(MeasureContext(astronaut, o.image, {"skin": skin}, skin, o.info, d, 0.0))
              for d, o in zip([-10, 0, 10], op.sweep(astronaut, skin, [-10, 0, 10], 0))]
    assert values[0] < values[1] < values[2]


def test_measures_on_empty_regions_and_covariates_from_info(plugins, textured):
    empty = np.zeros(textured.shape[:2], bool)
    ctx = MeasureContext(textured, textured, {"r": empty}, empty, {"gamut_clip": 0.25}, 1.0, 0.0)
    assert math.isnan(measure("measure", "ita", region="r").compute(ctx))
    assert math.isnan(measure("measure", "mean_lab", region="r").compute(ctx))
    assert math.isnan(measure("measure", "width_ratio", region="r").compute(ctx))
    assert measure("covariate", "gamut_clip").compute(ctx) == 0.25
    assert measure("covariate", "warp_deformation").compute(ctx) == 0.0
    whole = MeasureContext(textured, textured, {}, None, {}, 1.0, 0.0)
    assert measure("measure", "mean_lab", channel="a").compute(whole) == pytest.approx(
        rgb2lab(textured)[..., 1].mean(), abs=0.01)
    assert measure("covariate", "leakage").compute(whole) == 0.0


def test_leakage_counts_only_outside_changes_above_tolerance(plugins, textured, centre_mask):
    variant = textured.astype(int)
    outside = np.argwhere(~centre_mask)
    variant[tuple(outside[:100].T)] += 1  # within tolerance: not counted
    variant[tuple(outside[100:300].T)] += 5  # counted
    variant[centre_mask] = 0  # inside: never counted
    variant = np.clip(variant, 0, 255).astype(np.uint8)
    ctx = MeasureContext(textured, variant, {}, centre_mask, {}, 1.0, 0.0)
    changed = (np.abs(variant.astype(int) - textured).max(axis=2) > 1) & ~centre_mask
    expected = changed.sum() / (~centre_mask).sum()
    assert measure("covariate", "leakage").compute(ctx) == pytest.approx(expected)
    assert 150 / (~centre_mask).sum() < expected


def test_boolean_expressions_and_user_masks(plugins, tmp_path, textured):
    m1 = np.zeros((96, 128), np.uint8)
    m1[:, :64] = 255
    m2 = np.zeros((96, 128), np.uint8)
    m2[:48, :] = 200
    Image.fromarray(m1).save(tmp_path / "left.png")
    Image.fromarray(np.stack([m2] * 3, -1)).save(tmp_path / "top.png")  # a colour mask is fine
    spec = {
        "left": region("left", call("mask", column="m_left")),
        "top": region("top", call("mask", column="m_top", threshold=128)),
        "both": region("both", ir.RegionBinIR(op="and", left=ir.RegionRefIR(name="left"),
                                              right=ir.RegionRefIR(name="top")), "left", "top"),
        "either": region("either", ir.RegionBinIR(op="or", left=ir.RegionRefIR(name="left"),
                                                  right=call("mask", column="m_top")), "left"),
        "all": region("all", call("everything")),
    }
    res = RegionEvaluator(spec).evaluate(textured, {"m_left": "left.png", "m_top": "top.png"}, tmp_path)
    left, top = m1 > 0, m2 > 0
    assert np.array_equal(res.masks["both"], left & top)
    assert np.array_equal(res.masks["either"], left | top)
    assert res.coverage == pytest.approx({"left": 0.5, "top": 0.5, "both": 0.25, "either": 0.75, "all": 1.0})


def test_user_mask_problems_name_the_region_and_the_file(plugins, tmp_path, textured):
    Image.fromarray(np.zeros((10, 10), np.uint8)).save(tmp_path / "small.png")
    ev = RegionEvaluator({"torso": region("torso", call("mask", column="torso_mask"))})
    with pytest.raises(ImageFailure) as err:
        ev.evaluate(textured, {"torso_mask": "small.png"}, tmp_path)
    assert err.value.stage == "region"
    assert err.value.reason == ("region 'torso': mask small.png is 10×10 but the image is 128×96; "
                                "masks must have the image's exact size")
    with pytest.raises(ImageFailure) as err:
        ev.evaluate(textured, {"torso_mask": "nope.png"}, tmp_path)
    assert err.value.reason == "region 'torso': mask file not found: nope.png (column 'torso_mask')"
    with pytest.raises(ImageFailure) as err:
        ev.evaluate(textured, {"torso_mask": None}, tmp_path)
    assert err.value.reason == "region 'torso': no mask path in column 'torso_mask'"


def test_order_follows_dependencies_and_cycles_are_refused(plugins):
    spec = {
        "b": region("b", ir.RegionNotIR(operand=ir.RegionRefIR(name="a"))),
        "c": region("c", call("skin", within="b")),  # dependency found from the parameter
        "a": region("a", call("face")),
    }
    order = evaluation_order(spec)
    assert order.index("a") < order.index("b") < order.index("c")
    cyc = {"x": region("x", ir.RegionRefIR(name="y")), "y": region("y", ir.RegionRefIR(name="x"))}
    with pytest.raises(ValueError, match="region cycle"):
        evaluation_order(cyc)


def test_no_face_gives_an_empty_mask(plugins, textured):
    face = regions.get("face").impl(regions.get("face").validate({}))
    mask = face.compute(textured, RegionContext(masks={}, row={}, base_dir="."))
    assert mask.shape == textured.shape[:2] and not mask.any()
