"""Measures (attributes of the image) and covariates (artifacts of the operator).

Each class follows `plugins.base.Measure`: `compute(MeasureContext) -> float`
for one (image, operator, dose), NaN when undefined. Regions named in params
are read from `ctx.masks` (regions of the ORIGINAL image); pixel statistics
are taken on `ctx.variant`. CPU numpy/OpenCV; `device` is ignored.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Literal

import numpy as np

from scoreaudit.registry import NoParams, Params, Ref, covariates, measures

RegionRef = Annotated[str, Ref("region")]
CHANNEL_INDEX = {"L": 0, "a": 1, "b": 2}
STATS: dict[str, Callable[[np.ndarray], float]] = {"median": np.median, "mean": np.mean}


def _region_lab(image: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """CIELAB (N×3 float32) of the region's pixels (None: every pixel)."""
    from scoreaudit.plugins.colour import srgb8_to_lab

    pixels = image.reshape(-1, 3) if mask is None else image[np.asarray(mask, bool)]
    return srgb8_to_lab(pixels)


class ItaParams(Params):
    region: RegionRef
    stat: Literal["median", "mean"] = "median"


@measures.register("ita", params=ItaParams, version="1", unit="degrees", positional=("region",))
class Ita:
    """Individual typology angle ITA° = atan2(L* − 50, b*) · 180/π over the region's pixels (median by default).

    Higher is lighter skin. NaN when the region is empty. Per pixel, then the
    median (or mean) of the angles, on the variant's pixels in the region.
    """

    def __init__(self, params: ItaParams, device: str = "cpu") -> None:
        self.params = params
        self.stat = STATS[params.stat]

    def compute(self, ctx) -> float:
        lab = _region_lab(ctx.variant, ctx.masks[self.params.region])
        if not len(lab):
            return math.nan
        angles = np.degrees(np.arctan2(lab[:, 0] - 50.0, lab[:, 2]))
        return float(self.stat(angles))


class MeanLabParams(Params):
    region: RegionRef | None = None
    channel: Literal["L", "a", "b"] = "L"


@measures.register("mean_lab", params=MeanLabParams, version="1", unit="CIELAB units")
class MeanLab:
    """Mean of one CIELAB channel over the region's pixels."""

    def __init__(self, params: MeanLabParams, device: str = "cpu") -> None:
        self.params = params
        self.channel = CHANNEL_INDEX[params.channel]

    def compute(self, ctx) -> float:
        mask = None if self.params.region is None else ctx.masks[self.params.region]
        lab = _region_lab(ctx.variant, mask)
        return float(lab[:, self.channel].mean()) if len(lab) else math.nan


class WidthParams(Params):
    region: RegionRef


@measures.register("width_ratio", params=WidthParams, version="1", unit="ratio", positional=("region",))
class WidthRatio:
    """Mean horizontal extent of the region in the variant divided by that in the original (1.0 unchanged).

    Width = the region's pixel count per row, averaged over the rows it
    occupies. A region does not move under a pixel-local operator, so the
    ratio is exactly 1. A geometric operator moves it: the operator warps its
    own region's mask with the same displacement field and reports the ratio
    as info["width_ratio"] (torso_warp does), which is used when this
    measure's region is the operator's region. Any other region under a
    geometric operator, or an empty region, gives NaN.
    """

    def __init__(self, params: WidthParams, device: str = "cpu") -> None:
        self.params = params

    def compute(self, ctx) -> float:
        mask = ctx.masks[self.params.region]
        if not np.any(mask):
            return math.nan
        if not ctx.info.get("deformation", 0.0):
            return 1.0
        if "width_ratio" in ctx.info and ctx.operator_mask is not None and (
            ctx.operator_mask is mask or np.array_equal(ctx.operator_mask, mask)
        ):
            return float(ctx.info["width_ratio"])
        return math.nan


@covariates.register("gamut_clip", params=NoParams, version="1", unit="share")
class GamutClip:
    """Share of the operator's region pixels that were clipped back into the sRGB gamut."""

    def __init__(self, params: NoParams | None = None, device: str = "cpu") -> None:
        self.params = params

    def compute(self, ctx) -> float:
        return float(ctx.info.get("gamut_clip", 0.0))


@covariates.register("warp_deformation", params=NoParams, version="1", unit="share of width")
class WarpDeformation:
    """Mean absolute pixel displacement of a geometric operator, as a share of image width."""

    def __init__(self, params: NoParams | None = None, device: str = "cpu") -> None:
        self.params = params

    def compute(self, ctx) -> float:
        return float(ctx.info.get("deformation", 0.0))  # 0 for pixel-local operators


class LeakageParams(Params):
    tolerance: float = 1.0  # 8-bit levels: a pixel counts as changed above this


@covariates.register("leakage", params=LeakageParams, version="1", unit="share")
class Leakage:
    """Share of pixels outside the operator's region that changed by more than 1/255.

    A pixel changed when its largest per-channel absolute difference exceeds
    `tolerance` 8-bit levels. An operator without a region acts on the whole
    image, so nothing lies outside it: leakage 0 (also when the region is the
    whole image).
    """

    def __init__(self, params: LeakageParams, device: str = "cpu") -> None:
        self.params = params

    def compute(self, ctx) -> float:
        if ctx.operator_mask is None or ctx.variant is ctx.original:
            return 0.0
        outside = ~np.asarray(ctx.operator_mask, bool)
        n_out = int(np.count_nonzero(outside))
        if n_out == 0:
            return 0.0
        import cv2

        # |Δ| per channel, > tolerance → 255, then "any channel" via grey > 0 (all SIMD OpenCV;
        # numpy's max over the last axis of H×W×3 uint8 is ~20× slower).
        diff = cv2.absdiff(np.ascontiguousarray(ctx.original), np.ascontiguousarray(ctx.variant))
        _, over = cv2.threshold(diff, math.floor(self.params.tolerance), 255, cv2.THRESH_BINARY)
        changed = cv2.cvtColor(over, cv2.COLOR_RGB2GRAY) > 0
        return float(np.count_nonzero(changed & outside)) / n_out
