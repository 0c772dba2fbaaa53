"""What every name in a parsed spec is: the index behind hover, definition, references and rename.

A spec has one namespace of declarations (`compiler.resolve`), so a reference
is identified by its name alone. Which words are references is decided the way
the checker decides it: an argument value is a reference when the plugin's
parameter model marks it `Ref(kind)` with a declaration kind (`region: skin`),
and not otherwise (`kind: real` stays a literal even when an arm is called
`real`). Names in any other place of the tree (after `on`, `for`, `of`,
`under`, `by`, in region algebra, and in syntax added later) are references
when they name a declaration, so new claim syntax is indexed without changes
here.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from scoreaudit import registry
from scoreaudit.compiler.params import fields_of
from scoreaudit.compiler.resolve import DECL_KINDS, REF_KINDS
from scoreaudit.grammar import ast, vocabulary

#: Which registry a call in each declaration names; declaration keyword → declaration kind.
CALL_KIND: dict[type, str] = vocabulary.CALL_KIND
KEYWORD_KIND: dict[str, str] = vocabulary.KEYWORD_KIND

NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DECL_RE = re.compile(r"^[ \t]*(" + "|".join(KEYWORD_KIND) + r")(?![A-Za-z0-9_])(?![ \t]*:)[ \t]+"
                      r"([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


@dataclass(frozen=True)
class Occurrence:
    """One name in the text and what it is.

    role: "definition" | "reference" (kind: declaration kind), "plugin" (kind:
    registry kind), "parameter" (kind: registry kind, plugin: entry name),
    "setting" (kind: "audit" or "report"), "check" (a validation statistic).
    """

    start: int  # character offsets into the text
    end: int
    name: str
    role: str
    kind: str | None = None
    plugin: str | None = None


def entry_for(name: str, kind: str | None) -> registry.PluginEntry | None:
    """The registry entry a call names: the one of the declaration's kind, else any of that name."""
    registry.load_plugins()
    reg = registry.REGISTRIES.get(kind or "")
    if reg is not None and name in reg:
        return reg.get(name)
    hits = registry.lookup(name)
    return hits[0] if hits else None


def _spec_for(entry: registry.PluginEntry, arg: ast.Arg, index: int):
    specs = fields_of(entry.params)
    if arg.name is not None:
        return specs.get(arg.name.name)
    if index < len(entry.positional):
        return next((s for s in specs.values() if s.name == entry.positional[index]), None)
    return None


