"""Declarations of the statistics that compare or combine readings (spec/methods.md: Comparisons, Labels).

`difference(a, b)` and `ratio(a, b)` are language forms, not calls (their
arguments are readings with their own `on`/`for`/`where`), so they are
lowered by `scoreaudit.compiler.comparisons`; the statistics below are plain
calls the compiler binds like any other. Estimators: `scoreaudit.stats.comparisons`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

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
    missing: Optional[Union[float, str]] = None  # a sentinel label value that means "no label"
    prompt: Optional[str] = None  # which prompt's scores, for precomputed pairs with several


@statistic("agreement", params=AgreementParams, needs=(), unit="share", null=None, sign="unsigned",
           reads=("original",), words="agreement with the labels",
           estimator="scoreaudit.stats.comparisons:agreement", truth=None,
           truth_note="judge labels are not part of the planted model")
def agreement():
    """Agreement of the scorer with a judge's label column (an LLM or a person), per pair or per image.

    On a pairs arm the label says whether the preferred side is right (1) or
    not (0) and the scorer's call is which side scores higher; on an images arm
    the label is 0/1 and the score is the classifier's input. accuracy and
    kappa (Cohen's) compare the scorer's call with the label, f1 scores the
    positive class, auroc is the Mann–Whitney statistic of the score against
    the label (images arms; on pairs, of the score difference). Rows whose
    label is missing or equals `missing:` are excluded and counted. CI by the
    cluster bootstrap; p by inverting it.
    """
