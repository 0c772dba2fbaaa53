"""The typed intermediate representation: what a checked `.audit` file means.

Everything downstream (plan, runtime, statistics, reports) reads only this,
never the syntax tree. Names are resolved, parameters validated against the
plugin's pydantic model (stored as plain JSON-able dicts), doses expanded to
floats, hypotheses expanded into cells (claim × arm × scorer).

All models are frozen; `AuditIR.model_dump(mode="json")` is stable and is
what cache keys and the plan fingerprint hash.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from scoreaudit.compiler.settings import Settings  # defined with its ranges and docs; part of the IR
from scoreaudit.diagnostics import Span

IR_VERSION = 1

# Reserved operator name for the unaltered images: the runtime writes scores of
# the original images with operator = ORIGINAL and dose = 0.0 (for arms with no
# operators, and for cross-image statistics).
ORIGINAL = "original"


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def source_span() -> Any:
    """Where a declaration is named in the spec (its NAME), for the diagnostics the runtime locates (so it
    never reads syntax).

    Excluded from every dump: it is not in the IR JSON, a cache key or the plan fingerprint, so moving a
    declaration by a line (or any whitespace edit) keeps every step key.
    """
    return Field(default=None, exclude=True, repr=False)


def literal_spans() -> Any:
    """(text, span) of every string literal in a declaration, excluded like `source_span`: so a diagnostic
    about a path as written (a missing manifest, a model folder outside the roots) points at that string."""
    return Field(default=(), exclude=True, repr=False)


def locate(decl: Any, text: str) -> Span | None:
    """The span of the string literal `text` in an IR declaration, else the declaration's own (else None)."""
    hit = next((span for value, span in getattr(decl, "literals", ()) if value == text), None)
    return hit or getattr(decl, "span", None)


def in_scope(on: tuple[str, ...], arm: str) -> bool:
    """Whether a declaration scoped `on ARM, ...` applies to `arm` (an empty scope: every arm)."""
    return not on or arm in on


class Scoped(Frozen):
    """A declaration that may be scoped `on ARM, ARM` (spec/language.md, "Scopes").

    `on` is empty when the spec states no scope; it is then left out of the IR
    JSON, so specs without scopes keep their IR JSON, plan fingerprint and cache keys.
    """

    @model_serializer(mode="wrap")
    def _drop_empty_scope(self, handler):
        out = handler(self)
        if isinstance(out, dict) and not self.on:
            out.pop("on", None)
        return out


class PluginCall(Frozen):
    """A resolved plugin invocation: registry entry name, version and validated params."""

    plugin: str
    version: str
    params: dict[str, Any] = Field(default_factory=dict)


class ScorerIR(Scoped):
    name: str
    call: PluginCall
    needs_prompt: bool = False
    label: str | None = None  # `label: "..."`: the report's name for it (default: the name)
    on: tuple[str, ...] = ()  # the arms it scores (empty: every arm)
    span: Span | None = source_span()
    literals: tuple[tuple[str, Span], ...] = literal_spans()


class ArmIR(Frozen):
    """An image arm (`images(...)`) or a pairs arm (`pairs(...)`).

    `call.params` keeps every argument; the commonly used ones are lifted.
    Paths are as written in the spec, relative to the spec's folder.
    """

    name: str
    call: PluginCall
    source: Literal["images", "pairs"]
    kind: Literal["real", "synthetic"] = "synthetic"
    cluster: str | None = None  # manifest column; None: each image is its own cluster
    strata: tuple[str, ...] = ()
    factors: tuple[str, ...] = ()
    label: str | None = None
    span: Span | None = source_span()
    literals: tuple[tuple[str, Span], ...] = literal_spans()


class RegionCallIR(Frozen):
    op: Literal["call"] = "call"
    call: PluginCall


class RegionRefIR(Frozen):
    op: Literal["ref"] = "ref"
    name: str


class RegionNotIR(Frozen):
    op: Literal["not"] = "not"
    operand: RegionExprIR


class RegionBinIR(Frozen):
    op: Literal["and", "or"]
    left: RegionExprIR
    right: RegionExprIR


