"""Pixel operators: pure `(image, region, dose) -> image` functions swept over doses.

Meta recorded on each entry (the compiler checks doses against it):
identity (the dose that returns the image unchanged), dose_range (inclusive
valid doses), pixel_local (changes only pixels inside its region), unit.
"""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from scoreaudit.registry import Params, Ref, operators

RegionRef = Annotated[str, Ref("region")]


class LabShiftParams(Params):
    channel: Literal["L", "a", "b"] = "L"
    region: Optional[RegionRef] = None


@operators.register("lab_shift", params=LabShiftParams, version="1", identity=0.0,
                    dose_range=(-100.0, 100.0), pixel_local=True, unit="CIELAB units")
class LabShift:
    """Shift one CIELAB (D65) channel of the region's pixels by the dose, gamut-clipped back into sRGB.

    Dose: added to L* (or a*, b*) in CIELAB units; 0 is the identity. Pixels
    whose shifted colour leaves the sRGB gamut are clipped; the share clipped is
    reported as the `gamut_clip` covariate.
    """


class RegionOnly(Params):
    region: Optional[RegionRef] = None


@operators.register("gaussian_blur", params=RegionOnly, version="1", identity=0.0,
                    dose_range=(0.0, 50.0), pixel_local=True, unit="sigma (px)")
class GaussianBlur:
    """Gaussian blur of the region with standard deviation `dose` pixels (0 = identity)."""


@operators.register("hue_rotate", params=RegionOnly, version="1", identity=0.0,
                    dose_range=(-180.0, 180.0), pixel_local=True, unit="degrees")
class HueRotate:
    """Rotate the CIELAB hue angle (in the a*b* plane) of the region by `dose` degrees."""


@operators.register("jpeg", params=RegionOnly, version="1", identity=100.0,
                    dose_range=(1.0, 100.0), pixel_local=True, unit="quality")
class Jpeg:
    """JPEG re-compression at quality `dose` (100 = identity: the image is left unchanged)."""


class NoiseParams(Params):
    region: Optional[RegionRef] = None


@operators.register("noise", params=NoiseParams, version="1", identity=0.0,
                    dose_range=(0.0, 255.0), pixel_local=True, unit="SD (8-bit levels)")
class Noise:
    """Add Gaussian noise with SD `dose` (8-bit levels), seeded by image content and dose."""


class TorsoWarpParams(Params):
    region: RegionRef
    falloff: float = 0.15


@operators.register("torso_warp", params=TorsoWarpParams, version="1", identity=1.0,
                    dose_range=(0.5, 2.0), pixel_local=False, unit="width factor")
class TorsoWarp:
    """Scale the region horizontally by `dose` about its centre, with smooth falloff (1.0 = identity).

    Geometric, so not pixel-local: pixels outside the region move too, and an
    axis it drives can only be a stress test.
    """
