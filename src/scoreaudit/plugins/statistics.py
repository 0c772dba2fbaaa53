"""Declarations of the statistics hypotheses may use (parameters, needs, docs).

The estimators live in `scoreaudit.stats` (downstream of the runtime) and are
attached by name there; this module only declares what the compiler checks:

meta:
  returns: "number" (compared with a threshold) or "claim" (decides itself)
  scope: "arm" (one arm per cell) or "cross_arm" (reads `from`/`to` arms)
  needs: facts the arm/spec must provide:
    images       the arm is an images arm (not pairs)
    pairs        the arm is a pairs arm
    symmetric    the `operator` argument's doses are symmetric around its identity
    placebo      the `placebo` argument is a placebo of `operator`
    cluster      the arm declares a `cluster` column
    factors      the `factor` argument is one of the arm's `factors`
    kinds_differ `from` and `to` arms have different kinds
  unit: what the estimate is measured in ("sd" follows the audit's scale setting)
  validation: usable in `validate ... : r2 >= a, monotonic >= b` only
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional

from pydantic import ConfigDict, Field

from scoreaudit.registry import NoParams, Params, Ref, statistics

OperatorRef = Annotated[str, Ref("operator")]
MeasureRef = Annotated[str, Ref("measure")]
CovariateRef = Annotated[str, Ref("covariate")]
ArmRef = Annotated[str, Ref("arm")]
SelectionRef = Annotated[str, Ref("selection")]
FactorRef = Annotated[str, Ref("factor")]
StratumRef = Annotated[str, Ref("stratum")]
Column = Annotated[str, Ref("column")]
StatisticRef = Annotated[Any, Ref("statistic")]
Test = Optional[Literal["ttest", "wilcoxon", "bootstrap"]]


class OperatorStat(Params):
    operator: OperatorRef
    test: Test = None  # None: the audit's `test` setting


@statistics.register("fidelity_index", params=OperatorStat, version="1", positional=("operator",),
                     returns="number", scope="arm", needs=("images", "symmetric"), unit="sd")
def fidelity_index():
    """Fidelity index FI = −mean over images and dose pairs of the even part of the score change.

    Positive: the unaltered image scores highest and both directions are
    penalised (an inverted U). Tested over cluster means (t-test by default).
    """


@statistics.register("asymmetry", params=OperatorStat, version="1", positional=("operator",),
                     returns="number", scope="arm", needs=("images", "symmetric"), unit="sd")
def asymmetry():
    """Asymmetry A = mean over images and dose pairs of the odd part of the score change.

    Positive: the scorer prefers the positive dose direction (e.g. lighter skin
    under `lab_shift(channel: L)`).
    """


class CurveParams(Params):
    operator: OperatorRef
    dose: Optional[float] = None  # None: the largest dose


@statistics.register("curve", params=CurveParams, version="1", positional=("operator", "dose"),
                     returns="number", scope="arm", needs=("images",), unit="sd")
def curve():
    """Fidelity curve c(d) = mean over images of the score change at dose d (percentile bootstrap CI)."""


class PlaceboParams(Params):
    operator: OperatorRef
    placebo: OperatorRef


@statistics.register("placebo_ratio", params=PlaceboParams, version="1", positional=("operator", "placebo"),
                     returns="number", scope="arm", needs=("images", "symmetric", "placebo"), unit="ratio")
def placebo_ratio():
    """Placebo ratio R = FI(operator) / FI(placebo), CI from the shared cluster bootstrap.

    Undefined (and any hypothesis on it inconclusive) when the placebo's FI CI contains 0.
    """


class AttributeEffectParams(Params):
    operator: OperatorRef
    measure: MeasureRef
    controlling: Optional[CovariateRef | list[CovariateRef]] = None


@statistics.register("attribute_effect", params=AttributeEffectParams, version="1", positional=("operator",),
                     returns="number", scope="arm", needs=("images",), unit="sd per measure unit")
def attribute_effect():
    """β of the measure change in Δscore ~ Δmeasure + covariates + image fixed effects (cluster-robust SE)."""


class ArtifactEffectParams(Params):
    operator: OperatorRef
    covariate: CovariateRef
    measure: Optional[MeasureRef] = None


@statistics.register("artifact_effect", params=ArtifactEffectParams, version="1", positional=("operator", "covariate"),
                     returns="number", scope="arm", needs=("images",), unit="sd per covariate unit")
def artifact_effect():
    """β of the covariate in the same regression as `attribute_effect`."""


class NetDriftParams(Params):
    selection: SelectionRef


@statistics.register("net_drift", params=NetDriftParams, version="1", positional=("selection",),
                     returns="number", scope="arm", needs=("images",), unit="measure units")
def net_drift():
    """Best-of-n net drift: mean over groups of (argmax drift − random-pick drift) of the measure."""


class TransfersParams(Params):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    statistic: StatisticRef = None
    source: ArmRef = Field(alias="from")
    target: ArmRef = Field(alias="to")


@statistics.register("transfers", params=TransfersParams, version="1", positional=("statistic",),
                     returns="claim", scope="cross_arm", needs=("kinds_differ",), unit="class")
def transfers():
    """Synthetic→real transfer class of a statistic: consistent, attenuation, reversal, collapse, emergence or null.

    Supported when consistent; refuted for reversal, attenuation, collapse and
    emergence; inconclusive for null.
    """


class HomogeneousParams(Params):
    statistic: StatisticRef = None
    by: StratumRef
    test: Literal["kruskal", "anova"] = "kruskal"


@statistics.register("homogeneous", params=HomogeneousParams, version="1", positional=("statistic",),
                     returns="claim", scope="arm", needs=("images",), unit="p")
def homogeneous():
    """Population heterogeneity: per-stratum estimates and an omnibus test of equality across strata."""


@statistics.register("r2", params=NoParams, version="1", returns="number", scope="arm",
                     needs=("images",), validation=True, unit="R²")
def r2():
    """R² of the pooled OLS of the measure change on the dose change (measurement validity)."""


@statistics.register("monotonic", params=NoParams, version="1", returns="number", scope="arm",
                     needs=("images",), validation=True, unit="share")
def monotonic():
    """Share of images whose measure is strictly monotonic in the dose, in the fitted slope's direction."""


