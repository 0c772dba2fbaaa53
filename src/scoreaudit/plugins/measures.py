"""Measures (attributes of the image) and covariates (artifacts of the operator)."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from scoreaudit.registry import NoParams, Params, Ref, covariates, measures

RegionRef = Annotated[str, Ref("region")]


class ItaParams(Params):
    region: RegionRef
    stat: Literal["median", "mean"] = "median"


@measures.register("ita", params=ItaParams, version="1", unit="degrees", positional=("region",))
class Ita:
    """Individual typology angle ITA° = atan2(L* − 50, b*) · 180/π over the region's pixels (median by default).

    Higher is lighter skin. NaN when the region is empty.
    """


class MeanLabParams(Params):
    region: Optional[RegionRef] = None
    channel: Literal["L", "a", "b"] = "L"


@measures.register("mean_lab", params=MeanLabParams, version="1", unit="CIELAB units")
class MeanLab:
    """Mean of one CIELAB channel over the region's pixels."""


class WidthParams(Params):
    region: RegionRef


@measures.register("width_ratio", params=WidthParams, version="1", unit="ratio", positional=("region",))
class WidthRatio:
    """Mean horizontal extent of the region in the variant divided by that in the original (1.0 unchanged)."""


@covariates.register("gamut_clip", params=NoParams, version="1", unit="share")
class GamutClip:
    """Share of the operator's region pixels that were clipped back into the sRGB gamut."""


@covariates.register("warp_deformation", params=NoParams, version="1", unit="share of width")
class WarpDeformation:
    """Mean absolute pixel displacement of a geometric operator, as a share of image width."""


class LeakageParams(Params):
    tolerance: float = 1.0  # 8-bit levels: a pixel counts as changed above this


@covariates.register("leakage", params=LeakageParams, version="1", unit="share")
class Leakage:
    """Share of pixels outside the operator's region that changed by more than 1/255."""
