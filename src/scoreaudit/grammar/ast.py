"""The syntax tree of an `.audit` file: frozen nodes, each with its source span.

The parser (`scoreaudit.grammar.parser`) builds these from the Lark tree; the
checker (`scoreaudit.compiler.check`) lowers them to the IR; the formatter
(`scoreaudit.compiler.fmt`) prints them back canonically. Equality that
ignores spans (for `parse(fmt(x)) == parse(x)`) is `strip_spans`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from scoreaudit.diagnostics import Span

_NO_SPAN = Span(0, 0, 0, 0, 0, 0)


def _span_field():
    return field(default=_NO_SPAN, compare=True, repr=False)


# ---------------------------------------------------------------- values


@dataclass(frozen=True)
class Ident:
    """A name as written (declaration name, reference, keyword-argument name)."""

    name: str
    span: Span = _span_field()


@dataclass(frozen=True)
class Number:
    value: float
    text: str  # as written, for exact re-printing ("0.05", "10000", "-15")
    span: Span = _span_field()

    @property
    def is_int(self) -> bool:
        return "." not in self.text and "e" not in self.text.lower()


@dataclass(frozen=True)
class String:
    value: str  # unescaped
    span: Span = _span_field()


@dataclass(frozen=True)
class Name:
    """A bare identifier used as a value: `channel: L`, `region: skin`, `kind: real`."""

    name: str
    span: Span = _span_field()


@dataclass(frozen=True)
class ListValue:
    """`[race, gender]` in an argument, or `html, pdf` in a setting."""

    items: tuple[Value, ...]
    span: Span = _span_field()
    bracketed: bool = True


@dataclass(frozen=True)
class Range:
    """`0..4` as a value: the whole numbers from `start` to `stop`, both included (`seeds: 0..4`)."""

    start: Number
    stop: Number
    span: Span = _span_field()


@dataclass(frozen=True)
class Column:
    """`column(prompt)`: a per-image value from the manifest."""

    name: Ident
    span: Span = _span_field()


@dataclass(frozen=True)
class Product:
    """`race * gender` (a model formula with interaction)."""

    left: Value
    right: Value
    span: Span = _span_field()


@dataclass(frozen=True)
class Arg:
    """One argument of a call; `name` is None when positional."""

    name: Ident | None
    value: Value
    span: Span = _span_field()


@dataclass(frozen=True)
class Call:
    """`lab_shift(channel: L, region: skin)`, also nested statistics."""

    func: Ident
    args: tuple[Arg, ...]
    span: Span = _span_field()


@dataclass(frozen=True)
class Not:
    """`not skin` (region algebra)."""

    operand: RegionExpr
    span: Span = _span_field()


@dataclass(frozen=True)
class BinaryRegion:
    """`a & b`, `a | b` (region algebra)."""

    op: Literal["&", "|"]
    left: RegionExpr
    right: RegionExpr
    span: Span = _span_field()


Value = Number | String | Name | ListValue | Column | Product | Call | Range
RegionExpr = Call | Name | Not | BinaryRegion


# ---------------------------------------------------------------- declarations


@dataclass(frozen=True)
class Setting:
    """`alpha: 0.05` inside the audit or report block."""

    key: Ident
    value: Value
    span: Span = _span_field()


@dataclass(frozen=True)
class AuditBlock:
    title: String
    settings: tuple[Setting, ...]
    span: Span = _span_field()


@dataclass(frozen=True)
class ScorerDecl:
    name: Ident
    call: Call
    span: Span = _span_field()
    label: String | None = None  # `label: "..."`: the report's name for it
    on: tuple[Ident, ...] = ()  # `on ARM, ARM`: the arms it scores (empty: every arm)


@dataclass(frozen=True)
class ArmDecl:
    name: Ident
    call: Call
    span: Span = _span_field()
    label: String | None = None


@dataclass(frozen=True)
class ProbeDecl:
    """`probe reno_ir = reno(scorer: ir, pipeline: "...", ...)`: an optimisation probe."""

    name: Ident
    call: Call
    span: Span = _span_field()
    label: String | None = None


@dataclass(frozen=True)
class RegionDecl:
    name: Ident
    expr: RegionExpr
    span: Span = _span_field()
    on: tuple[Ident, ...] = ()  # `on ARM, ARM`: the arms it is computed on (empty: every images arm)


@dataclass(frozen=True)
class MeasureDecl:
    name: Ident
    call: Call
    span: Span = _span_field()
    on: tuple[Ident, ...] = ()  # `on ARM, ARM` (empty: every images arm)


@dataclass(frozen=True)
class CovariateDecl:
    name: Ident
    call: Call
    span: Span = _span_field()
    on: tuple[Ident, ...] = ()  # `on ARM, ARM` (empty: every images arm)


@dataclass(frozen=True)
class DoseList:
    values: tuple[Number, ...]
    span: Span = _span_field()


@dataclass(frozen=True)
class DoseRange:
    """`-20..20 step 10` (inclusive of both ends when the step lands on them)."""

    start: Number
    stop: Number
    step: Number
    span: Span = _span_field()


Doses = DoseList | DoseRange


@dataclass(frozen=True)
class OperatorDecl:
    name: Ident
    call: Call
    doses: Doses | None  # None only when the parser recovered from a missing `doses`
    span: Span = _span_field()
    label: String | None = None
    on: tuple[Ident, ...] = ()  # `on ARM, ARM`: the arms it runs on (empty: every images arm)


@dataclass(frozen=True)
class PlaceboDecl:
    """`placebo light_rest = lab_shift(channel: L, region: rest) of light`."""

    name: Ident
    call: Call
    of: Ident
    span: Span = _span_field()
    label: String | None = None
    on: tuple[Ident, ...] = ()  # `on ARM, ARM`; empty: its operator's scope


@dataclass(frozen=True)
class Check:
    """`r2 >= 0.5` inside a validate statement."""

    stat: Ident
    op: Literal[">", "<", ">=", "<="]
    value: Number
    span: Span = _span_field()


@dataclass(frozen=True)
class ValidateDecl:
    """`validate ita under light: r2 >= 0.5, monotonic >= 0.95`."""

    measure: Ident
    operator: Ident
    checks: tuple[Check, ...]
    span: Span = _span_field()


@dataclass(frozen=True)
class SelectDecl:
    """`select best4 = best_of 4 under light by ita` (`under` optional)."""

    name: Ident
    n: Number
    operator: Ident | None
    measure: Ident
    span: Span = _span_field()


@dataclass(frozen=True)
class Where:
    """`where race = "Black"`: a reading restricted to the images whose column has that value."""

    column: Ident
    value: String | Number
    span: Span = _span_field()


@dataclass(frozen=True)
class Reading:
    """A statistic with its own qualifiers: `fidelity_index(light) on real for hps where race = "Black"`.

    `arms` and `scorers` hold what was written (the checker allows one of
    each); a qualifier left off is filled from the claim line. The formatter
    prints qualifiers in the order on, for, where.
    """

    call: Call
    arms: tuple[Ident, ...] = ()
    scorers: tuple[Ident, ...] = ()
    where: tuple[Where, ...] = ()
    span: Span = _span_field()


@dataclass(frozen=True)
class Comparison:
    """`difference(a, b)` (a − b) or `ratio(a, b)` (a / b) of two readings."""

    kind: Literal["difference", "ratio"]
    a: Reading
    b: Reading
    span: Span = _span_field()


@dataclass(frozen=True)
class Abs:
    """`abs(statistic(...))` or `abs(ratio(...))`."""

    call: Call | Reading | Comparison
    span: Span = _span_field()


StatExpr = Call | Reading | Abs | Comparison  # Reading: a stratum claim (`where` only)


@dataclass(frozen=True)
class Compare:
    """`fidelity_index(light) > 0`."""

    left: StatExpr
    op: Literal[">", "<", ">=", "<="]
    right: Number
    span: Span = _span_field()


@dataclass(frozen=True)
class Within:
    """`placebo_ratio(light, light_rest) within [0.5, 2]`."""

    left: StatExpr
    low: Number
    high: Number
    span: Span = _span_field()


@dataclass(frozen=True)
class Bare:
    """A claim that is itself a test: `transfers(...)`, `homogeneous(...)`."""

    call: Call
    span: Span = _span_field()


ClaimExpr = Compare | Within | Bare


@dataclass(frozen=True)
class EachScorer:
    """`for each scorer`."""

    span: Span = _span_field()


@dataclass(frozen=True)
class Claim:
    expr: ClaimExpr
    arms: tuple[Ident, ...]  # `on real, synthetic`; empty when absent
    scorers: EachScorer | tuple[Ident, ...]  # `for each scorer` / `for pick, ir`; () when absent
    span: Span = _span_field()


@dataclass(frozen=True)
class HypothesisDecl:
    name: Ident
    title: String
    claims: tuple[Claim, ...]
    span: Span = _span_field()


@dataclass(frozen=True)
class ReportDecl:
    settings: tuple[Setting, ...]
    span: Span = _span_field()


Decl = (AuditBlock | ScorerDecl | ArmDecl | RegionDecl | MeasureDecl | CovariateDecl | OperatorDecl | PlaceboDecl
        | ValidateDecl | SelectDecl | HypothesisDecl | ReportDecl | ProbeDecl)


@dataclass(frozen=True)
class Comment:
    """`# text` as written (with the `#`); kept only so `fmt` can put it back."""

    text: str
    span: Span = _span_field()


@dataclass(frozen=True)
class Module:
    """A whole `.audit` file, declarations in source order.

    `comments` are the file's `#` comments in source order; they do not take
    part in equality (two modules that differ only in comments are equal).
    """

    decls: tuple[Decl, ...]
    span: Span = _span_field()
    comments: tuple[Comment, ...] = field(default=(), compare=False, repr=False)


def strip_spans(node):
    """The same tree with every span zeroed: compares structure only."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        kwargs = {}
        for f in dataclasses.fields(node):
            v = getattr(node, f.name)
            kwargs[f.name] = _NO_SPAN if f.name == "span" else strip_spans(v)
        return type(node)(**kwargs)
    if isinstance(node, tuple):
        return tuple(strip_spans(x) for x in node)
    return node