RegionExprIR = RegionCallIR | RegionRefIR | RegionNotIR | RegionBinIR


class RegionIR(Scoped):
    name: str
    expr: RegionExprIR
    depends_on: tuple[str, ...] = ()  # other region names, for evaluation order
    on: tuple[str, ...] = ()  # the images arms it is computed on (empty: every arm)


class MeasureIR(Scoped):
    """A `measure` or a `covariate` (role tells which)."""

    name: str
    call: PluginCall
    role: Literal["measure", "covariate"]
    region: str | None = None  # the region parameter, when the plugin has one
    on: tuple[str, ...] = ()  # the images arms it is computed on (empty: every arm)


class OperatorIR(Scoped):
    name: str
    call: PluginCall
    doses: tuple[float, ...]  # sorted ascending, identity included
    identity: float
    pixel_local: bool
    region: str | None = None
    placebo_of: str | None = None  # set for `placebo X = ... of Y`; doses copied from Y
    symmetric: bool = False  # doses symmetric around identity
    label: str | None = None
    on: tuple[str, ...] = ()  # the images arms it runs on (empty: every arm); a placebo: its own, else its operator's


class ValidationIR(Frozen):
    measure: str
    operator: str
    checks: tuple[tuple[str, Literal[">", "<", ">=", "<="], float], ...]  # (r2|monotonic, op, value)


class SelectionIR(Frozen):
    name: str
    n: int
    measure: str
    operator: str | None = None  # None: cross-image groups within a cluster


class StatCallIR(Frozen):
    """A statistic with validated arguments; nested statistics appear as StatCallIR in params."""

    name: str
    version: str
    params: dict[str, Any] = Field(default_factory=dict)
    inner: StatCallIR | None = None  # for transfers(...)/homogeneous(...)/correlate(...)


class ReadingIR(Frozen):
    """One side of `difference(a, b)` / `ratio(a, b)`: a statistic on one arm, for one scorer.

    `where` restricts the arm to images whose manifest column equals the value
    (several conditions all hold). Stored as JSON in the comparison's
    `StatCallIR.params["readings"]` (see `readings_of`). A probe statistic
    (`probe_drift`, `probe_shift`) reads its probe, not an arm: `arm` is None
    and the probe is `statistic.params["probe"]`.
    """

    statistic: StatCallIR
    arm: str | None
    scorer: str
    where: tuple[tuple[str, str], ...] = ()


def walk_stats(call: StatCallIR | None):
    """A statistic and every statistic nested in it (`inner`, and calls dumped in params such as `via:`)."""
    if call is None:
        return
    yield call
    for v in call.params.values():
        if isinstance(v, dict) and "name" in v and "params" in v:
            yield from walk_stats(StatCallIR.model_validate(v))
    yield from walk_stats(call.inner)


def readings_of(call: StatCallIR) -> list[ReadingIR]:
    """The two readings of a `difference`/`ratio` call (empty for any other statistic)."""
    return [ReadingIR.model_validate(r) for r in call.params.get("readings") or ()]


def table_params(node: Any):
    """Every `table:` value of a statistic call anywhere in a dumped IR (or part of one)."""
    if isinstance(node, dict):
        params = node.get("params")
        if "name" in node and isinstance(params, dict) and isinstance(params.get("table"), str):
            yield params["table"]
        for v in node.values():
            yield from table_params(v)
    elif isinstance(node, (list, tuple)):
        for v in node:
            yield from table_params(v)


class TestIR(Frozen):
    """How a cell's estimate is judged (spec/methods.md: hypothesis outcomes).

    kind: greater (θ > t / θ >= t), less, equivalence (abs(θ) < δ is the
    interval (−δ, δ); `within [a, b]`), claim (the statistic decides itself:
    transfers, homogeneous).
    """

    kind: Literal["greater", "less", "equivalence", "claim"]
    threshold: float | None = None
    low: float | None = None
    high: float | None = None
    strict: bool = True  # > vs >=
    text: str  # the claim as written, for sentences


