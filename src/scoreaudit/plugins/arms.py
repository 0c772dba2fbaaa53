"""Arm sources: where images (or image pairs) and their manifest come from."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from scoreaudit.registry import ColumnValue, Params, Ref, arms

Column = Annotated[str, Ref("column")]


class ImagesParams(Params):
    folder: str
    manifest: Optional[str] = None  # CSV, parquet, JSON lines or JSON list; None: every image file in the folder
    kind: Literal["real", "synthetic"] = "synthetic"
    cluster: Optional[Column] = None
    strata: Optional[Column | list[Column]] = None
    factors: list[Column] = []
    id: Column = "id"
    path: Column = "path"
    prompt: Optional[Column] = None
    on_error: Optional[Literal["skip", "fail"]] = None
    max_pixels: int = 89_478_485  # decompression-bomb guard (Pillow's default)
    # Long tables of precomputed results (spec/precomputed.md), relative to the spec's folder.
    scores: Optional[str] = None  # id, operator, dose, scorer, score
    measures: Optional[str] = None  # id, operator, dose, measure, value


@arms.register("images", params=ImagesParams, version="1", positional=("folder",))
class Images:
    """A folder of images with a manifest (one row per image: id, path, and any other columns).

    `cluster` groups dependent images (a base image, a prompt): all inference
    resamples clusters. `strata` and `factors` name manifest columns.
    """


class PairsParams(Params):
    manifest: str
    preferred: Column
    other: Column
    prompt: Optional[Column] = None
    id: Column = "id"
    kind: Literal["real", "synthetic"] = "synthetic"
    cluster: Optional[Column] = None
    on_error: Optional[Literal["skip", "fail"]] = None
    # Long table of precomputed scores (spec/precomputed.md), relative to the spec's folder.
    scores: Optional[str] = None
    measures: Optional[str] = None  # accepted for symmetry; pairs arms have no operators to measure
    # false: the pairs have no image files; every scorer used on the arm must be precomputed
    # (manifest columns or a scores table). `preferred`/`other` then only name the two sides.
    images: bool = True


@arms.register("pairs", params=PairsParams, version="1", positional=("manifest",))
class Pairs:
    """Image pairs from a manifest: `preferred` and `other` columns hold image paths (relative to the manifest).

    The manifest may be CSV, parquet, JSON lines or a JSON list of records.
    With `images: false` the pairs have no image files (scores computed
    elsewhere): every scorer used on the arm must be `precomputed(...)` or come
    from a scores table (spec/precomputed.md).
    """
