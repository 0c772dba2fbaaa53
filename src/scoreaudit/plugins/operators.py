"""Pixel operators: pure `(image, region, dose) -> image` functions swept over doses.

Meta recorded on each entry (the compiler checks doses against it):
identity (the dose that returns the image unchanged), dose_range (inclusive
valid doses), pixel_local (changes only pixels inside its region), unit,
on_device (the sweep runs on a CUDA device when the run has one).

Each class follows `plugins.base.Operator`: `sweep(image, mask, doses, seed)`
returns one `OperatorOutput` per dose, in the order given. Shared rules:

- Pure and deterministic; the output for a dose never depends on which other
  doses are in the sweep (so a cache may compute doses in any grouping).
- The identity dose returns the input array itself (bit for bit, no copy):
  treat every output image as read-only.
- `mask` None means the whole image. Pixel-local operators copy the input and
  write only the region's pixels, so pixels outside are bit-identical.
- Work is vectorised numpy/OpenCV on the CPU, the reference; colour operators
  convert the region's pixels to CIELAB once per sweep, not once per dose. Built
  with a CUDA `device`, an operator sweeps with its torch twin (scoreaudit.plugins.gpu,
  held equal to this reference by tests/gpu) on the device, and the variants come
  back as arrays (the executor keys its caches by their content hashes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

import numpy as np

from scoreaudit.compiler.doses import same_dose
from scoreaudit.plugins.base import OperatorOutput
from scoreaudit.registry import Params, Ref, operators

CHANNEL_INDEX = {"L": 0, "a": 1, "b": 2}


def _region(image: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """A bool H×W mask (None → the whole image)."""
    if mask is None:
        return np.ones(image.shape[:2], bool)
    return np.asarray(mask, dtype=bool)


def on_device(name: str, params, device: str, image: np.ndarray, mask: np.ndarray | None,
              doses: Sequence[float], seed: int, content_seeded: bool = False) -> list[OperatorOutput]:
    """The sweep of operator `name` by its torch twin on `device`: the image goes there once, every
    dose is computed there, and each variant returns once; the identity dose returns `image` itself.
    `content_seeded`: the twin seeds with the image's content hash, computed here on the host copy."""
    import torch  # only for a torch device

    from scoreaudit.plugins.base import content_hash
    from scoreaudit.plugins.gpu.operators import sweep

    t = torch.from_numpy(np.require(image, requirements=["C", "W"])).to(device)
    m = None if mask is None else torch.from_numpy(np.asarray(mask, dtype=bool)).to(device)
    image_hash = content_hash(image) if content_seeded else None
    out = []
    for v, info in sweep(name, params, t, m, list(doses), seed, image_hash):
        arr = image if v is t else v.cpu().numpy()
        out.append(OperatorOutput(arr, {k: float(x) for k, x in info.items()}))
    return out


def _cuda(device: str | None) -> bool:
    return bool(device) and str(device).startswith("cuda")


def _operator(name: str, **meta):
    """Register an operator class; its `identity` attribute comes from the one `identity=` fact.

    Every built-in operator sweeps with its torch twin on a CUDA device (`on_device`)."""
    register = operators.register(name, **{"on_device": True, **meta})

    def decorate(cls):
        cls.identity = float(meta["identity"])
        cls.name = name  # which torch twin `TwinSwept.sweep` runs on a CUDA device
        return register(cls)

    return decorate


class TwinSwept:
    """What every built-in operator shares: `sweep` runs its torch twin (plugins/gpu/operators.py, the one
    registered under the same name) on a CUDA device and the numpy `reference` anywhere else, so the
    dispatch is written once, not once per operator."""

    name: str  # the registered name (`_operator` sets it)
    identity: float
    params: Any
    device: str = "cpu"
    content_seeded = False  # True: the sweep seeds with the image's content hash (noise's field)

    def reference(self, image, mask, doses, seed=0) -> list[OperatorOutput]:
        raise NotImplementedError

    def sweep(self, image, mask, doses, seed=0) -> list[OperatorOutput]:
        if _cuda(self.device):
            return on_device(self.name, self.params, self.device, image, mask, doses, seed,
                             content_seeded=self.content_seeded)
        return self.reference(image, mask, doses, seed)


