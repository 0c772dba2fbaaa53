"""Canonical formatting of an `.audit` module (`scoreaudit fmt`).

Layout: one declaration per line; settings blocks and hypotheses open with
`{` on the header line, hold one setting / claim per line indented by two
spaces, and close with `}` on a line of its own. Single spaces around `=`,
except that adjacent declarations of one kind (`scorer`, `arm`, ...) line up
their `=`; `:` after keys, `, ` between items; numbers print exactly as written.

Comments are preserved: the parser keeps them on `Module.comments` and the
formatter re-attaches each one by its source position. A comment at the end
of a line stays at the end of the printed line of the setting, claim or
declaration it followed (two spaces before `#`); a comment on a line of its
own stays on its own line, before the item that follows it, at that item's
indentation (comments after the last item go at the end). A comment written
in the middle of a declaration that spans several lines moves above it.
Runs of blank lines between items collapse to one blank line; blank lines
right after `{` are dropped. A module without source positions (e.g. after
`ast.strip_spans`) prints without its comments and blank lines.

Guarantees (tested): `fmt(fmt(x)) == fmt(x)` and
`strip_spans(parse(fmt(x))) == strip_spans(parse(x))`, and the comments come
out in the same order with the same text.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from scoreaudit.grammar import ast, vocabulary
from scoreaudit.grammar.literals import escape

INDENT = "  "


# ---------------------------------------------------------------- expressions


def fmt_value(v) -> str:
    """One value on one line, as the grammar reads it back."""
    if isinstance(v, ast.Number):
        return v.text
    if isinstance(v, ast.String):
        return escape(v.value)
    if isinstance(v, ast.Name):
        return v.name
    if isinstance(v, ast.Range):
        return f"{v.start.text}..{v.stop.text}"
    if isinstance(v, ast.Column):
        return f"column({v.name.name})"
    if isinstance(v, ast.Product):
        return f"{fmt_value(v.left)} * {fmt_value(v.right)}"
    if isinstance(v, ast.ListValue):
        inner = ", ".join(fmt_value(x) for x in v.items)
        return f"[{inner}]" if v.bracketed else inner
    if isinstance(v, ast.Call):
        return fmt_call(v)
    raise TypeError(f"not a value node: {type(v).__name__}")


def fmt_call(c: ast.Call) -> str:
    if isinstance(c, ast.Column):  # `column(x)` written where a call belongs: printed as written
        return fmt_value(c)
    args = ", ".join(
        fmt_value(a.value) if a.name is None else f"{a.name.name}: {fmt_value(a.value)}" for a in c.args
    )
    return f"{c.func.name}({args})"


_REGION_PREC = {"|": 1, "&": 2}


def fmt_region(e, parent: int = 0) -> str:
    """Region algebra with the fewest parentheses: not > & > |, left-associative."""
    if isinstance(e, ast.BinaryRegion):
        prec = _REGION_PREC[e.op]
        text = f"{fmt_region(e.left, prec)} {e.op} {fmt_region(e.right, prec + 1)}"
        return f"({text})" if prec < parent else text
    if isinstance(e, ast.Not):
        return f"not {fmt_region(e.operand, 3)}"
    if isinstance(e, ast.Name):
        return e.name
    if isinstance(e, ast.Call):
        return fmt_call(e)
    raise TypeError(f"not a region node: {type(e).__name__}")


def fmt_reading(r: ast.Reading) -> str:
    """A reading: the statistic, then its qualifiers in the order on, for, where."""
    out = fmt_call(r.call)
    out += "".join(f" on {a.name}" for a in r.arms)
    out += "".join(f" for {s.name}" for s in r.scorers)
    out += "".join(f" where {w.column.name} = {fmt_value(w.value)}" for w in r.where)
    return out


def fmt_comparison(c: ast.Comparison) -> str:
    return f"{c.kind}({fmt_reading(c.a)}, {fmt_reading(c.b)})"


def fmt_stat(s) -> str:
    if isinstance(s, ast.Abs):
        return f"abs({fmt_stat(s.call)})"
    if isinstance(s, ast.Comparison):
        return fmt_comparison(s)
    if isinstance(s, ast.Reading):
        return fmt_reading(s)
    return fmt_call(s)


def fmt_expr(e) -> str:
    """A claim's expression: `θ > t`, `θ within [a, b]`, or a bare statistic."""
    if isinstance(e, ast.Compare):
        return f"{fmt_stat(e.left)} {e.op} {e.right.text}"
    if isinstance(e, ast.Within):
        return f"{fmt_stat(e.left)} within [{e.low.text}, {e.high.text}]"
    return fmt_call(e.call)


