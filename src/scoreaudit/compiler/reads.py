"""What a statistic call reads from the runtime's tables, from its registry entry's `reads`.

One interpreter of the `reads` tokens declared with every statistic
(scoreaudit.plugins.statistics): coverage checks of precomputed tables and the
plan's step dependencies both use it, so no per-statistic table exists
outside the registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scoreaudit import registry
from scoreaudit.compiler.ir import ORIGINAL, AuditIR, StatCallIR


@dataclass(frozen=True)
class Reads:
    """Operators whose every dose a statistic reads (ORIGINAL: the unaltered image), measures, selections."""

    operators: tuple[str, ...] = ()
    measures: tuple[tuple[str, str], ...] = ()  # (operator, measure or covariate name)
    selections: tuple[str, ...] = ()

    def __add__(self, other: Reads) -> Reads:
        return Reads(tuple(dict.fromkeys(self.operators + other.operators)),
                     tuple(dict.fromkeys(self.measures + other.measures)),
                     tuple(dict.fromkeys(self.selections + other.selections)))


def _names(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    return (v,) if isinstance(v, str) else tuple(v)


def _token(token: str, call: StatCallIR, ir: AuditIR) -> Reads:
    p = call.params
    if token == "original":
        return Reads((ORIGINAL,))
    if token in ("operator", "placebo"):
        v = p.get(token)
        return Reads((v,)) if isinstance(v, str) else Reads()
    if token == "measures":
        op = p.get("operator")
        names = _names(p.get("measure")) + _names(p.get("controlling")) + _names(p.get("covariate"))
        return Reads((), tuple((op, n) for n in dict.fromkeys(names))) if isinstance(op, str) else Reads()
    if token == "selection":
        name = p.get("selection")
        sel = ir.selections.get(name) if isinstance(name, str) else None
        if sel is None:
            return Reads()
        op = sel.operator or ORIGINAL
        return Reads((op,), ((op, sel.measure),), (name,))
    if token == "inner":
        return reads(call.inner, ir) if call.inner is not None else Reads((ORIGINAL,))
    if token == "via":  # a statistic given as the `via:` argument (decompose)
        via = p.get("via")
        return reads(StatCallIR.model_validate(via), ir) if isinstance(via, dict) else Reads()
    raise ValueError(f"unknown reads token {token!r}")


def reads(call: StatCallIR, ir: AuditIR) -> Reads:
    """What one statistic call reads (its entry's `reads`; the original image when it declares none)."""
    registry.load_plugins()
    tokens = registry.statistics.get(call.name).meta.get("reads", ()) if call.name in registry.statistics else ()
    out = Reads()
    for t in tokens:
        out = out + _token(t, call, ir)
    return out if out.operators else out + Reads((ORIGINAL,))