def _paste(image: np.ndarray, mask: np.ndarray, pixels: np.ndarray) -> np.ndarray:
    out = image.copy()
    out[mask] = pixels
    return out


def _lab_sweep(image: np.ndarray, mask: np.ndarray | None, doses: Sequence[float], identity: float,
               edit: Callable[[np.ndarray, float], np.ndarray]) -> list[OperatorOutput]:
    """Shared body of the CIELAB operators: region pixels → Lab once, `edit` per dose, clip back."""
    from scoreaudit.plugins.colour import clip_share, lab_to_srgb8, srgb8_to_lab

    region = _region(image, mask)
    lab = None
    outputs = []
    for dose in doses:
        if same_dose(dose, identity) or not region.any():
            outputs.append(OperatorOutput(image, {"gamut_clip": 0.0}))
            continue
        if lab is None:
            lab = srgb8_to_lab(image[region])
        rgb, clipped = lab_to_srgb8(edit(lab, float(dose)))
        outputs.append(OperatorOutput(_paste(image, region, rgb), {"gamut_clip": clip_share(clipped)}))
    return outputs

RegionRef = Annotated[str, Ref("region")]


class LabShiftParams(Params):
    channel: Literal["L", "a", "b"] = "L"
    region: RegionRef | None = None


@_operator("lab_shift", params=LabShiftParams, version="1", identity=0.0,
                    dose_range=(-100.0, 100.0), pixel_local=True, unit="CIELAB units")
class LabShift(TwinSwept):
    """Shift one CIELAB (D65) channel of the region's pixels by the dose, gamut-clipped back into sRGB.

    Dose: added to L* (or a*, b*) in CIELAB units; 0 is the identity. Pixels
    whose shifted colour leaves the sRGB gamut are clipped; the share clipped is
    reported as the `gamut_clip` covariate.
    """


    def __init__(self, params: LabShiftParams, device: str = "cpu") -> None:
        self.params = params
        self.device = device
        self.channel = CHANNEL_INDEX[params.channel]

    def _edit(self, lab: np.ndarray, dose: float) -> np.ndarray:
        out = lab.copy()
        out[:, self.channel] += np.float32(dose)
        return out

    def reference(self, image, mask, doses, seed=0) -> list[OperatorOutput]:
        return _lab_sweep(image, mask, doses, self.identity, self._edit)


class RegionOnly(Params):
    region: RegionRef | None = None


@_operator("gaussian_blur", params=RegionOnly, version="1", identity=0.0,
                    dose_range=(0.0, 50.0), pixel_local=True, unit="sigma (px)")
class GaussianBlur(TwinSwept):
    """Gaussian blur of the region with standard deviation `dose` pixels (0 = identity).

    The blur reads pixels outside the region (a region's edge pixels average
    with their neighbours) but only region pixels are written, so it stays
    pixel-local. OpenCV GaussianBlur, kernel radius ~3σ, reflected borders.
    """


    def __init__(self, params: RegionOnly, device: str = "cpu") -> None:
        self.params = params
        self.device = device

    def reference(self, image, mask, doses, seed=0) -> list[OperatorOutput]:
        import cv2

        region = _region(image, mask)
        outputs = []
        if region.any():
            ys, xs = np.nonzero(region.any(axis=1))[0], np.nonzero(region.any(axis=0))[0]
        for dose in doses:
            if same_dose(dose, self.identity) or not region.any():
                outputs.append(OperatorOutput(image, {}))
                continue
            # Blur only the region's bounding box plus the kernel radius: same pixels, less work.
            r = int(math.ceil(4 * float(dose))) + 2
            h, w = region.shape
            y0, y1 = max(0, ys[0] - r), min(h, ys[-1] + 1 + r)
            x0, x1 = max(0, xs[0] - r), min(w, xs[-1] + 1 + r)
            crop = np.ascontiguousarray(image[y0:y1, x0:x1])
            blurred = cv2.GaussianBlur(crop, (0, 0), sigmaX=float(dose), sigmaY=float(dose),
                                       borderType=cv2.BORDER_REFLECT_101)
            out = image.copy()
            sub = region[y0:y1, x0:x1]
            out[y0:y1, x0:x1][sub] = blurred[sub]
            outputs.append(OperatorOutput(out, {}))
        return outputs


