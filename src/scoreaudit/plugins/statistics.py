"""Every statistic a hypothesis may use: ONE registry entry per statistic.

Adding a statistic means writing one `@statistic(...)` entry here (plus the
estimator function it names). The entry carries everything any layer needs,
so nothing else keeps a per-statistic table:

    @statistic("fidelity_index", params=OperatorStat, positional=("operator",),
               needs=("images", "fi_doses"), unit="sd", null=0.0, sign="signed",
               reads=("operator",), estimator="scoreaudit.stats.dose:fidelity_index",
               truth="scoreaudit.stats.truth:fidelity_index", words="fidelity index")
    def fidelity_index():
        \"\"\"Docstring: first line is the summary `describe` and spec/language.md show.\"\"\"

Keys (all required unless marked optional):
  params      pydantic model of the arguments (`registry.Params` subclass)
  positional  parameters that may be given positionally, in order (optional)
  returns     "number" (compared with a threshold) or "claim" (decides itself); default "number"
  scope       "arm" (one arm per cell) or "cross_arm" (reads `from`/`to`); default "arm"
  needs       facts the arm/spec must provide (checked by compiler/hypotheses.py):
                images, pairs, cluster, factors, kinds_differ,
                symmetric   the `operator` argument's doses are symmetric around its identity
                fi_doses    symmetric, or one-sided (every dose on one side of the identity)
                placebo     the `placebo` argument is a placebo of `operator`
                dose        the `dose` argument (when given) is one of the operator's doses
                dose_selection  the `selection` argument picks among the doses of an operator symmetric
                            around its identity (E0422, E0423)
                inner_null  the nested `statistic` argument has a null value (E0425)
                margin      supported only with a `margin:` argument (W0420 without one)
  unit        what the estimate is measured in ("sd" follows the audit's `scale` setting)
  null        the value the statistic takes when there is no effect (0 for effects, 0.5 for
              accuracies, 1 for ratios), or None when it has none (claims, validation checks,
              data-dependent chance levels). A claim `θ > 0` on a statistic whose null is not 0,
              and `transfers(θ)` of a statistic without a null, are compile errors.
  sign        "signed" (direction matters, printed with a sign) or "unsigned"
              (shares, ratios, spreads; printed without a plus sign)
  reads       what a cell reads from the runtime's tables (compiler/reads.py interprets it):
                original   the unaltered image's score
                operator   the `operator` argument at every dose
                placebo    the `placebo` argument at every dose
                measures   the measure/covariates named by `measure`, `controlling`,
                           `covariate`, under the `operator` argument
                selection  the selection's operator (or the original image) and its measure
                inner      whatever the nested statistic reads
                via        whatever the statistic given as `via:` reads (decompose)
  estimator   "module:function" of the estimator, signature (ctx, call, arm, scorer) -> Estimate
              (see scoreaudit.stats.context). Imported by the stats engine; an import error is
              an error, never an undefined cell.
  truth       "module:function" giving the planted truth for `simulate`
              (ir, call, truth, model, scale) -> float | None, or None when the planted model
              implies no value for it; then `truth_note` (optional key) says why.
  words       how a sentence names the statistic ("fidelity index")
  validation  True: usable only in `validate ... : r2 >= a` (optional)
  replicates  when the estimate comes with cluster-bootstrap replicates, which one side of
              `difference(...)`/`ratio(...)` must have (optional; compiler/comparisons.py
              `replicates_problem` reads it for `check` and the run alike):
                always      (default)
                scale sd    only under `scale: sd` (raw: a cluster-robust coefficient tested with t)
                strata      only when the `factor` argument is not one of the arm's `factors:`
                            (on factors: a counterfactual regression contrast tested with t)
                never       a share with its own exact interval

This module imports nothing heavy: the compiler reads these entries without scipy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from scoreaudit.registry import NoParams, Params, Ref, statistics

SIGNS = ("signed", "unsigned")
READS = ("original", "operator", "placebo", "measures", "selection", "inner", "via")
NEEDS = ("images", "pairs", "cluster", "factors", "kinds_differ", "symmetric", "fi_doses", "placebo", "dose",
         "dose_selection", "inner_null", "margin")
REQUIRED = ("unit", "null", "sign", "reads", "estimator", "truth", "words")
REPLICATES = ("always", "scale sd", "strata", "never")


def statistic(name: str, *, params: type[Params] = NoParams, estimator: str, truth: str | None,
              null: float | None, sign: str, reads: tuple[str, ...], words: str, unit: str,
              positional: tuple[str, ...] = (), returns: str = "number", scope: str = "arm",
              needs: tuple[str, ...] = (), version: str = "1", **extra: Any) -> Callable[[Any], Any]:
    """Declare a statistic (see the module docstring); checks the entry's own consistency."""
    if sign not in SIGNS:
        raise ValueError(f"statistic {name!r}: sign must be one of {SIGNS}")
    if bad := [r for r in reads if r not in READS]:
        raise ValueError(f"statistic {name!r}: unknown reads {bad} (known: {READS})")
    if bad := [n for n in needs if n not in NEEDS]:
        raise ValueError(f"statistic {name!r}: unknown needs {bad} (known: {NEEDS})")
    if ":" not in estimator or (truth is not None and ":" not in truth):
        raise ValueError(f"statistic {name!r}: estimator and truth are 'module:function' strings")
    if extra.get("replicates", "always") not in REPLICATES:
        raise ValueError(f"statistic {name!r}: replicates must be one of {REPLICATES}")
    if truth is None and not extra.get("truth_note"):
        raise ValueError(f"statistic {name!r}: without a simulate truth, say why in truth_note")
    return statistics.register(name, params=params, version=version, positional=positional, returns=returns,
                               scope=scope, needs=tuple(needs), unit=unit, null=null, sign=sign,
                               reads=tuple(reads), estimator=estimator, truth=truth, words=words, **extra)


