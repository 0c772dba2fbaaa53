"""The words of the `.audit` language, once: every keyword, what it opens and how editors show it.

The parser's error recovery and wording, the Pygments highlighter, the formatter,
the resolver's kinds, the language server (index, hover, completion, outline) and
the VS Code TextMate grammar all read this table. A new keyword is written in four
files: here, `audit.lark` (its rule and terminal; tests/grammar/test_grammar_vocabulary.py
holds the grammar's keyword terminals and top-level rules equal to this table),
`ast.py` (its node) and `build.py` (its builder method); then
`python -m scoreaudit.grammar.textmate --write` regenerates the editor grammar (a
test fails while it is stale). What the declaration means is the compiler's
(a pass in `compiler/check.py`, its IR model in `compiler/ir.py`).

A `Declaration` is a word that starts a statement at the top level (a restart
point after a syntax error, a line the outline shows); `Keyword`s are the other
reserved words. Like the grammar, a word followed by `:` is never a keyword
(`by: race` is an argument), except `label`, which is only ever written `label:`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from scoreaudit.grammar import ast

#: How a declaration is written: `KW NAME = ...` (assign), `KW "title" { key: value }` or
#: `KW { ... }` (settings), `KW NAME "title" { claims }` (claims), `KW A under B: ...` (statement).
Form = Literal["assign", "settings", "claims", "statement"]


@dataclass(frozen=True)
class Declaration:
    """A word that opens a top-level statement."""

    keyword: str
    node: type  # the AST class the parser builds for it
    form: Form
    doc: str  # hover text: what it declares and how it is written
    snippet: str  # the completion's LSP snippet
    kind: str | None = None  # its kind in the one namespace of names (None: it declares no name)
    calls: str | None = None  # the registry its call names (`placebo` calls operators)
    also: tuple[str, ...] = ()  # other reference kinds it satisfies (a placebo where an operator is named)
    after_body: tuple[str, ...] = ()  # keywords that may follow its call or expression on the line
    aligned: bool = True  # `fmt` lines up the `=` of adjacent `assign` declarations of this keyword

    @property
    def scoped(self) -> bool:
        """Whether it takes a scope `on ARM, ARM` (its AST node has an `on` field)."""
        return any(f.name == "on" for f in dataclasses.fields(self.node))


@dataclass(frozen=True)
class Keyword:
    """A reserved word that does not open a statement."""

    word: str
    doc: str
    key_only: bool = False  # written only as `word:` (`label: "..."`), where other keywords never are


DECLARATIONS: tuple[Declaration, ...] = (
    Declaration("audit", ast.AuditBlock, "settings",
                'the audit block: `audit "title" { setting: value ... }`, once per spec',
                'audit "${1:title}" {\n  version: 1\n  seed: ${2:1}\n}'),
    Declaration("scorer", ast.ScorerDecl, "assign", "declares a scorer: `scorer NAME = plugin(...)`",
                "scorer ${1:name} = ${2:plugin}()", kind="scorer", calls="scorer", after_body=("on", "label")),
    Declaration("arm", ast.ArmDecl, "assign",
                "declares an arm (a set of images or pairs): `arm NAME = images(...)` or `pairs(...)`",
                'arm ${1:name} = images("${2:folder}", manifest: "${3:manifest.csv}", kind: ${4:real})',
                kind="arm", calls="arm", after_body=("label",)),
    Declaration("region", ast.RegionDecl, "assign",
                "declares a region: a region plugin call, a region name, `not`, `&` (and), `|` (or)",
                "region ${1:name} = ${2:face}()", kind="region", calls="region", after_body=("on",)),
    Declaration("measure", ast.MeasureDecl, "assign",
                "declares a measured attribute: `measure NAME = plugin(region: ...)`",
                "measure ${1:name} = ${2:plugin}(region: ${3:region})", kind="measure", calls="measure",
                after_body=("on",)),
    Declaration("covariate", ast.CovariateDecl, "assign",
                "declares an artifact covariate: `covariate NAME = plugin(...)`",
                "covariate ${1:name} = ${2:plugin}()", kind="covariate", calls="covariate",
                also=("measure",), after_body=("on",)),
    Declaration("operator", ast.OperatorDecl, "assign",
                "declares a pixel operator and its doses: `operator NAME = plugin(...) doses ...`",
                "operator ${1:name} = ${2:plugin}(region: ${3:region}) doses ${4:-10, 0, 10}",
                kind="operator", calls="operator", after_body=("doses",)),
    Declaration("placebo", ast.PlaceboDecl, "assign",
                "declares a placebo: the same kind of operator elsewhere, sharing the doses of the operator "
                "after `of`",
                "placebo ${1:name} = ${2:plugin}(region: ${3:region}) of ${4:operator}",
                kind="placebo", calls="operator", also=("operator",), after_body=("of",)),
    Declaration("validate", ast.ValidateDecl, "statement",
                "checks a measure against an operator: `validate MEASURE under OPERATOR: r2 >= 0.5, ...`",
                "validate ${1:measure} under ${2:operator}: r2 >= ${3:0.5}"),
    Declaration("select", ast.SelectDecl, "assign",
                "declares a best-of-n selection: `select NAME = best_of N [under OPERATOR] by MEASURE`",
                "select ${1:name} = best_of ${2:4} under ${3:operator} by ${4:measure}", kind="selection"),
    Declaration("hypothesis", ast.HypothesisDecl, "claims",
                'declares a pre-registered hypothesis: `hypothesis NAME "title" { claims }`',
                'hypothesis ${1:H1} "${2:claim}" {\n  $0\n}', kind="hypothesis", calls="statistic"),
    Declaration("probe", ast.ProbeDecl, "assign",
                "declares an optimisation probe: `probe NAME = reno(scorer: ..., pipeline: ..., prompts: ..., "
                "measures: [...])`",
                'probe ${1:name} = reno(scorer: ${2:scorer}, pipeline: "${3:stabilityai/sd-turbo}", '
                'prompts: "${4:prompts.txt}", measures: [${5:ita}])',
                kind="probe", calls="probe", after_body=("label",),
                aligned=False),  # probe lines are long calls; `fmt` has printed them unaligned since they came
    Declaration("report", ast.ReportDecl, "settings",
                "the report block: `report { title: \"...\"  formats: html, pdf }`",
                "report {\n  formats: html, pdf\n}"),
)

KEYWORDS_OTHER: tuple[Keyword, ...] = (
    Keyword("doses", "the doses the operator is applied at: a list (`-10, 0, 10`) or a range (`-20..20 step 10`)"),
    Keyword("step", "the step of a dose range: `-20..20 step 10`"),
    Keyword("of", "`placebo NAME = ... of OPERATOR`: the operator whose doses the placebo shares"),
    Keyword("under", "the operator whose dose variants are validated or selected among"),
    Keyword("by", "`select ... by MEASURE`: the measure the selection ranks candidates by"),
    Keyword("best_of", "`best_of N`: keep the best-scoring of N candidates"),
    Keyword("within", "`θ within [a, b]`: an equivalence claim (the interval of θ lies inside [a, b])"),
    Keyword("abs", "`abs(θ) < δ`: an equivalence claim (θ lies within ±δ)"),
    Keyword("on", "the arms a claim (or a reading) is evaluated on; after a scorer, region, measure, covariate, "
                  "operator or placebo, its scope: the arms it runs on (`... on faces, bodies`)"),
    Keyword("for", "the scorers a claim (or a reading) is evaluated for: `for each scorer` or `for NAME, ...`"),
    Keyword("each", "`for each scorer`: one cell per declared scorer (on each arm, those in scope there)"),
    Keyword("not", "region algebra: every pixel outside the region"),
    Keyword("where", '`where COLUMN = "value"`: a reading restricted to images whose manifest column has that value'),
    Keyword("difference", "`difference(a, b)`: reading a minus reading b"),
    Keyword("ratio", "`ratio(a, b)`: reading a divided by reading b"),
    Keyword("label", '`label: "..."` after a scorer, arm, operator, placebo or probe: how the report names it',
            key_only=True),
)

#: Every word that opens a statement, in the order completion offers them.
STATEMENT_KEYWORDS: tuple[str, ...] = tuple(d.keyword for d in DECLARATIONS)
#: Statement words that declare a name (`scorer laion = ...`: `laion` is declared).
NAMING_KEYWORDS: tuple[str, ...] = tuple(d.keyword for d in DECLARATIONS if d.kind is not None)
#: Statement words that declare no name (settings blocks, `validate`).
BLOCK_KEYWORDS: tuple[str, ...] = tuple(d.keyword for d in DECLARATIONS if d.kind is None)
#: Reserved words that are neither (`doses`, `on`, `where`, ...).
OTHER_KEYWORDS: tuple[str, ...] = tuple(k.word for k in KEYWORDS_OTHER)
#: Every reserved word, sorted (a declared name may be none of them).
KEYWORDS: tuple[str, ...] = tuple(sorted(STATEMENT_KEYWORDS + OTHER_KEYWORDS))

#: Hover text of each reserved word.
DOCS: dict[str, str] = {**{d.keyword: d.doc for d in DECLARATIONS}, **{k.word: k.doc for k in KEYWORDS_OTHER}}

BY_KEYWORD: dict[str, Declaration] = {d.keyword: d for d in DECLARATIONS}
BY_NODE: dict[type, Declaration] = {d.node: d for d in DECLARATIONS}

#: AST class → declaration kind, for the declarations that declare a name.
DECL_KINDS: dict[type, str] = {d.node: d.kind for d in DECLARATIONS if d.kind is not None}
#: Declaration keyword → declaration kind (`select` declares a `selection`).
KEYWORD_KIND: dict[str, str] = {d.keyword: d.kind for d in DECLARATIONS if d.kind is not None}
#: AST class → the registry its calls name.
CALL_KIND: dict[type, str] = {d.node: d.calls for d in DECLARATIONS if d.calls is not None}
#: Declaration keyword → the registry its calls name.
STATEMENT_CALL_KIND: dict[str, str] = {d.keyword: d.calls for d in DECLARATIONS if d.calls is not None}
#: Reference kind → the declaration kinds a name of that kind may be (a placebo serves as an operator).
#: Names declared `KW NAME = ...` are the ones other declarations refer to (a hypothesis's never is).
REF_KINDS: dict[str, frozenset[str]] = {
    d.kind: frozenset({d.kind} | {o.kind for o in DECLARATIONS if o.kind and d.kind in o.also})
    for d in DECLARATIONS if d.kind is not None and d.form == "assign"
}


def terminal(word: str) -> str:
    """The grammar's terminal for a keyword (`best_of` → `_BEST_OF`)."""
    return "_" + word.upper()


def keyword_for_kind(kind: str) -> str:
    """The keyword that declares a name of `kind` (`selection` → `select`); `kind` itself when none does."""
    return next((d.keyword for d in DECLARATIONS if d.kind == kind), kind)


def declaring(registry_kind: str) -> str | None:
    """The first keyword whose call names an entry of `registry_kind` (`operator` → `operator`)."""
    return next((d.keyword for d in DECLARATIONS if d.calls == registry_kind), None)