class Index:
    """Occurrences of a parsed module, sorted by offset, and its declarations."""

    def __init__(self, module: ast.Module):
        self.module = module
        self.declared: dict[str, tuple[str, Any]] = {}  # name → (kind, first declaration node)
        for d in module.decls:
            kind = DECL_KINDS.get(type(d))
            name = getattr(d, "name", None)  # every declaration with a kind has one
            if kind is not None and name is not None and name.name not in self.declared:
                self.declared[name.name] = (kind, d)
        self.occurrences: list[Occurrence] = []
        for d in module.decls:
            self._decl(d)
        self.occurrences.sort(key=lambda o: (o.start, o.end))
        self._starts = [o.start for o in self.occurrences]

    # ------------------------------------------------------------ queries

    def at(self, offset: int) -> Occurrence | None:
        """The occurrence under the cursor (its end counts: a cursor just after a word is on it)."""
        i = bisect.bisect_right(self._starts, offset) - 1
        for j in (i, i - 1):
            if 0 <= j < len(self.occurrences):
                o = self.occurrences[j]
                if o.start <= offset <= o.end:
                    return o
        return None

    def of_name(self, name: str) -> list[Occurrence]:
        """The definitions and references of a declared name, in text order."""
        return [o for o in self.occurrences if o.name == name and o.role in ("definition", "reference")]

    def definition(self, name: str) -> Occurrence | None:
        return next((o for o in self.occurrences if o.name == name and o.role == "definition"), None)

    # ------------------------------------------------------------ building

    def _add(self, node: Any, role: str, kind: str | None = None, plugin: str | None = None) -> None:
        span = getattr(node, "span", None)
        name = getattr(node, "name", None)
        if span is None or span.line == 0 or not isinstance(name, str) or span.end <= span.start:
            return
        self.occurrences.append(Occurrence(span.start, span.end, name, role, kind, plugin))

    def _name(self, node: Any) -> None:
        """A bare name somewhere a declaration may be meant."""
        hit = self.declared.get(node.name)
        if hit is not None:
            self._add(node, "reference", hit[0])

    def _decl(self, d: Any) -> None:
        kind = DECL_KINDS.get(type(d))
        if kind is not None:
            self._add(d.name, "definition", kind)
        decl = vocabulary.BY_NODE.get(type(d))
        if decl is not None and decl.form == "settings":
            block = decl.keyword
            for s in d.settings:
                self._add(s.key, "setting", block)
            return
        ctx = CALL_KIND.get(type(d))
        for f in dataclasses.fields(d):
            if f.name in ("name", "span"):
                continue
            self._visit(getattr(d, f.name), ctx)

    def _visit(self, node: Any, ctx: str | None, hint: str | None = "any") -> None:
        """Walk any node; `hint` says whether a bare name here may be a reference."""
        if node is None or isinstance(node, (str, int, float, bool, ast.Number, ast.String, ast.Column,
                                             ast.EachScorer)):
            return
        if isinstance(node, tuple):
            for x in node:
                self._visit(x, ctx, hint)
            return
        if isinstance(node, ast.Call):
            self._call(node, ctx)
            return
        if isinstance(node, ast.Check):
            self._add(node.stat, "check", "statistic")
            return
        if isinstance(node, (ast.Name, ast.Ident)):
            if hint == "any" or hint in REF_KINDS:
                self._name(node)
            return
        if isinstance(node, ast.ListValue):
            self._visit(node.items, ctx, hint)
            return
        if isinstance(node, ast.Product):
            self._visit((node.left, node.right), ctx, hint)
            return
        if dataclasses.is_dataclass(node):  # any other node, including syntax added after this module
            for f in dataclasses.fields(node):
                if f.name != "span":
                    self._visit(getattr(node, f.name), ctx, "any")

    def _call(self, call: ast.Call, ctx: str | None) -> None:
        entry = entry_for(call.func.name, ctx)
        self._add(call.func, "plugin", entry.kind if entry else ctx)
        for i, arg in enumerate(call.args):
            spec = _spec_for(entry, arg, i) if entry is not None else None
            if arg.name is not None:
                self._add(arg.name, "parameter", entry.kind if entry else ctx, entry.name if entry else None)
            hint = spec.ref if spec is not None else "any"
            self._visit(arg.value, ctx, hint)


# ---------------------------------------------------------------- text without a parse


@dataclass(frozen=True)
class Declared:
    """A declaration found by reading lines (works while the file has syntax errors)."""

    name: str
    kind: str
    start: int
    end: int
    line_start: int


def scan_declarations(text: str) -> list[Declared]:
    """Every `KEYWORD NAME` at the start of a line, outside comments and strings on that line."""
    out = []
    for m in _DECL_RE.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        out.append(Declared(m.group(2), KEYWORD_KIND[m.group(1)], m.start(2), m.end(2), line_start))
    return out


def word_at(text: str, offset: int) -> tuple[int, int, str] | None:
    """The identifier touching `offset` (start, end, word), or None."""
    start = offset
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_") and text[start - 1].isascii():
        start -= 1
    end = offset
    while end < len(text) and (text[end].isalnum() or text[end] == "_") and text[end].isascii():
        end += 1
    word = text[start:end]
    return (start, end, word) if NAME_RE.fullmatch(word) else None


def iter_lines(text: str) -> Iterator[tuple[int, str]]:
    pos = 0
    for line in text.splitlines(True):
        yield pos, line
        pos += len(line)
