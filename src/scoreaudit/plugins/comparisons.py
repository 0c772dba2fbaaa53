"""Declarations of the statistics that compare or combine readings (spec/methods.md: Comparisons, Labels).

`difference(a, b)` and `ratio(a, b)` are language forms, not calls (their
arguments are readings with their own `on`/`for`/`where`), so they are
lowered by `scoreaudit.compiler.comparisons`; the statistics below are plain
calls the compiler binds like any other. Estimators: `scoreaudit.stats.comparisons`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from scoreaudit.plugins.statistics import statistic
from scoreaudit.registry import Params, Ref

StatisticRef = Annotated[Any, Ref("statistic")]
Column = Annotated[str, Ref("column")]


class DecomposeParams(Params):
    gap: StatisticRef = None
    via: StatisticRef = None


@statistic("decompose", params=DecomposeParams, positional=("gap",), needs=("images",), unit="sd", combines=True,
           null=0.0, sign="signed", reads=("original", "inner", "via"), words="attribute part of the gap",
           estimator="scoreaudit.stats.comparisons:decompose", truth=None,
           truth_note="the planted model has no group composition to decompose")
def decompose():
    """Split an observed gap between two groups into the part a within-image attribute effect explains.

    `decompose(group_gap(s, a, b), via: attribute_effect(o, measure: m))`: the
    estimate is the attribute part β_attr × (mean measure of group a − of group
    b) on the unaltered images, in the gap's units; the remainder (gap −
    attribute part) is the confound part (composition and rendering). Both
    parts and the observed gap have CIs from the arm's shared bootstrap.
    """


class ShareParams(Params):
    statistic: StatisticRef = None
    part: Literal["attribute", "confound"]


@statistic("share", params=ShareParams, positional=("statistic",), needs=("images",), unit="share", null=None,
           sign="unsigned", reads=("inner",), words="share of the gap",
           estimator="scoreaudit.stats.comparisons:share", truth=None,
           truth_note="the planted model has no group composition to decompose")
def share():
    """Share of an observed gap that one part of `decompose(...)` accounts for: part / observed gap.

    Undefined when the observed gap's CI includes 0 (a share of nothing).
    """


class AgreementParams(Params):
    label: Column
    metric: Literal["accuracy", "f1", "auroc", "kappa"] = "accuracy"
    missing: float | str | None = None  # a sentinel label value that means "no label"
    prompt: str | None = None  # which prompt's scores, for precomputed pairs with several
    # images arms: the score's cut point(s) that make the call (one: 0/1; ascending list: classes 0..K−1)
    threshold: float | list[float] | None = None
    weights: Literal["linear", "quadratic"] | None = None  # kappa's disagreement weights (ordered classes)


@statistic("agreement", params=AgreementParams, needs=(), unit="share", null=None, sign="unsigned",
           reads=("original",), words="agreement with the labels",
           estimator="scoreaudit.stats.comparisons:agreement", truth="scoreaudit.stats.truth:agreement",
           truth_note="defined for a planted 0/1 label on an images arm (the planted factor); None otherwise")
def agreement():
    """Agreement of the scorer with a judge's label column (an LLM or a person), per pair or per image.

    On a pairs arm the label says whether the preferred side is right (1) or
    not (0) and the scorer's call is which side scores higher (a tie makes no
    call and is excluded, counted). On an images arm the call is the score's
    class under the declared cut point(s): `threshold: t` calls 1 when the
    score is at least t (labels 0/1); `threshold: [t1, t2, …]` (ascending)
    calls the number of cut points at or below the score, classes 0..K−1
    against integer labels 0..K−1 (ordered categories, e.g. ratings 1–5
    recoded 0–4). accuracy is the share of equal calls, kappa is Cohen's
    (`weights: linear | quadratic` for ordered classes, scikit-learn's
    formula), f1 scores the positive class 1 (two classes), auroc is the
    Mann–Whitney statistic of the score (on pairs, the score difference)
    against a 0/1 label and needs no threshold. Rows whose label is missing,
    equals `missing:`, or is not a class are excluded and counted. CI by the
    cluster bootstrap; p by inverting it (both with the small-sample expansion).
    """
