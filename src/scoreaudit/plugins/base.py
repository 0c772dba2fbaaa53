"""The interfaces plugin implementations follow (what the runtime calls).

Images are numpy arrays: uint8, H×W×3, sRGB. Masks are bool H×W. Everything
here is light to import; implementations import heavy libraries lazily.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from scoreaudit.keys import hash_array


class ImageFailure(Exception):
    """One image could not be used at one stage (decode, region, ...); `reason` is what a user reads."""

    def __init__(self, stage: str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


def content_hash(image: np.ndarray) -> str:
    """sha256 of dtype, shape and pixel bytes: the identity of an image in every cache key (keys.hash_array,
    the one content-address scheme)."""
    return hash_array(image)


@dataclass(frozen=True)
class OperatorOutput:
    """One variant of an image and what the operator observed making it.

    `info` keys used by covariates: "gamut_clip" (share of region pixels
    clipped back into sRGB), "deformation" (mean absolute displacement in
    pixels / image width, for geometric operators).
    """

    image: np.ndarray
    info: Mapping[str, float] = field(default_factory=dict)


class Operator(Protocol):
    """`(image, region, dose) -> image`, swept over all doses of one image at once.

    Must be pure and deterministic given (image, mask, doses, seed): the
    identity dose returns the input image unchanged (bit for bit).
    """

    def __init__(self, params: Any, device: str = "cpu") -> None: ...

    def sweep(
        self, image: np.ndarray, mask: np.ndarray | None, doses: Sequence[float], seed: int
    ) -> list[OperatorOutput]: ...


@dataclass(frozen=True)
class RegionContext:
    """What a region plugin may read besides the pixels."""

    masks: Mapping[str, np.ndarray]  # already computed regions of this image, by name
    row: Mapping[str, Any]  # the image's manifest row
    base_dir: str  # folder that relative paths in the manifest resolve against
    root: str | None = None  # files must lie under this folder (None: `run --allow-outside`)


class Region(Protocol):
    def __init__(self, params: Any, device: str = "cpu") -> None: ...

    def compute(self, image: np.ndarray, ctx: RegionContext) -> np.ndarray: ...


@dataclass(frozen=True)
class MeasureContext:
    """One (image, operator, dose): the original, the variant, and their regions."""

    original: np.ndarray
    variant: np.ndarray
    masks: Mapping[str, np.ndarray]  # regions of the original image, by name
    operator_mask: np.ndarray | None  # the operator's region (None: whole image)
    info: Mapping[str, float]  # OperatorOutput.info
    dose: float
    identity: float


class Measure(Protocol):
    """Measures and covariates: one float per (image, operator, dose); NaN when undefined."""

    def __init__(self, params: Any, device: str = "cpu") -> None: ...

    def compute(self, ctx: MeasureContext) -> float: ...


@dataclass(frozen=True)
class ScoreItem:
    """Who an image in a scoring batch is (planted scorers read this)."""

    arm: str
    image_id: str
    operator: str  # ir.ORIGINAL for the unaltered image
    dose: float
    u: float  # (dose - identity) / max|dose - identity|; 0 for the original
    placebo: bool  # the operator is a placebo
    row: Mapping[str, Any]  # manifest row
    measures: Mapping[str, float]  # measure name -> m(i, o, d) - m(i, d0) (for slope_by)
    side: str | None = None  # "preferred" | "other" for pairs arms


class Scorer(Protocol):
    """A batch of images (and prompts) in, one float per image out.

    Whether it reads prompts (`needs_prompt`) or the ScoreItem (`uses_item`, which
    then enters its cache keys) is declared once, in its `register(...)` call
    (registry.FACTS), not on the class.
    """

    def __init__(self, params: Any, device: str = "cpu", precision: str = "auto") -> None: ...

    def weights_hash(self) -> str | None: ...

    def score(
        self,
        images: Sequence[np.ndarray],
        prompts: Sequence[str] | None,
        items: Sequence[ScoreItem],
    ) -> np.ndarray: ...


class ScorerUnavailable(Exception):
    """A scorer cannot run here (missing extra, missing weights, no GPU).

    The message says what is missing and how to provide it; the CLI prints it
    without a traceback.
    """


class ScoreUnavailableForItem(Exception):
    """Some images of a scoring batch have no score; the others do.

    `reasons` maps batch positions to why (shown in the report's exclusions
    table); `scores` is the batch's full score array with NaN at those
    positions, so the executor keeps the rest and excludes only these images.
    Raised for per-image problems (a precomputed value that is not a finite
    number, an image too small or too flat for NIQE), never for a scorer
    that cannot run at all (that is ScorerUnavailable).
    """

    def __init__(self, reasons: Mapping[int, str], scores: np.ndarray | None = None) -> None:
        self.reasons = dict(reasons)
        self.scores = scores
        first = next(iter(self.reasons.items()), (None, ""))
        more = f" (and {len(self.reasons) - 1} more)" if len(self.reasons) > 1 else ""
        super().__init__(f"no score for batch item {first[0]}: {first[1]}{more}")


# Readiness hook (optional, on a scorer class): `scoreaudit scorers` and
# `runtime.scorers.make_scorer` call
#
#     @classmethod
#     def readiness(cls, params: Params | None) -> tuple[bool, str]
#
# with the scorer's validated parameters (None when its defaults do not
# validate, e.g. a required argument). It returns (ready, detail): detail says
# where the weights were found, or what is missing and how to provide it. It
# must be cheap and must not import heavy libraries (torch, open_clip): check
# files (local path, Hugging Face cache) only. It is called only after every
# module in the entry's `requires` meta was found importable.