@_operator("hue_rotate", params=RegionOnly, version="1", identity=0.0,
                    dose_range=(-180.0, 180.0), pixel_local=True, unit="degrees")
class HueRotate(TwinSwept):
    """Rotate the CIELAB hue angle (in the a*b* plane) of the region by `dose` degrees.

    L* and chroma are kept; colours pushed out of the sRGB gamut are clipped
    (`gamut_clip` reports the share).
    """


    def __init__(self, params: RegionOnly, device: str = "cpu") -> None:
        self.params = params
        self.device = device

    @staticmethod
    def _edit(lab: np.ndarray, dose: float) -> np.ndarray:
        theta = math.radians(dose)
        c, s = np.float32(math.cos(theta)), np.float32(math.sin(theta))
        out = lab.copy()
        out[:, 1] = lab[:, 1] * c - lab[:, 2] * s
        out[:, 2] = lab[:, 1] * s + lab[:, 2] * c
        return out

    def reference(self, image, mask, doses, seed=0) -> list[OperatorOutput]:
        return _lab_sweep(image, mask, doses, self.identity, self._edit)


@_operator("jpeg", params=RegionOnly, version="1", identity=100.0,
                    dose_range=(1.0, 100.0), pixel_local=True, unit="quality")
class Jpeg(TwinSwept):
    """JPEG re-compression at quality `dose` (100 = identity: the image is left unchanged).

    The whole image is encoded (OpenCV/libjpeg, 4:2:0 chroma, quality rounded
    to an integer) so the 8×8 block grid is the image's; only region pixels
    of the decoded result are pasted back.
    """


    def __init__(self, params: RegionOnly, device: str = "cpu") -> None:
        self.params = params
        self.device = device

    def reference(self, image, mask, doses, seed=0) -> list[OperatorOutput]:
        import cv2

        region = _region(image, mask)
        bgr = None
        outputs = []
        for dose in doses:
            quality = int(round(float(dose)))
            if quality >= 100 or not region.any():
                outputs.append(OperatorOutput(image, {}))
                continue
            if bgr is None:
                bgr = np.ascontiguousarray(image[..., ::-1])
            ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, max(1, quality)])
            if not ok:  # pragma: no cover - libjpeg failure
                raise RuntimeError("JPEG encoding failed")
            decoded = cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1]
            outputs.append(OperatorOutput(_paste(image, region, decoded[region]), {}))
        return outputs


class NoiseParams(Params):
    region: RegionRef | None = None


@_operator("noise", params=NoiseParams, version="1", identity=0.0,
                    dose_range=(0.0, 255.0), pixel_local=True, unit="SD (8-bit levels)")
class Noise(TwinSwept):
    """Add Gaussian noise with SD `dose` (8-bit levels), seeded by image content and dose.

    One standard-normal field per image (H×W×3), seeded by the `seed`
    argument (the audit seed, or one the executor derives) together with the
    image's content hash, so two images never share a field even when the
    executor passes the same seed. The field is scaled by each dose: common
    random numbers, so the dose response is smooth and a dose's output does
    not depend on the other doses. Values are rounded and clipped to 0..255.
    """

    content_seeded = True

    def __init__(self, params: NoiseParams, device: str = "cpu") -> None:
        self.params = params
        self.device = device

    def reference(self, image, mask, doses, seed=0) -> list[OperatorOutput]:
        region = _region(image, mask)
        field = None
        outputs = []
        for dose in doses:
            if same_dose(dose, self.identity) or not region.any():
                outputs.append(OperatorOutput(image, {}))
                continue
            if field is None:
                from scoreaudit.plugins.base import content_hash

                rng = np.random.default_rng([int(seed) & (2**63 - 1), int(content_hash(image)[:16], 16)])
                field = rng.standard_normal(image.shape, dtype=np.float32)[region]
                base = image[region].astype(np.float32)
            noisy = np.clip(np.rint(base + np.float32(dose) * field), 0, 255).astype(np.uint8)
            outputs.append(OperatorOutput(_paste(image, region, noisy), {}))
        return outputs


class TorsoWarpParams(Params):
    region: RegionRef
    falloff: float = 0.15


