"""Planted scorers: a known true response to every operator, dose, factor and pair side.

They ignore the pixels and read who each image is from its ScoreItem, so a
test or `scoreaudit simulate` knows the truth every statistic should recover.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from scoreaudit.compiler.ir import ORIGINAL
from scoreaudit.plugins.base import ScoreItem, ScoreUnavailableForItem
from scoreaudit.registry import Params, Ref, scorers

_STD_NORMAL = NormalDist()


# Planted effects in units of the image term's SD (1): beyond a million the scores' squares and differences
# overflow float64 on the way to an interval (fidelity 1e300 ended run in a ValueError), and no design needs them.
PlantedEffect = Annotated[float, Field(ge=-1e6, le=1e6)]


class PlantedParams(Params):
    fidelity: PlantedEffect = 0.0
    asymmetry: PlantedEffect = 0.0
    noise: Annotated[float, Field(ge=0, le=1e6)] = 0.0
    seed: int = 0
    placebo: PlantedEffect = 1.0
    slope_by: Annotated[str, Ref("measure")] | None = None
    slope: PlantedEffect = 0.0
    factor: str | None = None
    level: str | None = None
    effect: PlantedEffect = 0.0
    prefer: Literal["preferred", "other"] | None = None


def hashed_normal(*key: Any) -> float:
    """A standard normal draw fixed by `key`: sha256 of its JSON, inverted through the normal CDF.

    Stable across Python runs, platforms and numpy versions (unlike hash() or
    a Generator's stream), so planted truths and cached scores never drift.
    """
    digest = hashlib.sha256(json.dumps(key, separators=(",", ":")).encode("utf-8")).digest()
    u = ((int.from_bytes(digest[:8], "big") >> 11) + 0.5) / 2.0**53  # in (0, 1)
    return _STD_NORMAL.inv_cdf(u)


def _level_text(value: Any) -> str | None:
    """A manifest value as the text a spec's `level: "L"` compares with (1.0 reads as "1")."""
    if value is None:
        return None
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return None
        if float(value).is_integer():
            return str(int(value))
    return str(value).strip()


def pair_base_id(item: ScoreItem) -> str:
    """The id b is drawn from: a pair's id for both of its sides (the runtime names them "ID:side")."""
    image_id = str(item.image_id)
    suffix = f":{item.side}" if item.side else None
    return image_id[: -len(suffix)] if suffix and image_id.endswith(suffix) else image_id


@scorers.register("planted", params=PlantedParams, version="1", needs_prompt=False, requires=(),
                  uses_item=True)
class Planted:
    """s(i,o,d) = b_i − F·u² + A·u + K·Δm + E·[factor = level] + ε, all seeded (spec/methods.md, "Design diagnosis").

    u = (d − d0) / max|d − d0| (0 for the original image); b_i ~ N(0, 1) from
    sha256(image id, seed); ε ~ N(0, noise²) from sha256(image id, operator,
    dose, side, seed); placebo operators respond with F·P and A·P; Δm is the
    `slope_by` measure's change from the original; the factor term compares the
    manifest value of `factor` with `level` as text. Pairs arms: both sides of
    a pair share b (drawn from the pair's id: the runtime's "ID:preferred" and
    "ID:other" both map to ID), so with no `prefer`
    the expected pairwise accuracy is 0.5 (exactly 0.5, all ties, at noise 0),
    and `prefer: preferred` adds +1 to the preferred side: accuracy
    Φ(1 / (noise·√2)), i.e. 1 at noise 0. With `scale: raw` and a symmetric
    dose set the true fidelity index is F·mean(u²) over the non-identity doses
    and the true asymmetry A·mean(|u|) over the positive ones.
    """

    def __init__(self, params: PlantedParams | dict | None = None, device: str = "cpu",
                 precision: str = "auto") -> None:
        if params is None:
            params = PlantedParams()
        elif not isinstance(params, PlantedParams):
            params = PlantedParams.model_validate(dict(params))
        self.p = params

    def weights_hash(self) -> str | None:
        return None

    def score_item(self, item: ScoreItem) -> float:
        p = self.p
        s = hashed_normal("b", pair_base_id(item), p.seed)
        if item.operator != ORIGINAL:
            u = float(item.u)
            gain = p.placebo if item.placebo else 1.0
            s += gain * (-p.fidelity * u * u + p.asymmetry * u)
            if p.slope_by is not None and p.slope != 0.0:
                dm = item.measures.get(p.slope_by)
                if dm is None or not math.isfinite(float(dm)):
                    raise ValueError(f"measure {p.slope_by!r} is undefined for this image (planted slope_by)")
                s += p.slope * float(dm)
        if p.factor is not None and p.effect != 0.0 and _level_text(item.row.get(p.factor)) == p.level:
            s += p.effect
        if p.prefer is not None and item.side == p.prefer:
            s += 1.0
        if p.noise != 0.0:
            eps = hashed_normal("eps", str(item.image_id), str(item.operator), float(item.dose),
                                item.side, p.seed)
            s += p.noise * eps
        return s

    def score(self, images: Sequence[np.ndarray] | None, prompts: Sequence[str] | None,
              items: Sequence[ScoreItem]) -> np.ndarray:
        out = np.full(len(items), np.nan)
        reasons: dict[int, str] = {}
        for k, item in enumerate(items):
            try:
                out[k] = self.score_item(item)
            except ValueError as e:
                reasons[k] = str(e)
        if reasons:
            raise ScoreUnavailableForItem(reasons, out)
        return out