class CellIR(Frozen):
    id: str  # "H1/laion/real"
    hypothesis: str
    claim: int  # index of the claim in the hypothesis
    scorer: str
    arm: str | None  # None for cross-arm statistics (transfers)
    arms: tuple[str, ...] = ()  # every arm the cell reads
    statistic: StatCallIR
    test: TestIR
    axis: tuple[str, str] | None = None  # (measure, operator) when the cell is about an attribute axis
    # a claim about one stratum (`θ where race = "Black" > 0`): the arm restricted as a reading's `where` is
    where: tuple[tuple[str, str], ...] = ()

    @model_serializer(mode="wrap")
    def _drop_empty_where(self, handler):
        """A cell without `where` serialises as before strata claims existed (same IR JSON and fingerprints)."""
        out = handler(self)
        if isinstance(out, dict) and not self.where:
            out.pop("where", None)
        return out

    def parts(self) -> list[tuple[str, str, StatCallIR]]:
        """(arm, scorer, statistic) of everything the cell reads: each reading of a comparison, else each arm."""
        readings = readings_of(self.statistic)
        if readings:  # a probe reading reads no arm (its probe is a plan step of its own)
            return [(r.arm, r.scorer, r.statistic) for r in readings if r.arm is not None]
        return [(a, self.scorer, self.statistic) for a in (self.arms or ((self.arm,) if self.arm else ()))]


class HypothesisIR(Frozen):
    name: str
    title: str
    text: str  # normalised source of the claims (for lock/deviation)
    cells: tuple[CellIR, ...]
    span: Span | None = source_span()
    claim_spans: tuple[Span, ...] = Field(default=(), exclude=True, repr=False)  # each claim's, like `span`
    literals: tuple[tuple[str, Span], ...] = literal_spans()


class ProbeIR(Frozen):
    """`probe NAME = reno(...)`: an optimisation probe (spec/probes.md); `call.params` keeps every argument."""

    name: str
    call: PluginCall
    scorer: str  # the scorer it optimises against
    measures: tuple[str, ...]  # the probe measures it records, as written
    label: str | None = None
    span: Span | None = source_span()
    literals: tuple[tuple[str, Span], ...] = literal_spans()


class ReportIR(Frozen):
    title: str | None = None
    formats: tuple[Literal["html", "pdf"], ...] = ("html",)
    thumbnails: bool = True  # one image at every dose of each operator, embedded as small JPEGs


class AuditIR(Frozen):
    ir_version: int = IR_VERSION
    settings: Settings
    scorers: dict[str, ScorerIR]
    arms: dict[str, ArmIR]
    regions: dict[str, RegionIR]
    measures: dict[str, MeasureIR]  # measures and covariates
    operators: dict[str, OperatorIR]  # operators and placebos
    validations: tuple[ValidationIR, ...] = ()
    selections: dict[str, SelectionIR] = Field(default_factory=dict)
    hypotheses: tuple[HypothesisIR, ...] = ()
    report: ReportIR = ReportIR()
    source_path: str | None = None
    source_hash: str = ""  # sha256 of the spec text
    probes: dict[str, ProbeIR] = Field(default_factory=dict)

    def cells(self) -> list[CellIR]:
        return [c for h in self.hypotheses for c in h.cells]

    @model_serializer(mode="wrap")
    def _drop_empty_probes(self, handler):
        """A spec without probes serialises as before probes existed (same IR JSON, plan fingerprint, cache keys)."""
        out = handler(self)
        if isinstance(out, dict) and not self.probes:
            out.pop("probes", None)
        return out


def runs_on(decl: ScorerIR | RegionIR | MeasureIR | OperatorIR, audit: AuditIR) -> tuple[str, ...]:
    """The arms a declaration runs on: its scope, else every arm (a scorer) or every images arm (the rest)."""
    if decl.on:
        return decl.on
    if isinstance(decl, ScorerIR):
        return tuple(audit.arms)
    return tuple(n for n, a in audit.arms.items() if a.source == "images")


RegionNotIR.model_rebuild()
RegionBinIR.model_rebuild()
StatCallIR.model_rebuild()
ReadingIR.model_rebuild()
