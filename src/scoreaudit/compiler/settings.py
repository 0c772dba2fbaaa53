"""The audit block's settings, each defined once: type, default, accepted range and meaning.

`check` reads the ranges (E0251) and the defaults (its hints), `describe` and the
language server read the meanings, the language reference (compiler/docs.py)
prints the table, and the report reads the default alpha and the interval rule
from here, so a setting cannot mean one thing in one place and another elsewhere.
A range is metadata, not a pydantic constraint: the model still accepts any value
of the type (tests and `simulate` build small bootstraps), and only a spec's own
values are held to it, by `check`, with a located diagnostic.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


@dataclasses.dataclass(frozen=True)
class Range:
    """The values `check` accepts for a numeric setting (E0251 outside them)."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False  # True: lo itself is outside
    hi_open: bool = False
    noun: str = ""  # what a value is, when the bounds alone do not say it ("a share")
    unit: str = ""  # after the lower bound ("resamples")
    why: str = ""  # appended in parentheses

    def contains(self, v: float) -> bool:
        if self.lo is not None and (v <= self.lo if self.lo_open else v < self.lo):
            return False
        return not (self.hi is not None and (v >= self.hi if self.hi_open else v > self.hi))

    def text(self) -> str:
        """The range in words: `above 0 and at most 0.5`, `at least 100 resamples`, `a share between 0 and 1`."""
        both_closed = self.lo is not None and self.hi is not None and not (self.lo_open or self.hi_open)
        if both_closed:
            parts = [f"between {_num(self.lo)} and {_num(self.hi)}"]
        else:
            parts = []
            if self.lo is not None:
                parts.append(f"{'above' if self.lo_open else 'at least'} {_num(self.lo)}"
                             + (f" {self.unit}" if self.unit else ""))
            if self.hi is not None:
                parts.append(f"{'below' if self.hi_open else 'at most'} {_num(self.hi)}")
        out = " and ".join(parts)
        if self.noun:
            out = f"{self.noun} {out}"
        return out + (f" ({self.why})" if self.why else "")


def _num(v: float) -> str:
    if isinstance(v, int) and v >= 2 ** 32 and v & (v - 1) == 0:
        return f"2^{v.bit_length() - 1}"
    return f"{v:g}" if isinstance(v, float) else str(v)


def claim_level(alpha: float) -> float:
    """The two-sided interval whose tails are the one-sided tests at `alpha` (1 − 2α; spec/methods.md).

    A claim `θ > t` at level α holds when this interval lies above t, which is why
    alpha is at most 0.5; every statistic and report section reads the level here.
    """
    return 1 - 2 * alpha


CLAIM_RULE = "1 \u2212 2\u03b1"  # how the report writes the rule of `claim_level`


class Settings(BaseModel):
    """The `audit "title" { ... }` block, with defaults filled in (each field's description is its documentation)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str
    version: int = Field(1, description="language version of the spec (1)")
    seed: Annotated[int, Range(0, 2 ** 64, hi_open=True)] = Field(
        0, description="seed of every random choice (bootstrap indices, selection groups, planted noise)")
    alpha: Annotated[float, Range(0, 0.5, lo_open=True, why="claims are judged on (1 - 2 alpha) intervals")] = Field(
        0.05, description="FDR / family-wise level for every hypothesis cell")
    correction: Literal["bh", "by", "holm", "bonferroni", "none"] = Field(
        "bh", description="multiplicity correction over all cells: bh, by, holm, bonferroni or none")
    family: Literal["audit", "hypothesis", "scorer", "arm"] = Field(
        "audit", description="which cells are adjusted together: audit (one family, the default), hypothesis, "
                             "scorer or arm")
    bootstrap: Annotated[int, Range(100, unit="resamples")] = Field(2000, description="cluster-bootstrap resamples")
    scale: Literal["sd", "raw"] = Field(
        "sd", description="sd: score changes in units of the arm's original-score SD; raw: scorer units")
    test: Literal["ttest", "wilcoxon", "bootstrap"] = Field(
        "ttest", description="default test of per-cluster contrasts: ttest, wilcoxon or bootstrap "
                             "(scale: sd always uses the bootstrap)")
    ci: Literal["bca", "percentile", "studentized"] = Field(
        "bca", description="bootstrap interval family: bca (default), percentile or studentized; tests invert the "
                           "same interval")
    min_real_clusters: Annotated[int, Range(1)] = Field(
        100, description="usable clusters a real arm needs for the auditability verdict")
    max_leakage: Annotated[float, Range(0, 1, noun="a share")] = Field(
        0.001, description="largest mean leakage (share of out-of-region pixels changed) for pixel isolation")
    robustness: Annotated[int, Range(1)] = Field(
        1, description="repeat every stochastic part this many times with derived seeds")
    on_error: Literal["skip", "fail"] = Field(
        "skip", description="what an unreadable image does: skip (listed in the report) or fail")
    batch_size: Annotated[int, Range(1)] = Field(16, description="images per scorer forward pass")
    max_groups: Annotated[int, Range(1)] = Field(50, description="best-of-n: candidate groups per cluster before sampling")
    scores: str | None = Field(
        None, description="long table of precomputed scores for every arm (spec/precomputed.md), relative to the spec")
    measures: str | None = Field(
        None, description="long table of precomputed measures for every arm (spec/precomputed.md), relative to the spec")


def range_of(name: str) -> Range | None:
    """The accepted range of setting `name`, or None when its type is the whole story."""
    return next((m for m in Settings.model_fields[name].metadata if isinstance(m, Range)), None)


def default(name: str) -> Any:
    """The value a spec that does not write setting `name` gets."""
    return Settings.model_fields[name].default


def doc(name: str) -> str:
    """What setting `name` means (describe, hover, the language reference)."""
    return Settings.model_fields[name].description or ""


# every setting a spec may write (the title is the block's string), in the model's order
NAMES: tuple[str, ...] = tuple(f for f in Settings.model_fields if f != "title")
RANGES: dict[str, Range] = {n: r for n in NAMES if (r := range_of(n)) is not None}