class FactorEffectParams(Params):
    factor: FactorRef
    model: Optional[str] = None  # "race * gender"; None: the factor alone


@statistics.register("factor_effect", params=FactorEffectParams, version="1", positional=("factor",),
                     returns="number", scope="arm", needs=("images", "factors", "cluster"), unit="sd")
def factor_effect():
    """Largest absolute difference between the factor's marginal means of z-scored scores; Wald test p."""


class GroupGapParams(Params):
    factor: StratumRef  # a declared factor (counterfactual regression) or any stratum column
    a: str
    b: str


@statistics.register("group_gap", params=GroupGapParams, version="1", positional=("factor", "a", "b"),
                     returns="number", scope="arm", needs=("images",), unit="sd")
def group_gap():
    """Gap a − b between two groups' unaltered scores.

    On an arm whose `factors:` include the column: the difference of two
    levels' marginal means of z-scored scores (counterfactual regression). On
    any other arm: the difference of the two strata's mean original scores
    (`scale: sd` divides by the arm's score SD, recomputed in every bootstrap
    replicate), CI from the arm's cluster bootstrap.
    """


class FactorOnly(Params):
    factor: FactorRef


class MeanRankParams(Params):
    factor: FactorRef
    level: str


@statistics.register("mean_rank", params=MeanRankParams, version="1", positional=("factor", "level"),
                     returns="number", scope="arm", needs=("images", "factors", "cluster"), unit="rank")
def mean_rank():
    """Average within-cluster rank (1 = highest score) of one factor level."""


@statistics.register("rank_spread", params=FactorOnly, version="1", positional=("factor",),
                     returns="number", scope="arm", needs=("images", "factors", "cluster"), unit="share")
def rank_spread():
    """(max − min) of the factor levels' average within-cluster ranks / (cluster size − 1); Friedman test p."""


class CorrelateParams(Params):
    statistic: StatisticRef = None
    by: Column
    table: str
    column: str
    method: Literal["pearson", "spearman"] = "pearson"


@statistics.register("correlate", params=CorrelateParams, version="1", positional=("statistic",),
                     returns="number", scope="arm", needs=("images", "factors", "cluster"), unit="r")
def correlate():
    """Correlation of a per-group effect (e.g. `group_gap` per occupation) with a column of an external table."""


class CorrelationParams(Params):
    x: Literal["score"] = "score"
    column: Column


for _name, _what in (("spearman", "Spearman rank"), ("pearson", "Pearson"), ("kendall", "Kendall tau-b")):

    def _corr():
        pass

    _corr.__doc__ = (
        f"{_what} correlation between the score and a manifest column (e.g. human ratings); "
        "cluster-bootstrap CI, the correlation's own test p. The report states the variance explained."
    )
    statistics.register(_name, params=CorrelationParams, version="1", positional=("x",),
                        returns="number", scope="arm", needs=("images",), unit="r")(_corr)


class PairParams(Params):
    prompt: Optional[str] = None  # which prompt's scores, for precomputed pairs with several


@statistics.register("pairwise_accuracy", params=PairParams, version="1", returns="number", scope="arm",
                     needs=("pairs",), unit="share")
def pairwise_accuracy():
    """Share of pairs where the preferred image scores higher (ties half); Wilson CI; exact binomial test vs 0.5."""


@statistics.register("mean_gap", params=PairParams, version="1", returns="number", scope="arm",
                     needs=("pairs",), unit="sd")
def mean_gap():
    """Mean score difference preferred − other, in SD units."""


class RankedParams(Params):
    k: int = 1
    rank: Column = "human_rank"  # 1 = best


@statistics.register("recall_best", params=RankedParams, version="1", positional=("k",),
                     returns="number", scope="arm", needs=("images", "cluster"), unit="share")
def recall_best():
    """Share of prompts (clusters) whose human-best image is in the scorer's top k."""


@statistics.register("filter_worst", params=RankedParams, version="1", positional=("k",),
                     returns="number", scope="arm", needs=("images", "cluster"), unit="share")
def filter_worst():
    """Share of prompts (clusters) whose human-worst image is in the scorer's bottom k."""
