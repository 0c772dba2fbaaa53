"""The editor features over one text: diagnostics, hover, definition, references,
rename, formatting, document symbols and completion.

Everything here speaks character offsets and plain data; `server.py` turns it
into protocol types. Diagnostics are exactly `api.check`'s (same codes, spans,
help); hover shows `scoreaudit describe`'s text; formatting is `scoreaudit fmt`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from scoreaudit import api, registry
from scoreaudit.compiler import ir
from scoreaudit.compiler.describe import SETTING_DOCS, describe, describe_entry, param_rows, type_text
from scoreaudit.compiler.params import fields_of, literal_choices
from scoreaudit.compiler.resolve import DECL_KINDS, REF_KINDS
from scoreaudit.diagnostics import Diagnostic, has_errors
from scoreaudit.grammar import ast, vocabulary
from scoreaudit.lsp.context import Context, context_at
from scoreaudit.lsp.index import NAME_RE, Index, Occurrence, entry_for, scan_declarations, word_at

REPORT_SETTING_DOCS = {
    "title": "the report's title (a quoted string); the audit's title when left out",
    "formats": "which reports `run` writes: html, pdf (both: `formats: html, pdf`)",
}
#: Hover text of the language's keywords, the registry each statement's calls name and the snippet
#: each statement completes to: all from the vocabulary (`grammar/vocabulary.py`).
KEYWORD_DOCS = vocabulary.DOCS
STATEMENT_CALL_KIND = vocabulary.STATEMENT_CALL_KIND
DECLARATION_SNIPPETS = {d.keyword: d.snippet for d in vocabulary.DECLARATIONS}


class RenameError(ValueError):
    """A rename the spec cannot take (the message says why)."""


# ---------------------------------------------------------------- one text


class Document:
    """One snapshot of a spec's text; each analysis is computed once, when first asked for."""

    def __init__(self, text: str, path: str = "<input>"):
        self.text = text
        self.path = path

    @cached_property
    def parsed(self) -> tuple[ast.Module | None, list[Diagnostic]]:
        module, diags = api.parse(self.text, self.path)
        return (module if module is not None and not has_errors(diags) else None), diags

    @property
    def module(self) -> ast.Module | None:
        return self.parsed[0]

    @cached_property
    def index(self) -> Index | None:
        return Index(self.module) if self.module is not None else None

    def diagnostics(self, tables: bool = False) -> list[Diagnostic]:
        """`scoreaudit check`'s diagnostics for this text (tables: also precomputed-table coverage).

        Without tables this is `api.check(..., tables=False)` on the parse this document already
        holds, so the outline and hover that editors ask for after each change parse nothing again.
        """
        if tables:
            return api.check(self.path, source=self.text, tables=True).diagnostics
        from scoreaudit.compiler.check import check

        module, diags = self.parsed
        if module is None:
            return list(diags)
        return list(diags) + list(check(module, self.text, self.path)[1])

    def line_of(self, offset: int) -> int:
        return self.text.count("\n", 0, offset) + 1


# ---------------------------------------------------------------- navigation


def _name_at(doc: Document, offset: int) -> Occurrence | None:
    """The declared name (definition or reference) under the cursor, from the parse."""
    if doc.index is None:
        return None
    o = doc.index.at(offset)
    return o if o is not None and o.role in ("definition", "reference") else None


def definition(doc: Document, offset: int) -> tuple[int, int] | None:
    """Where the name under the cursor is declared; read from lines when the text does not parse."""
    o = _name_at(doc, offset)
    if o is not None:
        d = doc.index.definition(o.name)
        return (d.start, d.end) if d else None
    w = word_at(doc.text, offset)
    if w is None:
        return None
    hit = next((d for d in scan_declarations(doc.text) if d.name == w[2]), None)
    return (hit.start, hit.end) if hit else None


def references(doc: Document, offset: int, include_declaration: bool = True) -> list[tuple[int, int]]:
    o = _name_at(doc, offset)
    if o is None:
        return []
    return [(x.start, x.end) for x in doc.index.of_name(o.name)
            if include_declaration or x.role != "definition"]