def null_value(name: str) -> float | None:
    return statistics.get(name).meta.get("null")


OperatorRef = Annotated[str, Ref("operator")]
MeasureRef = Annotated[str, Ref("measure")]
CovariateRef = Annotated[str, Ref("covariate")]
ArmRef = Annotated[str, Ref("arm")]
SelectionRef = Annotated[str, Ref("selection")]
ProbeRef = Annotated[str, Ref("probe")]
FactorRef = Annotated[str, Ref("factor")]
StratumRef = Annotated[str, Ref("stratum")]
Column = Annotated[str, Ref("column")]
StatisticRef = Annotated[Any, Ref("statistic")]
Test = Literal["ttest", "wilcoxon", "bootstrap"] | None


class OperatorStat(Params):
    operator: OperatorRef
    test: Test = None  # None: the audit's `test` setting


@statistic("fidelity_index", params=OperatorStat, positional=("operator",), needs=("images", "fi_doses"),
           unit="sd", null=0.0, sign="signed", reads=("operator",), words="fidelity index",
           estimator="scoreaudit.stats.dose:fidelity_index", truth="scoreaudit.stats.truth:fidelity_index")
def fidelity_index():
    """Fidelity index: −mean over images of the even part of the score change (penalty index if one-sided).

    Symmetric doses {d0 ± t}: FI = −mean_i mean_t (Δ(i, d0+t) + Δ(i, d0−t))/2.
    Positive: the unaltered image scores highest and both directions are
    penalised (an inverted U). One-sided operators (blur, JPEG, noise: every
    dose on one side of the identity): the penalty index −mean_i mean_{d≠d0}
    Δ(i, d), positive when the scorer penalises the degradation.
    """


@statistic("asymmetry", params=OperatorStat, positional=("operator",), needs=("images", "symmetric"),
           unit="sd", null=0.0, sign="signed", reads=("operator",), words="asymmetry",
           estimator="scoreaudit.stats.dose:asymmetry", truth="scoreaudit.stats.truth:asymmetry")
def asymmetry():
    """Asymmetry A = mean over images and dose pairs of the odd part of the score change.

    Positive: the scorer prefers the positive dose direction (e.g. lighter skin
    under `lab_shift(channel: L)`).
    """


