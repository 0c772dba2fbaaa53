"""What an image of an arm is, and how its pixels are read.

- `ImageRecord`: one manifest row (pixels not yet read); `Exclusion`: a row of
  exclusions.parquet; `Decoded`: a record with its pixels and content hash.
- `decode_image(path, max_pixels) -> np.ndarray` (uint8 H×W×3 sRGB) or raises
  `ImageFailure(stage="decode", reason)`.
- `decode_record(record, max_pixels) -> Decoded | Exclusion`: the same for one
  manifest row, never raising for a bad image.
- `content_hash(image) -> str`: sha256 of dtype, shape and bytes (same scheme
  as `scoreaudit.keys.hash_array`).
- `exclusion_errors(exclusions) -> list[Diagnostic]`: what `on_error: fail` reports (E0706).

Manifests are read and checked by runtime/manifests.py.

Decoding: EXIF orientation is applied; an embedded ICC profile is converted to
sRGB when Pillow's ImageCms can (otherwise the pixels are taken as sRGB);
palette, greyscale (1, L, LA, I;16, I, F), CMYK and YCbCr become RGB; 16-bit
PNGs are rounded to 8 bits (value / 257); alpha is composited on white,
because that is what a viewer (and a scorer's preprocessing, which drops
alpha) sees for a transparent background, and it keeps the pixels defined.
Images larger than `max_pixels` are refused before decoding
(decompression-bomb guard).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scoreaudit.diagnostics import Diagnostic
from scoreaudit.plugins.base import ImageFailure, content_hash  # the failure decoding raises, the hash of its pixels
from scoreaudit.safeio import UnsafePath, read_regular

# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class Exclusion:
    """A row of `exclusions.parquet` (spec/bundle.md)."""

    arm: str
    image_id: str | None
    row: int | None
    stage: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"arm": self.arm, "image_id": self.image_id, "row": self.row,
                "stage": self.stage, "reason": self.reason}


@dataclass(frozen=True)
class ImageRecord:
    """One image of an arm, as the manifest describes it (pixels not yet read)."""

    arm: str
    image_id: str
    row: int  # 1-based data row of the manifest (header = row 0)
    path: Path | None  # resolved file path (None: a `pairs(..., images: false)` arm has no files)
    display_path: str  # the path as shown to users (relative to the spec folder when possible)
    cluster: str  # the cluster column's value, or the image id (pair id for pairs) without one
    prompt: str | None = None
    side: str | None = None  # "preferred" | "other" for pairs arms
    pair_id: str | None = None
    columns: Mapping[str, Any] = field(default_factory=dict)  # the manifest row, values as read
    root: str | None = None  # the folder the file must lie in when it is opened (None: anywhere)


@dataclass(frozen=True)
class Decoded:
    record: ImageRecord
    image: np.ndarray  # uint8 H×W×3 sRGB
    content_hash: str
    notes: tuple[str, ...] = ()  # warnings about this image (e.g. animated: the first frame is used)


# --------------------------------------------------------------------------- decoding


def _composite_on_white(rgb: np.ndarray, alpha: np.ndarray, alpha_max: float) -> np.ndarray:
    a = alpha.astype(np.float32)[..., None] / np.float32(alpha_max)
    out = rgb.astype(np.float32) * a + np.float32(255.0) * (1.0 - a)
    return np.rint(out).clip(0, 255).astype(np.uint8)


def _from_rgba(img) -> np.ndarray:
    arr = np.asarray(img.convert("RGBA"))
    return _composite_on_white(arr[..., :3], arr[..., 3], 255.0)


def _from_la(img) -> np.ndarray:
    arr = np.asarray(img.convert("LA"))
    grey = np.repeat(arr[..., :1], 3, axis=2)
    return _composite_on_white(grey, arr[..., 1], 255.0)


def _from_palette(img) -> np.ndarray:
    if "transparency" in img.info or img.mode == "PA":
        return _from_rgba(img)
    return np.asarray(img.convert("RGB"))


def _grey16(values: np.ndarray) -> np.ndarray:
    """16-bit grey levels (0..65535) → 8-bit RGB by rounding value / 257."""
    grey = np.rint(np.clip(values.astype(np.float64), 0, 65535) / 257.0).astype(np.uint8)
    return np.repeat(grey[..., None], 3, axis=2)


def _from_int(img) -> np.ndarray:
    # "I;16*" and "I" (32-bit) greyscale: PNG/TIFF 16-bit greyscale decodes to these.
    return _grey16(np.asarray(img).astype(np.int64))


def _from_float(img) -> np.ndarray:
    arr = np.nan_to_num(np.asarray(img, dtype=np.float64))
    scale = 255.0 if arr.size and arr.max() <= 1.0 else 1.0  # [0, 1] floats or 0..255 levels
    grey = np.rint(np.clip(arr * scale, 0, 255)).astype(np.uint8)
    return np.repeat(grey[..., None], 3, axis=2)


def _via_rgb(img) -> np.ndarray:
    return np.asarray(img.convert("RGB"))


# Pillow mode → converter to uint8 RGB (alpha composited on white).
MODE_CONVERTERS: dict[str, Callable[[Any], np.ndarray]] = {
    "RGB": lambda img: np.asarray(img),
    "RGBA": _from_rgba,
    "RGBa": _from_rgba,
    "RGBX": _via_rgb,
    "L": _via_rgb,
    "1": _via_rgb,
    "LA": _from_la,
    "La": _from_la,
    "P": _from_palette,
    "PA": _from_palette,
    "I": _from_int,
    "I;16": _from_int,
    "I;16L": _from_int,
    "I;16B": _from_int,
    "I;16N": _from_int,
    "F": _from_float,
    "CMYK": _via_rgb,
    "YCbCr": _via_rgb,
    "HSV": _via_rgb,
}


def _png_bit_depth(data: bytes) -> int | None:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) > 25:
        return data[24]
    return None


def _decode_png16(data: bytes) -> np.ndarray | None:
    """16-bit colour PNGs: Pillow truncates them to the high byte; round value/257 instead."""
    import cv2

    arr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if arr is None or arr.dtype != np.uint16 or arr.ndim != 3:
        return None  # greyscale 16-bit is handled by Pillow's I;16 path
    rgb = arr[..., 2::-1] if arr.shape[2] >= 3 else arr
    rgb8 = np.rint(rgb.astype(np.float32) / np.float32(257.0)).astype(np.uint8)
    if arr.shape[2] == 4:
        return _composite_on_white(rgb8, arr[..., 3], 65535.0)
    return np.ascontiguousarray(rgb8)


def _icc_to_srgb(img):
    """Convert an image with an embedded ICC profile to sRGB; unchanged when that fails."""
    icc = img.info.get("icc_profile")
    if not icc or img.mode not in ("RGB", "RGBA", "CMYK", "L", "LA"):
        return img
    try:
        from PIL import ImageCms

        src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        dst = ImageCms.createProfile("sRGB")
        out_mode = "RGBA" if img.mode in ("RGBA", "LA") else "RGB"
        if img.mode == "LA":
            img = img.convert("RGBA")
        return ImageCms.profileToProfile(img, src, dst, outputMode=out_mode)
    except Exception:  # noqa: BLE001 - a broken or exotic profile: keep the pixels as they are (taken as sRGB)
        return img


def too_big(width: int, height: int, max_pixels: int) -> str:
    return (f"image is {width}×{height} = {width * height:,} pixels, more than max_pixels "
            f"({max_pixels:,}); refused as a possible decompression bomb (raise max_pixels on "
            f"the arm if you trust this file)")


def decode_image(path: str | Path, max_pixels: int = 89_478_485, info: dict | None = None,
                 root: str | Path | None = None) -> np.ndarray:
    """Decode one file to uint8 H×W×3 sRGB, or raise `ImageFailure(stage="decode")`.

    `info`, when given, receives "frames": the file's frame count (an animated
    image decodes to its first frame). `root`: the file actually opened must lie
    under it (checked on the open descriptor, so a link swapped in after the
    manifest check is refused, not read).
    """
    from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

    # WeasyPrint sets Pillow's process-wide LOAD_TRUNCATED_IMAGES = True on import; a truncated
    # image must still be an exclusion here, so decode under the strict setting.
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    path = Path(path)
    try:
        data = read_regular(path, root=root)
    except FileNotFoundError:
        raise ImageFailure("decode", "image file not found") from None
    except UnsafePath as exc:
        raise ImageFailure("decode", f"the path {exc.what}") from None
    except OSError as exc:
        raise ImageFailure("decode", f"cannot read the file ({exc.strerror or exc})") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            img = Image.open(io.BytesIO(data))
            width, height = img.size
            if width * height > max_pixels:
                raise ImageFailure("decode", too_big(width, height, max_pixels))
            img.load()
            if info is not None:
                info["frames"] = int(getattr(img, "n_frames", 1) or 1)
        except ImageFailure:
            raise
        except Image.DecompressionBombError as exc:
            raise ImageFailure("decode", f"refused as a possible decompression bomb: {exc}") from None
        except UnidentifiedImageError:
            raise ImageFailure("decode", "not a readable image file (unknown or corrupt format)") from None
        except (OSError, ValueError, SyntaxError) as exc:
            raise ImageFailure("decode", f"image data is corrupt or truncated ({exc})") from None
    try:
        if _png_bit_depth(data) == 16 and img.mode in ("RGB", "RGBA"):
            arr = _decode_png16(data)
            if arr is not None:
                return arr
        img = ImageOps.exif_transpose(img)
        img = _icc_to_srgb(img)
        convert = MODE_CONVERTERS.get(img.mode, _via_rgb)
        arr = convert(img)
    except ImageFailure:
        raise
    except Exception as exc:  # noqa: BLE001 - an exotic mode Pillow cannot convert
        raise ImageFailure("decode", f"cannot convert image mode {img.mode!r} to RGB ({exc})") from None
    if arr.ndim != 3 or arr.shape[2] != 3 or arr.dtype != np.uint8:
        raise ImageFailure("decode", f"cannot convert image mode {img.mode!r} to 8-bit RGB")
    return np.ascontiguousarray(arr)


def decode_record(record: ImageRecord, max_pixels: int = 89_478_485) -> Decoded | Exclusion:
    """Decode one manifest row; a failure becomes an `Exclusion` (stage "decode")."""
    if record.path is None:  # a `pairs(..., images: false)` record: nothing to decode
        return Exclusion(record.arm, record.image_id, record.row, "decode",
                         f"the arm has no image files (images: false) (row {record.row})")
    info: dict = {}
    try:
        image = decode_image(record.path, max_pixels, info, root=record.root)
    except ImageFailure as exc:
        return Exclusion(record.arm, record.image_id, record.row, exc.stage,
                         f"{exc.reason} (row {record.row}, {record.display_path})")
    notes = ()
    if info.get("frames", 1) > 1:
        notes = (f"image '{record.image_id}' of arm '{record.arm}' ({record.display_path}) is animated "
                 f"({info['frames']} frames): only the first frame is used",)
    return Decoded(record, image, content_hash(image), notes)


def exclusion_errors(exclusions: Iterable[Exclusion], path: str | None = None) -> list[Diagnostic]:
    """`on_error: fail`: every exclusion becomes an error diagnostic (E0706)."""
    return [
        Diagnostic("E0706", "error",
                   f"arm '{e.arm}': image '{e.image_id}' cannot be used: {e.reason}",
                   path=path,
                   help="fix or remove the image, or set `on_error: skip` to exclude it and go on")
        for e in exclusions
    ]