def prepare_rename(doc: Document, offset: int) -> tuple[int, int, str] | None:
    o = _name_at(doc, offset)
    return (o.start, o.end, o.name) if o is not None else None


def rename(doc: Document, offset: int, new_name: str) -> list[tuple[int, int, str]]:
    """Edits (start, end, text) renaming the declared name under the cursor everywhere it is used."""
    if doc.module is None:
        line = next((d.span.line for d in doc.parsed[1] if d.is_error and d.span is not None), None)
        raise RenameError("the spec has syntax errors" + (f" (line {line})" if line else "") +
                          "; fix them before renaming")
    o = _name_at(doc, offset)
    if o is None:
        raise RenameError("only declared names (scorers, arms, regions, measures, operators, ...) can be renamed")
    if not NAME_RE.fullmatch(new_name):
        raise RenameError(f"`{new_name}` is not a name: use letters, digits and `_`, not starting with a digit")
    if new_name in vocabulary.KEYWORDS:
        raise RenameError(f"`{new_name}` is a keyword of the language")
    if new_name == ir.ORIGINAL:
        raise RenameError(f"`{ir.ORIGINAL}` is reserved for the unaltered images")
    if new_name != o.name and new_name in doc.index.declared:
        kind = doc.index.declared[new_name][0]
        raise RenameError(f"`{new_name}` is already declared (as a {kind})")
    return [(x.start, x.end, new_name) for x in doc.index.of_name(o.name)]


def formatted(doc: Document) -> str | None:
    """The text as `scoreaudit fmt` prints it, or None when it does not parse."""
    from scoreaudit.compiler.fmt import format_module

    return format_module(doc.module) if doc.module is not None else None


# ---------------------------------------------------------------- hover


def _code(text: str, lang: str = "") -> str:
    return f"```{lang}\n{text.rstrip()}\n```"


def _declaration_hover(doc: Document, name: str) -> str | None:
    if doc.index is not None and name in doc.index.declared:
        kind, node = doc.index.declared[name]
        start, end = node.span.start, node.span.end
    else:
        hit = next((d for d in scan_declarations(doc.text) if d.name == name), None)
        if hit is None:
            return None
        kind, start = hit.kind, hit.line_start
        end = doc.text.find("\n", start)
        end = len(doc.text) if end < 0 else end
    lines = doc.text[start:end].splitlines()
    if len(lines) > 12:
        lines = lines[:11] + ["  ..."]
    return f"**{kind} `{name}`** (line {doc.line_of(start)})\n\n" + _code("\n".join(lines), "audit")


def _parameter_hover(o: Occurrence) -> str | None:
    reg = registry.REGISTRIES.get(o.kind or "")
    if reg is None or o.plugin not in reg:
        return None
    entry = reg.get(o.plugin)
    spec = fields_of(entry.params).get(o.name)
    if spec is None:
        return None
    row = next((r for r in param_rows(entry) if r[0].split(" ")[0] == spec.spelled), None)
    if row is None:
        return None
    name, typ, default = row
    return (f"**`{name}`**: {typ} (default: {default})\n\n"
            f"parameter of `{entry.name}` ({entry.kind}): {entry.summary}")


def _setting_hover(o: Occurrence) -> str | None:
    if o.kind == "report":
        doc = REPORT_SETTING_DOCS.get(o.name)
        return f"**{o.name}** (report setting)\n\n{doc}" if doc else None
    text = describe(o.name) if o.name in SETTING_DOCS else None
    return _code(text, "text") if text else None


def hover(doc: Document, offset: int) -> str | None:
    """Markdown for the word under the cursor: `describe` text, or the declaration of a declared name."""
    o = doc.index.at(offset) if doc.index is not None else None
    if o is not None:
        if o.role in ("definition", "reference"):
            return _declaration_hover(doc, o.name)
        if o.role in ("plugin", "check"):
            entry = entry_for(o.name, o.kind)
            return _code(describe_entry(entry), "text") if entry is not None else None
        if o.role == "parameter":
            return _parameter_hover(o)
        if o.role == "setting":
            return _setting_hover(o)
    w = word_at(doc.text, offset)
    if w is None or _in_comment_or_string(doc.text, offset):
        return None
    if doc.index is None:  # the text does not parse: a declared name is recognised by its spelling
        found = _declaration_hover(doc, w[2])
        if found is not None:
            return found
    # A keyword wins over a registry entry of the same spelling (e.g. the `placebo` report section).
    if w[2] in KEYWORD_DOCS and not doc.text[w[1]:].lstrip(" \t").startswith(":"):
        return f"**{w[2]}** (keyword): {KEYWORD_DOCS[w[2]]}"
    text = describe(w[2])
    return _code(text, "text") if text else None


