"""Regions: boolean masks per image. `not`, `&`, `|` are handled by the runtime."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from scoreaudit.registry import Params, Ref, regions


class FaceParams(Params):
    detector: Literal["haar"] = "haar"
    pad: float = 0.1  # grow the detected box by this share of its size
    min_size: int = 24  # pixels


@regions.register("face", params=FaceParams, version="1")
class Face:
    """The largest detected face (OpenCV's bundled frontal-face cascade, offline), as an ellipse mask."""


class SkinParams(Params):
    within: Optional[Annotated[str, Ref("region")]] = None


@regions.register("skin", params=SkinParams, version="1", positional=("within",))
class Skin:
    """Skin-coloured pixels (a YCrCb/HSV colour rule), restricted to the `within` region."""


class MaskParams(Params):
    column: Annotated[str, Ref("column")]
    threshold: int = 128


@regions.register("mask", params=MaskParams, version="1", positional=("column",))
class Mask:
    """A user mask: the manifest column holds a path to a grey image; pixels >= threshold are in."""


@regions.register("everything", version="1")
class Everything:
    """The whole image."""
