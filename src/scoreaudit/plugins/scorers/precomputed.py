"""Scores computed elsewhere, read from the manifest."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

import numpy as np

from scoreaudit.plugins.base import ScoreItem, ScorerUnavailable, ScoreUnavailableForItem
from scoreaudit.registry import Params, Ref, scorers

Column = Annotated[str, Ref("column")]


class PrecomputedParams(Params):
    column: Column | None = None
    preferred: Column | None = None
    other: Column | None = None


def parse_score(value: Any) -> float:
    """A manifest cell as a finite float; ValueError (with the reason) otherwise."""
    if value is None or isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise ValueError("the cell is empty")
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
    else:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{value!r} is not a number") from None
    if not math.isfinite(number):
        raise ValueError("the cell is empty (NaN)" if math.isnan(number) else f"{number} is not finite")
    return number


def param_problems(params: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(argument, what is wrong, what to write) for each combination of arguments no arm can read.

    `precomputed()` alone is valid (its scores come from tables); otherwise one
    `column:` (images arms) or both `preferred:` and `other:` (pairs arms).
    `scoreaudit check` reports these at the argument (E0303); the constructor
    refuses the same combinations.
    """
    column, preferred, other = (params.get(k) for k in ("column", "preferred", "other"))
    if column is not None and (preferred is not None or other is not None):
        extra = "preferred" if preferred is not None else "other"
        return [(extra, "precomputed takes either `column:` or `preferred:`/`other:`, not both",
                 "keep `column: NAME` for an images arm, or `preferred: A, other: B` for a pairs arm")]
    if (preferred is None) != (other is None):
        given, lacking = ("preferred", "other") if preferred is not None else ("other", "preferred")
        return [(given, f"precomputed(`{given}:`) needs `{lacking}:` too: a pairs arm reads one score "
                        "column per side",
                 f"add `{lacking}: COLUMN`, or write `column: NAME` for an images arm")]
    return []


def arm_problem(params: Mapping[str, Any], source: str) -> tuple[str, str, str] | None:
    """(argument, what is wrong, what to write) when the columns named cannot be read on an arm of `source`.

    `column:` reads one value per image row (images arms); `preferred:`/`other:`
    one per side of a pair row (pairs arms). On the wrong kind every image would
    be excluded, so `check` refuses it (E0807) where a claim reads the scorer on
    such an arm; `column_for` words the same mismatch per item.
    """
    if params.get("column") is not None and source == "pairs":
        return ("column", "`column:` names one score per image row, but a pairs arm's row holds two images",
                "write `precomputed(preferred: A, other: B)`, one score column per side")
    if (params.get("preferred") is not None or params.get("other") is not None) and source != "pairs":
        arg = "preferred" if params.get("preferred") is not None else "other"
        return (arg, "`preferred:`/`other:` name the two sides of a pair row, but an images arm has one image "
                     "per row", "write `precomputed(column: NAME)` for an images arm")
    return None


@scorers.register("precomputed", params=PrecomputedParams, version="1", needs_prompt=False, requires=(),
                  uses_item=True, reads_data=True, data_params=("column", "preferred", "other"),
                  param_problems=param_problems, arm_problem=arm_problem)
class Precomputed:
    """Per-image scores from a manifest column (pairs arms: `preferred:` and `other:` columns).

    `precomputed(column: c)` reads column c of each image's manifest row.
    `precomputed(preferred: a, other: b)` is for pairs arms: the preferred
    image's score is column a of the pair's row, the other image's column b.
    A cell that is empty, NaN, infinite or not a number excludes that image
    (listed with the reason in the report), never the whole run. The score
    changes of operators are 0 by construction (the manifest has one value
    per image), so precomputed scores suit cross-image statistics.
    """

    def __init__(self, params: PrecomputedParams | dict | None = None, device: str = "cpu",
                 precision: str = "auto") -> None:
        if params is None:
            params = PrecomputedParams()
        elif not isinstance(params, PrecomputedParams):
            params = PrecomputedParams.model_validate(dict(params))
        problems = param_problems(params.model_dump())
        if problems:  # `check` reports these at the argument (E0303): a run never gets here with them
            raise ScorerUnavailable(problems[0][1])
        if params.column is None and params.preferred is None:
            raise ScorerUnavailable(
                "precomputed needs `column: NAME` (image arms) or both `preferred: A` and "
                "`other: B` (pairs arms), naming manifest columns that hold the scores"
            )
        self.p = params

    def weights_hash(self) -> str | None:
        return None

    def column_for(self, item: ScoreItem) -> str:
        p = self.p
        if p.column is not None:
            if item.side is not None:
                raise ValueError(
                    f"arm {item.arm!r} is a pairs arm: use precomputed(preferred: A, other: B) "
                    "to name one score column per side"
                )
            return p.column
        if item.side not in ("preferred", "other"):
            raise ValueError(
                f"arm {item.arm!r} is not a pairs arm: use precomputed(column: NAME)"
            )
        return p.preferred if item.side == "preferred" else p.other

    def score(self, images: Sequence[np.ndarray] | None, prompts: Sequence[str] | None,
              items: Sequence[ScoreItem]) -> np.ndarray:
        out = np.full(len(items), np.nan)
        reasons: dict[int, str] = {}
        for k, item in enumerate(items):
            try:
                col = self.column_for(item)
            except ValueError as e:
                reasons[k] = str(e)
                continue
            if col not in item.row:
                reasons[k] = f"manifest has no column {col!r} (precomputed score)"
                continue
            try:
                out[k] = parse_score(item.row[col])
            except ValueError as e:
                reasons[k] = f"precomputed score column {col!r}: {e}"
        if reasons:
            raise ScoreUnavailableForItem(reasons, out)
        return out
