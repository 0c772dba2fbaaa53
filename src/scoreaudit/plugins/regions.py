"""Regions: boolean masks per image. `not`, `&`, `|` are handled by the runtime.

Each class follows `plugins.base.Region`: built once per run with its params,
then `compute(image, ctx) -> bool H×W` per image, on the ORIGINAL image.
They run on the CPU with OpenCV/numpy (the `device` argument is accepted and
ignored) and are deterministic. A problem with one image's inputs (a missing
or mis-sized user mask) raises `plugins.base.ImageFailure(stage="region")`,
which the executor turns into an exclusion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np

from scoreaudit.registry import Params, Ref, regions

# Face detection runs on a copy whose long side is at most this many pixels:
# Haar cost grows with area (512² ≈ 135 ms, 320² ≈ 50 ms here) and faces
# smaller than ~24 px at that scale (≈7.5% of the long side) are not usable
# regions anyway.
FACE_DETECT_SIDE = 320
_CASCADES: dict[str, Any] = {}


def _cascade(name: str):
    """Per-process cache of OpenCV cascades (they are not picklable, so never shipped)."""
    import cv2

    if name not in _CASCADES:
        clf = cv2.CascadeClassifier(cv2.data.haarcascades + name)  # type: ignore[attr-defined]  # cv2's stubs omit data
        if clf.empty():  # pragma: no cover - a broken OpenCV install
            raise RuntimeError(f"OpenCV cascade {name} could not be loaded from {cv2.data.haarcascades}")  # type: ignore[attr-defined]
        _CASCADES[name] = clf
    return _CASCADES[name]


def _fail(reason: str):
    from scoreaudit.plugins.base import ImageFailure

    return ImageFailure("region", reason)


class FaceParams(Params):
    detector: Literal["haar"] = "haar"
    pad: float = 0.1  # grow the detected box by this share of its size
    min_size: int = 24  # pixels


@regions.register("face", params=FaceParams, version="1")
class Face:
    """The largest detected face (OpenCV's bundled frontal-face cascade, offline), as an ellipse mask.

    The detector runs on a greyscale copy (no histogram equalisation: it
    produced false positives on flat backgrounds) scaled so its
    long side is at most 320 px (scaleFactor 1.1, minNeighbors 5). The largest
    box (ties: the top-most, then left-most) is grown by `pad` × its size on
    each side and filled as an axis-aligned ellipse. No face: an empty mask.
    """

    def __init__(self, params: FaceParams, device: str = "cpu") -> None:
        self.params = params

    def detect(self, image: np.ndarray) -> tuple[int, int, int, int] | None:
        """(x, y, w, h) of the largest face in image pixels, or None."""
        import cv2

        h, w = image.shape[:2]
        scale = min(1.0, FACE_DETECT_SIDE / max(h, w))
        grey = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
        if scale < 1.0:
            grey = cv2.resize(grey, (max(1, round(w * scale)), max(1, round(h * scale))),
                              interpolation=cv2.INTER_AREA)
        min_side = max(24, int(round(self.params.min_size * scale)))
        if min(grey.shape) < min_side:
            return None
        boxes = _cascade("haarcascade_frontalface_default.xml").detectMultiScale(
            grey, scaleFactor=1.1, minNeighbors=5, minSize=(min_side, min_side))
        if len(boxes) == 0:
            return None
        x, y, bw, bh = min((tuple(int(v) for v in b) for b in boxes),
                           key=lambda b: (-b[2] * b[3], b[1], b[0]))
        return (round(x / scale), round(y / scale), round(bw / scale), round(bh / scale))

    def compute(self, image: np.ndarray, ctx) -> np.ndarray:
        import cv2

        mask = np.zeros(image.shape[:2], np.uint8)
        box = self.detect(image)
        if box is not None:
            x, y, bw, bh = box
            centre = (int(round(x + bw / 2)), int(round(y + bh / 2)))
            axes = (max(1, int(round(bw * (0.5 + self.params.pad)))),
                    max(1, int(round(bh * (0.5 + self.params.pad)))))
            cv2.ellipse(mask, centre, axes, 0, 0, 360, 1, thickness=-1)
        return mask.astype(bool)


class SkinParams(Params):
    within: Annotated[str, Ref("region")] | None = None


@regions.register("skin", params=SkinParams, version="1", positional=("within",))
class Skin:
    """Skin-coloured pixels (a YCrCb/HSV colour rule), restricted to the `within` region.

    Rule (on 8-bit OpenCV channels): 133 <= Cr <= 173 and 77 <= Cb <= 127
    (Chai & Ngan's YCrCb box), and hue within 0°–50° or 340°–360° (OpenCV H
    <= 25 or >= 170) with saturation >= 0.1 (S >= 26) and value >= 0.2
    (V >= 51), which drops greys, dark shadows and reddish non-skin hues the
    YCrCb box admits. Without `within`, the whole image is searched.
    """

    def __init__(self, params: SkinParams, device: str = "cpu") -> None:
        self.params = params

    @staticmethod
    def rule(image: np.ndarray) -> np.ndarray:
        import cv2

        ycc = cv2.cvtColor(image, cv2.COLOR_RGB2YCrCb)
        hsv = cv2.cvtColor(image, cv2.COLOR_RGB2HSV)
        ycc_ok = cv2.inRange(ycc, (0, 133, 77), (255, 173, 127))
        hue_lo = cv2.inRange(hsv, (0, 26, 51), (25, 255, 255))
        hue_hi = cv2.inRange(hsv, (170, 26, 51), (180, 255, 255))
        return np.logical_and(ycc_ok, np.logical_or(hue_lo, hue_hi))

    def compute(self, image: np.ndarray, ctx) -> np.ndarray:
        within = self.params.within
        if within is None:
            return self.rule(image)
        limit = ctx.masks[within]
        if not limit.any():
            return np.zeros(image.shape[:2], bool)
        ys, xs = np.nonzero(limit)  # classify only the bounding box of `within`
        y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
        out = np.zeros(image.shape[:2], bool)
        out[y0:y1, x0:x1] = self.rule(np.ascontiguousarray(image[y0:y1, x0:x1])) & limit[y0:y1, x0:x1]
        return out


class MaskParams(Params):
    column: Annotated[str, Ref("column")]
    threshold: int = 128


@regions.register("mask", params=MaskParams, version="1", positional=("column",), file_columns=("column",))
class Mask:
    """A user mask: the manifest column holds a path to a grey image; pixels >= threshold are in.

    The path is relative to the arm's base folder (the image folder; for pairs
    the manifest's folder). Colour masks are converted to grey (ITU-R 601
    luma); 16-bit masks are scaled to 8 bits. The mask must have exactly the
    image's size (after EXIF orientation): it is never resized, because a
    resized mask silently misplaces the region.
    """

    def __init__(self, params: MaskParams, device: str = "cpu") -> None:
        self.params = params

    def compute(self, image: np.ndarray, ctx) -> np.ndarray:
        from PIL import Image, ImageOps, UnidentifiedImageError

        column = self.params.column
        rel = ctx.row.get(column)
        if rel is None or (isinstance(rel, float) and rel != rel) or not str(rel).strip():
            raise _fail(f"no mask path in column '{column}'")
        import io

        from scoreaudit.safeio import UnsafePath, inside, read_regular

        path = Path(ctx.base_dir) / str(rel).strip()
        if not inside(path, ctx.root):  # the runtime refuses these before the run (E0707); never read one
            raise _fail(f"mask path {rel} (column '{column}') leaves the project folder")
        try:
            with Image.open(io.BytesIO(read_regular(path, root=ctx.root))) as img:  # the opened file contained
                img = ImageOps.exif_transpose(img)
                if img.mode.startswith("I"):
                    grey = np.clip(np.asarray(img).astype(np.float64) / 257.0, 0, 255)
                else:
                    grey = np.asarray(img.convert("L")).astype(np.float64)
        except FileNotFoundError:
            raise _fail(f"mask file not found: {rel} (column '{column}')") from None
        except UnsafePath as exc:
            raise _fail(f"mask {rel} (column '{column}') {exc.what}") from None
        except (UnidentifiedImageError, OSError) as exc:
            raise _fail(f"mask file {rel} is not a readable image ({exc})") from None
        h, w = image.shape[:2]
        if grey.shape != (h, w):
            raise _fail(f"mask {rel} is {grey.shape[1]}×{grey.shape[0]} but the image is {w}×{h}; "
                        f"masks must have the image's exact size")
        return grey >= self.params.threshold


@regions.register("everything", version="1")
class Everything:
    """The whole image."""

    def __init__(self, params: Any = None, device: str = "cpu") -> None:
        self.params = params

    def compute(self, image: np.ndarray, ctx) -> np.ndarray:
        return np.ones(image.shape[:2], bool)