class CurveParams(Params):
    operator: OperatorRef
    dose: float | None = None  # None: the dose farthest from the identity
    test: Test = None


@statistic("curve", params=CurveParams, positional=("operator", "dose"), needs=("images", "dose"),
           unit="sd", null=0.0, sign="signed", reads=("operator",), words="mean score change",
           estimator="scoreaudit.stats.dose:curve", truth="scoreaudit.stats.truth:curve")
def curve():
    """Fidelity curve c(d) = mean over images of the score change at dose d (a dose of the operator)."""


@statistic("trend", replicates="scale sd",
           params=OperatorStat, positional=("operator",), needs=("images",),
           unit="sd per dose unit", null=0.0, sign="signed", reads=("operator",), words="dose trend",
           estimator="scoreaudit.stats.dose:trend", truth="scoreaudit.stats.truth:trend")
def trend():
    """Slope of the score change on (d − d0): pooled OLS over every image and dose, cluster-robust.

    For dose–response claims on any operator (one-sided or symmetric):
    positive means the score rises with the dose.
    """


class PlaceboParams(Params):
    operator: OperatorRef
    placebo: OperatorRef


@statistic("placebo_ratio", params=PlaceboParams, positional=("operator", "placebo"),
           needs=("images", "fi_doses", "placebo"), unit="ratio", null=1.0, sign="unsigned",
           reads=("operator", "placebo"), words="placebo ratio",
           estimator="scoreaudit.stats.dose:placebo_ratio", truth="scoreaudit.stats.truth:placebo_ratio")
def placebo_ratio():
    """Placebo ratio R = FI(operator) / FI(placebo), CI from the shared cluster bootstrap.

    Defined only when both fidelity indices are significantly positive
    (penalties); otherwise undefined with the reason, and any hypothesis on it
    is inconclusive.
    """


class AttributeEffectParams(Params):
    operator: OperatorRef
    measure: MeasureRef
    controlling: CovariateRef | list[CovariateRef] | None = None


@statistic("attribute_effect", replicates="scale sd",
           params=AttributeEffectParams, positional=("operator",), needs=("images",),
           unit="sd per measure unit", null=0.0, sign="signed", reads=("operator", "measures"),
           words="attribute effect", estimator="scoreaudit.stats.regression:attribute_effect",
           truth="scoreaudit.stats.truth:attribute_effect")
def attribute_effect():
    """β of the measure change in Δscore ~ Δmeasure + covariates + image fixed effects (cluster-robust SE)."""


class ArtifactEffectParams(Params):
    operator: OperatorRef
    covariate: CovariateRef
    measure: MeasureRef | None = None


@statistic("artifact_effect", replicates="scale sd",
           params=ArtifactEffectParams, positional=("operator", "covariate"),
           needs=("images",), unit="sd per covariate unit", null=0.0, sign="signed",
           reads=("operator", "measures"), words="artifact effect",
           estimator="scoreaudit.stats.regression:artifact_effect", truth="scoreaudit.stats.truth:artifact_effect")
def artifact_effect():
    """β of the covariate in the same regression as `attribute_effect`."""


class DriftParams(Params):
    selection: SelectionRef


@statistic("net_drift", params=DriftParams, positional=("selection",), needs=("images",),
           unit="measure units", null=0.0, sign="signed", reads=("selection",), words="best-of-n net drift",
           estimator="scoreaudit.stats.selection:net_drift", truth="scoreaudit.stats.truth:net_drift")
def net_drift():
    """Best-of-n net drift: mean over groups of m(argmax) − mean of m over the group (the random pick's expectation)."""


@statistic("directional_drift", params=DriftParams, positional=("selection",), needs=("images", "dose_selection"),
           unit="measure units", null=0.0, sign="signed", reads=("selection",),
           words="best-of-n directional drift", estimator="scoreaudit.stats.selection:directional_drift",
           truth="scoreaudit.stats.truth:directional_drift")