def _in_comment_or_string(text: str, offset: int) -> bool:
    return context_at(text, offset).in_comment_or_string


# ---------------------------------------------------------------- symbols


@dataclass
class Symbol:
    name: str
    kind: str  # declaration kind, "audit", "report", "validate" or "claim"
    start: int
    end: int
    sel_start: int
    sel_end: int
    detail: str = ""
    children: list[Symbol] = field(default_factory=list)


def symbols(doc: Document) -> list[Symbol]:
    """The outline: every declaration (hypotheses with their claims); read from lines when the text does not parse."""
    from scoreaudit.compiler.values import text as canonical

    if doc.module is None:
        out = []
        for d in scan_declarations(doc.text):
            end = doc.text.find("\n", d.start)
            out.append(Symbol(d.name, d.kind, d.line_start, len(doc.text) if end < 0 else end, d.start, d.end))
        return out
    out = []
    for d in doc.module.decls:
        s = d.span
        if isinstance(d, ast.AuditBlock):
            out.append(Symbol(d.title.value or "audit", "audit", s.start, s.end, d.title.span.start,
                              d.title.span.end, "audit"))
        elif isinstance(d, ast.ReportDecl):
            out.append(Symbol("report", "report", s.start, s.end, s.start, s.start + len("report"), "report"))
        elif isinstance(d, ast.ValidateDecl):
            out.append(Symbol(f"validate {d.measure.name} under {d.operator.name}", "validate", s.start, s.end,
                              d.measure.span.start, d.measure.span.end,
                              ", ".join(f"{c.stat.name} {c.op} {c.value.text}" for c in d.checks)))
        elif isinstance(d, ast.HypothesisDecl):
            claims = [Symbol(canonical(c), "claim", c.span.start, c.span.end, c.span.start, c.span.end)
                      for c in d.claims]
            out.append(Symbol(d.name.name, "hypothesis", s.start, s.end, d.name.span.start, d.name.span.end,
                              d.title.value, claims))
        elif type(d) in DECL_KINDS:
            kind = DECL_KINDS[type(d)]
            call = getattr(d, "call", None)
            detail = call.func.name if call is not None else ""
            if isinstance(d, ast.RegionDecl):
                detail = canonical(d.expr)
            elif isinstance(d, ast.SelectDecl):
                detail = f"best_of {d.n.text}" + (f" under {d.operator.name}" if d.operator else "") + \
                    f" by {d.measure.name}"
            out.append(Symbol(d.name.name, kind, s.start, s.end, d.name.span.start, d.name.span.end, detail))
    return out


# ---------------------------------------------------------------- completion


@dataclass(frozen=True)
class Completion:
    label: str
    kind: str  # keyword | plugin | declared | setting | parameter | value
    detail: str = ""
    documentation: str = ""
    insert: str | None = None  # plain text to insert (label when None)
    snippet: str | None = None  # the same as an LSP snippet, for clients that take them


def signature(entry: registry.PluginEntry) -> str:
    """`lab_shift(channel: 'L' | 'a' | 'b', region: region name, ...)`: positional parameters first, by name."""
    parts = []
    for name, typ, default in param_rows(entry):
        bare = name.split(" ")[0]
        optional = "" if default == "required" else "?"
        parts.append(f"{bare}{optional}" if "(positional" in name else f"{bare}{optional}: {typ}")
    return f"{entry.name}({', '.join(parts)})"


def _call_snippet(entry: registry.PluginEntry) -> str:
    """`name(` + the required arguments as placeholders + `)`."""
    args, n = [], 1
    for spec in dict.fromkeys(fields_of(entry.params).values()):
        if not spec.required:
            continue
        placeholder = f"${{{n}:{spec.spelled}}}"
        args.append(placeholder if spec.name in entry.positional else f"{spec.spelled}: ${{{n}}}")
        n += 1
    return f"{entry.name}({', '.join(args)})$0"


