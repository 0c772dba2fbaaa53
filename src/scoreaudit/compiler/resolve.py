"""Declarations of a spec and name resolution against them.

One namespace holds every named declaration (scorers, arms, regions,
measures, covariates, operators, placebos, selections, hypotheses): a name
means one thing in a file, so `region: light` can say "`light` is an
operator, not a region" instead of silently picking another kind.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from scoreaudit import registry
from scoreaudit.compiler.values import span_of
from scoreaudit.diagnostics import Diagnostic, Span, did_you_mean
from scoreaudit.grammar import ast, vocabulary

# Which declaration kinds satisfy a reference of a given Ref kind, and each declaration's kind:
# read from the language's vocabulary (`grammar/vocabulary.py`).
REF_KINDS: dict[str, frozenset[str]] = vocabulary.REF_KINDS
DECL_KINDS: dict[type, str] = vocabulary.DECL_KINDS

ARTICLE = {kind: ("an " if kind[0] in "aeiou" else "a ") + kind for kind in vocabulary.KEYWORD_KIND.values()}


def a(kind: str) -> str:
    return ARTICLE.get(kind, f"a {kind}")


class Sink:
    """Collects diagnostics for one file; drops exact repeats (one cause reported once)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.items: list[Diagnostic] = []
        self._seen: set[tuple] = set()

    def emit(self, code: str, node_or_span: Any, message: str, help: str | None = None,
             notes: Iterable[str] = (), severity: str | None = None) -> None:
        span = node_or_span if isinstance(node_or_span, Span) or node_or_span is None else span_of(node_or_span)
        if span is not None and span.line == 0:
            span = None
        sev: Any = severity or ("warning" if code.startswith("W") else "error")  # the Diagnostic's Literal
        key = (code, span, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.items.append(Diagnostic(code=code, severity=sev, message=message, span=span,
                                     help=help, path=self.path, notes=tuple(notes)))

    @property
    def has_errors(self) -> bool:
        return any(d.is_error for d in self.items)

    def error_count(self) -> int:
        return sum(d.is_error for d in self.items)


@dataclass
class Decls:
    """Name → (kind, declaration node), first declaration wins."""

    table: dict[str, tuple[str, Any]] = field(default_factory=dict)
    # names() per kinds, valid while the table has the same size (entries are only ever added)
    _names: dict[frozenset, tuple[int, list[str]]] = field(default_factory=dict, repr=False, compare=False)

    def kind_of(self, name: str) -> str | None:
        hit = self.table.get(name)
        return hit[0] if hit else None

    def names(self, kinds: Iterable[str]) -> list[str]:
        ks = frozenset(kinds)
        hit = self._names.get(ks)
        if hit is None or hit[0] != len(self.table):
            hit = self._names[ks] = (len(self.table), [n for n, (k, _) in self.table.items() if k in ks])
        return list(hit[1])

    def node(self, name: str) -> Any:
        return self.table[name][1]

    def resolve(self, ident: Any, ref_kind: str, sink: Sink, context: str = "") -> str | None:
        """The declared name `ident` refers to, or None after a diagnostic.

        E0203: nothing of that name; E0204: declared, but as another kind.
        """
        name = ident.name if hasattr(ident, "name") else str(getattr(ident, "value", ident))
        want = REF_KINDS[ref_kind]
        kind = self.kind_of(name)
        where = f" {context}" if context else ""
        if kind in want:
            return name
        wanted = " or ".join(sorted(want)) if len(want) > 1 else ref_kind
        if kind is None:
            cands = self.names(want)
            guess = did_you_mean(name, cands)
            if guess:
                help = f"did you mean '{guess}'?"
            elif cands:
                help = f"declared {wanted}s: {', '.join(cands)}"
            else:
                help = f"declare it first, e.g. `{_decl_keyword(ref_kind)} {name} = ...`"
            sink.emit("E0203", ident, f"unknown {wanted} `{name}`{where}", help)
        else:
            cands = self.names(want)
            help = f"declared {wanted}s: {', '.join(cands)}" if cands else f"declare {a(ref_kind)} first"
            sink.emit("E0204", ident, f"`{name}` is {a(kind)}, not {a(ref_kind)}{where}", help)
        return None


_decl_keyword = vocabulary.keyword_for_kind

# How an entry of each registry is declared (statistics are named in a hypothesis's claims).
_DECL_KEYWORD = {**{k: w for k in set(vocabulary.STATEMENT_CALL_KIND.values())
                    if k != "statistic" and (w := vocabulary.declaring(k))},
                 "statistic": "a hypothesis", "section": "report"}


def plugin_entry(call: ast.Call, kind: str, st: Any, what: str) -> registry.PluginEntry | None:
    """The registry entry `call.func` names in registry `kind`, or None after E0202 (`st.sink` gets it)."""
    reg = registry.REGISTRIES[kind]
    if not isinstance(call, ast.Call):  # `column(x)` where a plugin or statistic call belongs
        from scoreaudit.compiler.values import text

        st.sink.emit("E0250", call, f"`{text(call)}` is a manifest column, not {a(kind)} call, in {what}",
                     f"name {a(kind)}: `scoreaudit describe` lists them; `column(...)` only gives a "
                     "per-image value to a parameter such as `prompt:`")
        return None
    name = call.func.name
    if name in reg:
        return reg.get(name)
    elsewhere = [k for k, r in registry.REGISTRIES.items() if name in r and k != kind]
    guess = did_you_mean(name, reg.names())
    if guess:
        help = f"did you mean '{guess}'?"
    elif elsewhere:
        help = f"`{name}` is {a(elsewhere[0])}: declare it with `{_DECL_KEYWORD.get(elsewhere[0], elsewhere[0])}`"
    else:
        help = f"{kind}s: {', '.join(reg.names())}; `scoreaudit describe NAME` documents each"
    notes = [f"`{name}` is {a(elsewhere[0])} plugin, not {a(kind)}"] if elsewhere and guess else []
    code = "E0205" if kind == "statistic" else "E0202"
    st.sink.emit(code, call.func, f"unknown {kind} `{name}` in {what}", help, notes=notes)
    return None