def directional_drift():
    """Best-of-n drift without its fidelity part: mean over groups of (m(d*) − m(2·d0 − d*)) / 2 at the pick d*.

    Zero in expectation for any scorer symmetric in the dose; needs a
    selection under an operator with symmetric doses.
    """


class TransfersParams(Params):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    statistic: StatisticRef = None
    source: ArmRef = Field(alias="from")
    target: ArmRef = Field(alias="to")
    margin: float = Field(default=2.0, gt=1.0)


@statistic("transfers", params=TransfersParams, positional=("statistic",), returns="claim", scope="cross_arm",
           needs=("kinds_differ", "inner_null"), unit="ratio", null=None, sign="unsigned", reads=("inner",),
           words="transfer ratio", estimator="scoreaudit.stats.transfer:transfers",
           truth="scoreaudit.stats.truth:transfers")
def transfers():
    """Transfer as equivalence: ρ = θ_real / θ_synthetic lies within [1/margin, margin] (default margin 2).

    Supported when both readings are significant with the same sign and ρ's
    (1 − 2α) CI lies inside [1/k, k]; refuted when that CI lies entirely
    outside (a reversal included); otherwise inconclusive. Collapse and
    emergence (one arm not significant) are never by themselves a refutation.
    A reading whose null value is not 0 is centred on it first. The class
    (reversal, attenuation, amplification, collapse, emergence, consistent,
    null) is reported beside the outcome.
    """


class HomogeneousParams(Params):
    statistic: StatisticRef = None
    by: StratumRef
    margin: float | None = Field(default=None, gt=0.0)
    test: Literal["auto", "kruskal", "anova", "friedman", "wald"] = "auto"


@statistic("homogeneous", params=HomogeneousParams, positional=("statistic",), returns="claim",
           needs=("images", "margin"),
           unit="difference", null=None, sign="unsigned", reads=("inner",), words="stratum spread",
           estimator="scoreaudit.stats.strata:homogeneous", truth="scoreaudit.stats.truth:homogeneous")
def homogeneous():
    """Population heterogeneity: per-stratum estimates, an omnibus test chosen from the design, equivalence by margin.

    Refuted when the omnibus q ≤ alpha (Kruskal–Wallis or ANOVA when strata
    are nested in clusters, Friedman when crossed, cluster-robust Wald
    otherwise). Supported only with `margin: δ`, when every pairwise stratum
    difference's (1 − 2α) CI lies inside [−δ, δ].
    """


@statistic("r2", validation=True, needs=("images",), unit="R²", null=None, sign="unsigned", reads=(),
           words="R²", estimator="scoreaudit.stats.validity:r2", truth=None,
           truth_note="a validation check on measures, not a scorer property")
def r2():
    """R² of the pooled OLS of the measure change on the dose change (measurement validity)."""


@statistic("monotonic", validation=True, needs=("images",), unit="share", null=None, sign="unsigned", reads=(),
           words="monotonic share", estimator="scoreaudit.stats.validity:monotonic", truth=None,
           truth_note="a validation check on measures, not a scorer property")
def monotonic():
    """Share of images whose measure is strictly monotonic in the dose, in the fitted slope's direction."""


class FactorEffectParams(Params):
    factor: FactorRef
    model: str | None = None  # "race * gender"; None: the factor alone


@statistic("factor_effect", params=FactorEffectParams, positional=("factor",),
           needs=("images", "factors", "cluster"), unit="sd", null=0.0, sign="unsigned", reads=("original",),
           words="factor effect", estimator="scoreaudit.stats.cross_estimators:factor_effect",
           truth="scoreaudit.stats.truth:factor_effect")
def factor_effect():
    """Largest absolute difference between the factor's marginal means of z-scored scores; Wald test on F(q, G−1)."""


class GroupGapParams(Params):
    factor: StratumRef  # a declared factor (counterfactual regression) or any stratum column
    a: str
    b: str


