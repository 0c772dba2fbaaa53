"""Scores computed elsewhere, read from the manifest."""

from __future__ import annotations

from typing import Annotated, Optional

from scoreaudit.registry import Params, Ref, scorers

Column = Annotated[str, Ref("column")]


class PrecomputedParams(Params):
    column: Optional[Column] = None
    preferred: Optional[Column] = None
    other: Optional[Column] = None


@scorers.register("precomputed", params=PrecomputedParams, version="1", needs_prompt=False, requires=())
class Precomputed:
    """Per-image scores from a manifest column (pairs arms: `preferred:` and `other:` columns)."""