@_operator("torso_warp", params=TorsoWarpParams, version="1", identity=1.0,
                    dose_range=(0.5, 2.0), pixel_local=False, unit="width factor")
class TorsoWarp(TwinSwept):
    """Scale the region horizontally by `dose` about its centre, with smooth falloff (1.0 = identity).

    Geometric, so not pixel-local: pixels outside the region move too, and an
    axis it drives can only be a stress test.

    Let the region span columns [x0, x1] (centre c, half-width w) and rows
    [y0, y1]. Inside |x − c| <= dose·w an output pixel samples column
    c + (x − c)/dose (exact scaling); beyond, the displacement (dose − 1)·w
    fades to 0 with a smoothstep over a band of `falloff` × image width
    (widened when needed so the map stays monotonic, i.e. nothing folds).
    Rows fade the same way over `falloff` × image height above and below the
    region. Bilinear resampling (cv2.remap), reflected borders.
    info: "deformation" = mean |displacement| over all pixels / image width;
    "width_ratio" = mean per-row width of the warped region mask / original.
    """


    def __init__(self, params: TorsoWarpParams, device: str = "cpu") -> None:
        self.params = params
        self.device = device

    @staticmethod
    def _smooth_fade(t: np.ndarray) -> np.ndarray:
        """1 at t <= 0, 0 at t >= 1, smoothstep between."""
        t = np.clip(t, 0.0, 1.0)
        return 1.0 - t * t * (3.0 - 2.0 * t)

    def maps(self, mask: np.ndarray, dose: float) -> tuple[np.ndarray, np.ndarray]:
        """(map_x, map_y) float32 H×W: the source coordinates of every output pixel."""
        h, w_img = mask.shape
        cols = np.nonzero(mask.any(axis=0))[0]
        rows = np.nonzero(mask.any(axis=1))[0]
        x0, x1, y0, y1 = cols[0], cols[-1], rows[0], rows[-1]
        c = (x0 + x1) / 2.0
        half = (x1 - x0 + 1) / 2.0
        edge = dose * half  # output half-width of the scaled region
        shift = (dose - 1.0) * half  # displacement at the region's edge
        band_x = max(self.params.falloff * w_img, 1.5 * abs(shift) + 1.0)
        x = np.arange(w_img, dtype=np.float64)
        r = np.abs(x - c)
        inner = c + (x - c) / dose
        outer = x - np.sign(x - c) * shift * self._smooth_fade((r - edge) / band_x)
        disp_x = np.where(r <= edge, inner, outer) - x
        y = np.arange(h, dtype=np.float64)
        dist_y = np.maximum(np.maximum(y0 - y, y - y1), 0.0)
        band_y = max(self.params.falloff * h, 1.0)
        weight_y = np.where(dist_y == 0, 1.0, self._smooth_fade(dist_y / band_y))
        map_x = (x[None, :] + weight_y[:, None] * disp_x[None, :]).astype(np.float32)
        map_y = np.repeat(y[:, None], w_img, axis=1).astype(np.float32)
        return map_x, map_y

    @staticmethod
    def mean_width(mask: np.ndarray) -> float:
        per_row = mask.sum(axis=1)
        return float(per_row[per_row > 0].mean()) if per_row.any() else float("nan")

    def reference(self, image, mask, doses, seed=0) -> list[OperatorOutput]:
        import cv2

        region = _region(image, mask)
        outputs = []
        for dose in doses:
            if same_dose(dose, self.identity) or not region.any():
                outputs.append(OperatorOutput(image, {"deformation": 0.0, "width_ratio": 1.0}))
                continue
            map_x, map_y = self.maps(region, float(dose))
            out = cv2.remap(image, map_x, map_y, interpolation=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_REFLECT_101)
            warped = cv2.remap(region.astype(np.uint8) * 255, map_x, map_y, interpolation=cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_REFLECT_101) >= 128
            x = np.arange(image.shape[1], dtype=np.float32)[None, :]
            deformation = float(np.abs(map_x - x).mean()) / image.shape[1]
            outputs.append(OperatorOutput(out, {
                "deformation": deformation,
                "width_ratio": self.mean_width(warped) / self.mean_width(region),
            }))
        return outputs