def fmt_claim(c: ast.Claim) -> str:
    text = fmt_expr(c.expr)
    if c.arms:
        text += " on " + ", ".join(a.name for a in c.arms)
    if isinstance(c.scorers, ast.EachScorer):
        text += " for each scorer"
    elif c.scorers:
        text += " for " + ", ".join(s.name for s in c.scorers)
    return text


def fmt_doses(d) -> str:
    if isinstance(d, ast.DoseRange):
        return f"{d.start.text}..{d.stop.text} step {d.step.text}"
    return ", ".join(n.text for n in d.values)


def fmt_setting(s: ast.Setting) -> str:
    return f"{s.key.name}: {fmt_value(s.value)}"


def fmt_line_decl(d) -> str:
    """A declaration that prints on one line, then its scope `on ARM, ARM` and its `label: "..."`.

    The grammar takes scope and label in either order; this is the canonical one.
    """
    text = _fmt_line_decl(d)
    scope = getattr(d, "on", ())
    if scope:
        text += " on " + ", ".join(a.name for a in scope)
    label = getattr(d, "label", None)
    return text if label is None else f"{text} label: {escape(label.value)}"


def _fmt_line_decl(d) -> str:
    decl = vocabulary.BY_NODE.get(type(d))
    if decl is None:
        raise TypeError(f"not a declaration: {type(d).__name__}")
    body = _BODY.get(type(d), _call_body)(d)
    return f"{decl.keyword} {d.name.name} = {body}" if decl.form == "assign" else f"{decl.keyword} {body}"


def _call_body(d) -> str:
    """`KW NAME = call`: the body of most declarations (and of any new one written that way)."""
    return fmt_call(d.call)


def _operator_body(d) -> str:
    text = fmt_call(d.call)
    return text if d.doses is None else f"{text} doses {fmt_doses(d.doses)}"


def _validate_body(d) -> str:
    checks = ", ".join(f"{c.stat.name} {c.op} {c.value.text}" for c in d.checks)
    return f"{d.measure.name} under {d.operator.name}: {checks}"


def _select_body(d) -> str:
    under = f" under {d.operator.name}" if d.operator is not None else ""
    return f"best_of {d.n.text}{under} by {d.measure.name}"


#: The declarations whose body after `KW NAME =` is more than a call.
_BODY = {
    ast.RegionDecl: lambda d: fmt_region(d.expr),
    ast.OperatorDecl: _operator_body,
    ast.PlaceboDecl: lambda d: f"{fmt_call(d.call)} of {d.of.name}",
    ast.ValidateDecl: _validate_body,
    ast.SelectDecl: _select_body,
}


# ---------------------------------------------------------------- layout


@dataclass
class _Unit:
    """One printed line of code and the source range it came from."""

    indent: int
    text: str
    start: int  # source offsets; -1 when unknown
    end: int
    line: int  # source line of `start` (0 when unknown)
    end_line: int
    kind: str = "item"  # "open" (a block header), "item", "close"
    leading: list[ast.Comment] = field(default_factory=list)
    trailing: ast.Comment | None = None


def _unit(indent, text, start_span, end_span, kind="item") -> _Unit:
    return _Unit(indent, text, start_span.start, end_span.end, start_span.line, end_span.end_line, kind)


def _close_span(span):
    """The `}` that ends a block: the last character of its span."""
    from scoreaudit.diagnostics import Span

    if span.end <= 0:
        return span
    return Span(span.end_line, max(1, span.end_column - 1), span.end_line, span.end_column, span.end - 1, span.end)


def _units(module: ast.Module) -> list[_Unit]:
    out: list[_Unit] = []
    for d in module.decls:
        decl = vocabulary.BY_NODE.get(type(d))
        if decl is not None and decl.form in ("settings", "claims"):
            # `KW [NAME] ["title"] {`: the header ends at the title, else at the keyword
            name, title = getattr(d, "name", None), getattr(d, "title", None)
            header = " ".join([decl.keyword] + ([name.name] if name is not None else [])
                              + ([escape(title.value)] if title is not None else []) + ["{"])
            items = getattr(d, "settings" if decl.form == "settings" else "claims")
            if title is not None:
                header_end = title.span
            else:
                from scoreaudit.diagnostics import Span

                s, n = d.span, len(decl.keyword)
                header_end = Span(s.line, s.column, s.line, s.column + n, s.start, s.start + n)
            out.append(_unit(0, header, d.span, header_end, "open"))
            for it in items:
                text = fmt_setting(it) if isinstance(it, ast.Setting) else fmt_claim(it)
                out.append(_unit(1, text, it.span, it.span))
            close = _close_span(d.span)
            out.append(_unit(0, "}", close, close, "close"))
        else:
            out.append(_unit(0, fmt_line_decl(d), d.span, d.span))
    return out