@statistic("group_gap", replicates="strata",
           params=GroupGapParams, positional=("factor", "a", "b"), needs=("images",), unit="sd",
           null=0.0, sign="signed", reads=("original",), words="group gap",
           estimator="scoreaudit.stats.cross_estimators:group_gap", truth="scoreaudit.stats.truth:group_gap")
def group_gap():
    """Gap a − b between two groups' unaltered scores.

    On an arm whose `factors:` include the column: the difference of two
    levels' marginal means of z-scored scores (counterfactual regression),
    tested with t(G − 1). On any other arm: the difference of the two strata's
    mean original scores (`scale: sd` divides by the arm's score SD,
    recomputed in every bootstrap replicate), CI from the arm's cluster
    bootstrap.
    """


class FactorOnly(Params):
    factor: FactorRef


class MeanRankParams(Params):
    factor: FactorRef
    level: str


@statistic("mean_rank", params=MeanRankParams, positional=("factor", "level"),
           needs=("images", "factors", "cluster"), unit="rank", null=None, sign="unsigned", reads=("original",),
           words="mean rank", estimator="scoreaudit.stats.cross_estimators:mean_rank", truth=None,
           truth_note="its chance level, (cluster size + 1) / 2, depends on the data")
def mean_rank():
    """Average within-cluster rank (1 = highest score) of one factor level."""


@statistic("rank_spread", params=FactorOnly, positional=("factor",), needs=("images", "factors", "cluster"),
           unit="share", null=0.0, sign="unsigned", reads=("original",), words="rank spread",
           estimator="scoreaudit.stats.cross_estimators:rank_spread", truth=None,
           truth_note="the planted model gives no closed form for expected ranks under noise")
def rank_spread():
    """(max − min) of the factor levels' average within-cluster ranks / (cluster size − 1); Friedman test p."""


class CorrelateParams(Params):
    statistic: StatisticRef = None
    by: Column
    table: str
    column: str
    method: Literal["pearson", "spearman"] = "pearson"


@statistic("correlate", params=CorrelateParams, positional=("statistic",), needs=("images", "factors", "cluster"),
           unit="r", null=0.0, sign="signed", reads=("inner",), words="correlation with the external table",
           estimator="scoreaudit.stats.cross_estimators:correlate", truth=None,
           truth_note="the external table is not part of the planted model")
def correlate():
    """Correlation of a per-group effect (e.g. `group_gap` per occupation) with a column of an external table.

    The CI resamples the groups (B = the audit's `bootstrap` setting).
    """


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
    statistic(_name, params=CorrelationParams, positional=("x",), needs=("images",), unit="r", null=0.0,
              sign="signed", reads=("original",), words=f"{_what.split()[0]} correlation with the ratings",
              estimator=f"scoreaudit.stats.cross_estimators:{_name}", truth=f"scoreaudit.stats.truth:{_name}",
              truth_note="defined for a planted rating column (`rated_by`); None for any other column")(_corr)


class PairParams(Params):
    prompt: str | None = None  # which prompt's scores, for precomputed pairs with several


@statistic("pairwise_accuracy", params=PairParams, needs=("pairs",), unit="share", null=0.5, sign="unsigned",
           reads=("original",), words="pairwise accuracy",
           estimator="scoreaudit.stats.cross_estimators:pairwise_accuracy",
           truth="scoreaudit.stats.truth:pairwise_accuracy")
def pairwise_accuracy():
    """Share of pairs where the preferred image scores higher (ties half); Wilson CI; exact binomial test vs 0.5
    on the untied pairs, the Wilson score test of the half credit at any other threshold (per-cluster credit,
    every threshold, when the arm declares clusters)."""


@statistic("mean_gap", params=PairParams, needs=("pairs",), unit="sd", null=0.0, sign="signed",
           reads=("original",), words="mean gap", estimator="scoreaudit.stats.cross_estimators:mean_gap",
           truth="scoreaudit.stats.truth:mean_gap")
def mean_gap():
    """Mean score difference preferred − other, in SD units."""


class RankedParams(Params):
    k: int = 1
    rank: Column = "human_rank"  # 1 = best


