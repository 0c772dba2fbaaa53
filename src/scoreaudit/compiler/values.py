"""Small helpers over AST values: canonical text (for claim sentences and the
lock's hypothesis hash) and plain-Python conversion of literal values.

Canonical text is a pure function of the tree (never of the source's
whitespace or comments), so two specs that differ only in layout give the
same hypothesis text and the same lock hash.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from scoreaudit.compiler import fmt
from scoreaudit.grammar import ast


def number(n: ast.Number) -> int | float:
    """An integer literal stays an int (pydantic rejects 1.5 for an int field, not 2)."""
    if n.is_int:
        try:
            return int(n.text)  # exact, also beyond 2**53 (seeds)
        except ValueError:  # e.g. more digits than Python's int-from-text limit: the float is exact enough
            return int(n.value)
    return float(n.value)


def text(node: Any) -> str:
    """Canonical source text of a value, call or claim expression (the formatter's, on one line)."""
    if isinstance(node, (ast.Number, ast.String, ast.Name, ast.ListValue, ast.Column, ast.Product, ast.Call,
                         ast.Range)):
        return fmt.fmt_value(node)
    if isinstance(node, ast.Ident):
        return node.name
    if isinstance(node, ast.Arg):
        return text(node.value) if node.name is None else f"{node.name.name}: {text(node.value)}"
    if isinstance(node, ast.Not):
        return f"not {_region_operand(node.operand)}"
    if isinstance(node, ast.BinaryRegion):
        return f"{_region_operand(node.left)} {node.op} {_region_operand(node.right)}"
    if isinstance(node, (ast.Abs, ast.Comparison)):
        return fmt.fmt_stat(node)
    if isinstance(node, ast.Reading):
        return fmt.fmt_reading(node)
    if isinstance(node, (ast.Compare, ast.Within, ast.Bare)):
        return fmt.fmt_expr(node)
    if isinstance(node, ast.Claim):
        return fmt.fmt_claim(node)
    raise TypeError(f"no canonical text for {type(node).__name__}")


def _region_operand(node: Any) -> str:
    return f"({text(node)})" if isinstance(node, ast.BinaryRegion) else text(node)


def span_of(node: Any):
    """The span of a node, or None when the node was built without one."""
    span = getattr(node, "span", None)
    if span is None or (span.line == 0 and span.column == 0):
        return None
    return span


def string_literals(node: Any) -> tuple[tuple[str, Any], ...]:
    """(text, span) of every string literal under a syntax-tree node, in source order (for the IR's `literals`)."""
    out: list[tuple[str, Any]] = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.String):
            if span_of(n) is not None:
                out.append((n.value, n.span))
        elif isinstance(n, (tuple, list)):
            stack.extend(n)
        elif dataclasses.is_dataclass(n) and not isinstance(n, type):
            stack.extend(getattr(n, f.name) for f in dataclasses.fields(n) if f.name != "span")
    return tuple(sorted(out, key=lambda x: x[1].start))


def product_names(node: ast.Product) -> list[ast.Value]:
    """The factor terms of `race * gender * age`, left to right."""
    out: list[ast.Value] = []
    for side in (node.left, node.right):
        if isinstance(side, ast.Product):
            out.extend(product_names(side))
        else:
            out.append(side)
    return out