def _attach(units: list[_Unit], comments) -> list[ast.Comment]:
    """Give each comment to a unit (trailing or leading); return the ones left for the end."""
    starts = [u.start for u in units]
    footer: list[ast.Comment] = []
    for c in comments:
        o = c.span.start
        i = bisect.bisect_left(starts, o) - 1  # last unit starting before the comment
        u = units[i] if i >= 0 else None
        if u is not None and o >= u.end and u.end_line == c.span.line and u.trailing is None:
            u.trailing = c
        elif u is not None and o < u.end:
            u.leading.append(c)
        elif i + 1 < len(units):
            units[i + 1].leading.append(c)
        else:
            footer.append(c)
    return footer


def format_module(module: ast.Module) -> str:
    """The canonical text of `module` (see the module docstring for the rules)."""
    units = _units(module)
    has_spans = module.span.end > 0 and all(u.line > 0 for u in units)
    comments = module.comments if has_spans else ()
    footer = _attach(units, comments) if has_spans else []

    occupied: set[int] = set()
    if has_spans:
        for u in units:
            occupied.update(range(u.line, u.end_line + 1))
        for c in comments:
            occupied.add(c.span.line)

    rows: list[tuple[str, str | None] | None] = []  # (code, trailing comment); None = blank line
    prev_kind = "start"

    def emit(indent: int, text: str, src_line: int, kind: str, trailing: str | None = None) -> None:
        nonlocal prev_kind
        blank_before = (
            has_spans
            and src_line > 1
            and (src_line - 1) not in occupied
            and prev_kind not in ("start", "open")
            and kind != "close"
        )
        if blank_before:
            rows.append(None)
        rows.append((INDENT * indent + text, trailing))
        prev_kind = kind

    for u in units:
        comment_indent = u.indent + 1 if u.kind == "close" else u.indent
        for c in u.leading:
            emit(comment_indent, c.text, c.span.line, "comment")
        emit(u.indent, u.text, u.line, u.kind, None if u.trailing is None else u.trailing.text)
    for c in footer:
        emit(0, c.text, c.span.line, "comment")
    return _render_rows(_align_equals(rows))


# a one-line `KW NAME = ...` declaration whose `=` lines up with its neighbours' (hypotheses open a block)
_ALIGNED = "|".join(d.keyword for d in vocabulary.DECLARATIONS if d.form == "assign" and d.aligned)
_DECL = re.compile(rf"^({_ALIGNED}) (\w+) = ")


def _align_equals(rows):
    """Adjacent declarations of one kind line up their `=` (a blank line or a comment line ends the run)."""
    out = list(rows)
    i = 0
    while i < len(out):
        m = out[i] and _DECL.match(out[i][0])
        if not m:
            i += 1
            continue
        j = i
        while j < len(out) and out[j] is not None and (mj := _DECL.match(out[j][0])) and mj.group(1) == m.group(1):
            j += 1
        width = max(len(_DECL.match(out[k][0]).group(2)) for k in range(i, j))
        for k in range(i, j):
            code, comment = out[k]
            mk = _DECL.match(code)
            out[k] = (f"{mk.group(1)} {mk.group(2).ljust(width)} = {code[mk.end():]}", comment)
        i = j
    return out


def _render_rows(rows) -> str:
    """Lines with their trailing comments aligned within each run of adjacent commented lines."""
    out: list[str] = []
    i = 0
    while i < len(rows):
        row = rows[i]
        if row is None:
            out.append("")
            i += 1
            continue
        if row[1] is None:
            out.append(row[0])
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j] is not None and rows[j][1] is not None:
            j += 1
        width = max(len(code) for code, _ in rows[i:j])
        for code, comment in rows[i:j]:
            out.append(f"{code.ljust(width)}  {comment}")
        i = j
    return "\n".join(out) + "\n" if out else ""
