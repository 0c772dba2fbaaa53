"""Planted scorers: a known true response to every operator, dose, factor and pair side."""

from __future__ import annotations

from typing import Annotated, Literal, Optional

from scoreaudit.registry import Params, Ref, scorers


class PlantedParams(Params):
    fidelity: float = 0.0
    asymmetry: float = 0.0
    noise: float = 0.0
    seed: int = 0
    placebo: float = 1.0
    slope_by: Optional[Annotated[str, Ref("measure")]] = None
    slope: float = 0.0
    factor: Optional[str] = None
    level: Optional[str] = None
    effect: float = 0.0
    prefer: Optional[Literal["preferred", "other"]] = None


@scorers.register("planted", params=PlantedParams, version="1", needs_prompt=False, requires=())
class Planted:
    """s(i,o,d) = b_i − F·u² + A·u + K·Δm + E·[factor = level] + ε, all seeded (DESIGN §3)."""