def _plugins(kind: str) -> list[Completion]:
    registry.load_plugins()
    out = []
    for e in registry.REGISTRIES[kind]:
        if kind == "statistic" and e.meta.get("validation"):
            continue
        out.append(Completion(e.name, "plugin", signature(e), _code(describe_entry(e), "text"),
                              snippet=_call_snippet(e)))
    return out


def _checks() -> list[Completion]:
    registry.load_plugins()
    return [Completion(e.name, "plugin", f"validation check: {e.summary}", _code(describe_entry(e), "text"))
            for e in registry.statistics if e.meta.get("validation")]


def _declared(skip_line: int, text: str, kinds) -> list[Completion]:
    """Declared names of `kinds`, except the one declared on the line at `skip_line` (being written)."""
    kinds = set(kinds)
    seen: dict[str, Completion] = {}
    for d in scan_declarations(text):
        if d.kind in kinds and d.name not in seen and d.line_start != skip_line:
            end = text.find("\n", d.line_start)
            line = text[d.line_start:len(text) if end < 0 else end].strip()
            seen[d.name] = Completion(d.name, "declared", d.kind, _code(line, "audit"))
    return list(seen.values())


def _keywords(*words: str) -> list[Completion]:
    return [Completion(w, "keyword") for w in words]


def _values_for(ctx: Context, spec, text: str) -> list[Completion]:
    """What may follow `name:` of a parameter."""
    if spec.ref in REF_KINDS:
        return _declared(ctx.statement_line, text, REF_KINDS[spec.ref])
    if spec.ref == "statistic":
        return _plugins("statistic")
    if spec.ref == "probe_measure":  # a probe's `measures: [ita, clip_attribute(labels: [...])]`
        return _plugins("probe_measure")
    return [Completion(c, "value", type_text(spec.annotation)) for c in spec.choices]


def _settings(block: str, given: set[str]) -> list[Completion]:
    if block == "audit":
        return [Completion(k, "setting", type_text(ir.Settings.model_fields[k].annotation), doc,
                           insert=f"{k}: ") for k, doc in SETTING_DOCS.items() if k not in given]
    return [Completion(k, "setting", "report setting", doc, insert=f"{k}: ")
            for k, doc in REPORT_SETTING_DOCS.items() if k not in given]


def _setting_values(block: str, key: str) -> list[Completion]:
    model = ir.Settings if block == "audit" else ir.ReportIR
    info = model.model_fields.get(key)
    if info is None:
        return []
    return [Completion(c, "value", f"{key}") for c in literal_choices(info.annotation)]


def _list_after(ctx: Context, keyword: str) -> bool:
    """The cursor continues `keyword NAME, NAME, ` (a list of arms or scorers)."""
    toks = [t.text for t in ctx.tokens]
    i = len(toks) - 1
    if i < 0 or toks[i] != ",":
        return False
    while i >= 1 and toks[i] == "," and NAME_RE.fullmatch(toks[i - 1]):
        i -= 2
    return i >= 0 and toks[i] == keyword


def complete(text: str, offset: int) -> tuple[int, list[Completion]]:
    """(start of the word being typed, items) for the cursor at `offset`."""
    ctx = context_at(text, offset)
    if ctx.in_comment_or_string:
        return ctx.word_start, []
    return ctx.word_start, _complete(ctx, text)