@statistic("recall_best", replicates="never",
           params=RankedParams, positional=("k",), needs=("images", "cluster"), unit="share",
           null=None, sign="unsigned", reads=("original",), words="recall of the human-best image",
           estimator="scoreaudit.stats.cross_estimators:recall_best", truth=None,
           truth_note="its chance level, k / cluster size, depends on the data")
def recall_best():
    """Share of prompts (clusters) whose human-best image is in the scorer's top k."""


@statistic("filter_worst", replicates="never",
           params=RankedParams, positional=("k",), needs=("images", "cluster"), unit="share",
           null=None, sign="unsigned", reads=("original",), words="filtering of the human-worst image",
           estimator="scoreaudit.stats.cross_estimators:filter_worst", truth=None,
           truth_note="its chance level, k / cluster size, depends on the data")
def filter_worst():
    """Share of prompts (clusters) whose human-worst image is in the scorer's bottom k."""


class ProbeDriftParams(Params):
    probe: ProbeRef
    measure: str  # a probe measure the probe records, or `score`
    test: Test = None


@statistic("probe_drift", params=ProbeDriftParams, positional=("probe",), scope="probe", score_measure=True,
           unit="measure units", null=0.0, sign="signed", reads=(), words="probe drift",
           estimator="scoreaudit.stats.probes:probe_drift", truth="scoreaudit.stats.probes:probe_drift_truth")
def probe_drift():
    """Drift of a measure under an optimisation probe: last minus first iteration, mean over prompts.

    Per trajectory (prompt × seed): m(last iteration) − m(iteration 0); the
    trajectories of one prompt are a cluster. Estimate: the mean of cluster
    means; CI from the cluster bootstrap; p from the audit's test over cluster
    means. `measure: score` gives the scorer's own score change (how far the
    optimisation moved it). In the measure's units (ITA degrees, shares).
    """


class ProbeShiftParams(Params):
    probe: ProbeRef
    measure: str = "clip_attribute"  # a probe measure with labels
    label: str
    test: Test = None


@statistic("probe_shift", params=ProbeShiftParams, positional=("probe",), scope="probe", needs_label=True,
           unit="share", null=0.0, sign="signed", reads=(), words="probe label shift",
           estimator="scoreaudit.stats.probes:probe_shift", truth="scoreaudit.stats.probes:probe_shift_truth")
def probe_shift():
    """Change in the share of images given one label (e.g. `clip_attribute`) from the first to the last iteration.

    Per trajectory: [last image has the label] − [first image has it] (−1, 0
    or 1); clusters are prompts; estimate, CI and p as for `probe_drift`.
    Positive: the optimisation moves images towards the label.
    """


Labels = str | list[str]  # one label, or a set of labels (`["black", "asian"]`: any of them)


class ProbeTransitionParams(Params):
    probe: ProbeRef
    measure: str = "clip_attribute"  # a probe measure with labels (clip_attribute, anchor)
    initial: Labels  # the label(s) a trajectory's first image has
    final: Labels  # the label(s) its last image is counted for
    test: Test = None


@statistic("probe_transition", params=ProbeTransitionParams, positional=("probe",), scope="probe",
           needs_label=True, label_params=("initial", "final"), unit="share", null=0.0, sign="unsigned", reads=(),
           words="probe transition rate", estimator="scoreaudit.stats.probes:probe_transition",
           truth="scoreaudit.stats.probes:probe_transition_truth")
def probe_transition():
    """Share of trajectories that start with label A (`initial`) and end with label B (`final`).

    Of the trajectories whose first image has a label in `initial`, the share
    whose last image has a label in `final` (each side one label or a list:
    `initial: ["black", "asian"], final: "white"`); `initial` = `final` is the
    share that keeps its label. Per eligible trajectory [last in B]; clusters
    are prompts (a prompt with no trajectory starting in A is left out);
    estimate: the mean of cluster means; CI from the cluster bootstrap; p from
    the audit's test over cluster means (spec/probes.md). Under `maximize` and
    `minimize` probes, `difference(...)` of the two compares the directions.
    """