def _complete(ctx: Context, text: str) -> list[Completion]:
    last, stmt = ctx.last, ctx.statement
    # A new declaration: at the start of a line, outside any bracket.
    if ctx.depth == 0 and (ctx.line_start or not ctx.tokens):
        return [Completion(k, "keyword", "declaration", snippet=s) for k, s in DECLARATION_SNIPPETS.items()]
    # Claim and reading qualifiers: `on ARM`, `for SCORER` / `for each scorer`.
    if last == "on" or _list_after(ctx, "on"):
        return _declared(ctx.statement_line, text, ["arm"])
    if last == "for" or _list_after(ctx, "for"):
        return _declared(ctx.statement_line, text, ["scorer"]) + ([] if last != "for" else _keywords("each"))
    if ctx.last_n(2) == ["for", "each"]:
        return _keywords("scorer")
    call = ctx.call
    if call is not None:
        return _in_call(ctx, call, text)
    block = ctx.block
    if block in ("audit", "report"):
        if last == ":" and len(ctx.tokens) >= 2 and not ctx.line_start:
            return _setting_values(block, ctx.tokens[-2].text)
        if last == "," and block == "report" and not ctx.line_start:
            return _setting_values(block, "formats")
        given = {t.text for i, t in enumerate(ctx.tokens[:-1]) if ctx.tokens[i + 1].text == ":"}
        return _settings(block, given)
    if block == "hypothesis":
        after_value = last in (")", "]") or (ctx.tokens and ctx.tokens[-1].type == "number")
        return _plugins("statistic") + _keywords("abs") + (_keywords("on", "for", "within") if after_value else [])
    return _statement(ctx, stmt, last, text)


def _in_call(ctx: Context, call, text: str) -> list[Completion]:
    kind = STATEMENT_CALL_KIND.get(ctx.statement or "")
    entry = entry_for(call.func, kind)
    if entry is None:  # `abs(`, `ratio(`, `difference(`: a statistic goes inside
        return _plugins("statistic") if ctx.statement == "hypothesis" else []
    specs = fields_of(entry.params)
    last = ctx.last
    if call.keyword is not None and last in (":", ",", "["):
        spec = specs.get(call.keyword)
        return _values_for(ctx, spec, text) if spec is not None else []
    if last in ("(", ","):
        given = set(call.named)
        out = [Completion(s.spelled, "parameter", type_text(s.annotation), f"parameter of `{entry.name}`",
                          insert=f"{s.spelled}: ")
               for s in dict.fromkeys(specs.values()) if s.spelled not in given]
        if not call.named and call.index < len(entry.positional):
            spec = next(s for s in specs.values() if s.name == entry.positional[call.index])
            out = _values_for(ctx, spec, text) + out
        return out
    return []


def _statement(ctx: Context, stmt: str | None, last: str | None, text: str) -> list[Completion]:
    """Inside a one-line declaration, outside calls."""
    if stmt == "region" and last in ("=", "&", "|", "not", "("):
        return _plugins("region") + _declared(ctx.statement_line, text, ["region"]) + _keywords("not")
    if stmt in STATEMENT_CALL_KIND and stmt != "hypothesis" and last == "=":
        return _plugins(STATEMENT_CALL_KIND[stmt])
    # what follows a declaration's call or expression: `doses`, `of`, a scope `on ARM, ARM`
    # (the arms after `on` complete above); `label:` is a key, not offered as a keyword
    decl = vocabulary.BY_KEYWORD.get(stmt or "")
    after = [w for w in decl.after_body if w != "label"] if decl is not None else []
    if after and last == ")" and ctx.depth == 0:
        return _keywords(*after)
    if stmt == "operator" and ctx.tokens and ctx.tokens[-1].type == "number" and any(t.text == "doses" for t in ctx.tokens):
        return _keywords("on")
    if stmt == "placebo":
        if last == "of":
            return _declared(ctx.statement_line, text, ["operator"])
        if ctx.last_n(2)[:1] == ["of"]:
            return _keywords("on")
    if stmt == "validate":
        if last == "validate":
            return _declared(ctx.statement_line, text, ["measure", "covariate"])
        if last == "under":
            return _declared(ctx.statement_line, text, ["operator", "placebo"])
        if last in (":", ","):
            return _checks()
        if len(ctx.tokens) == 2:
            return _keywords("under")
    if stmt == "select":
        if last == "=":
            return _keywords("best_of")
        if last == "under":
            return _declared(ctx.statement_line, text, ["operator", "placebo"])
        if last == "by":
            return _declared(ctx.statement_line, text, ["measure", "covariate"])
        if ctx.tokens and ctx.tokens[-1].type == "number":
            return _keywords("under", "by")
        if len(ctx.tokens) >= 2 and ctx.tokens[-2].text == "under":
            return _keywords("by")
    return []
