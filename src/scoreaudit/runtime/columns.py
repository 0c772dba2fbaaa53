"""Which manifest columns each arm must have, found from the IR before anything runs.

A plugin parameter annotated `Ref("column")` (or `Ref("stratum")`, which may be
any manifest column) names a manifest column; so does a scorer's
`prompt: column(name)`. The executor hands these to the manifest loader, which
reports missing ones as E0702 diagnostics before any image is decoded or scored.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Iterator
from typing import Any

from scoreaudit.compiler.ir import ORIGINAL, ArmIR, AuditIR, StatCallIR, readings_of
from scoreaudit.registry import REGISTRIES, Ref, load_plugins

COLUMN_KINDS = ("column", "stratum")
# Scorer parameters that only make sense on one kind of arm (precomputed scores:
# `column:` for images arms, `preferred:`/`other:` for pairs arms).
PAIR_ONLY = frozenset({"preferred", "other"})
IMAGES_ONLY = frozenset({"column"})


def _refs_in(annotation: Any) -> Iterator[Ref]:
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, Ref):
            yield meta
    for arg in typing.get_args(annotation):
        yield from _refs_in(arg)


def ref_fields(params_model: type, kinds: tuple[str, ...]) -> dict[str, str]:
    """field name (and alias) → Ref kind, for every field of a parameter model annotated Ref(kind in kinds)."""
    out: dict[str, str] = {}
    for name, info in getattr(params_model, "model_fields", {}).items():
        refs = [m for m in info.metadata if isinstance(m, Ref)] + list(_refs_in(info.annotation))
        for ref in refs:
            if ref.kind in kinds:
                out[name] = ref.kind
                if info.alias:
                    out[info.alias] = ref.kind
    return out


def column_fields(params_model: type) -> dict[str, str]:
    """Fields that name a manifest column."""
    return ref_fields(params_model, COLUMN_KINDS)


def _values(v: Any) -> Iterator[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _values(x)


def columns_of_call(kind: str, plugin: str, params: dict[str, Any], skip: Iterable[str] = ()) -> list[str]:
    """Manifest columns named by one plugin call's parameters."""
    load_plugins()
    reg = REGISTRIES[kind]
    if plugin not in reg:
        return []
    fields = column_fields(reg.get(plugin).params)
    skip = set(skip)
    out: list[str] = []
    for name in fields:
        if name in skip or name not in params:
            continue
        out.extend(_values(params[name]))
    return out


def _stat_columns(call: StatCallIR) -> list[str]:
    out = columns_of_call("statistic", call.name, dict(call.params))
    for v in call.params.values():
        if isinstance(v, dict) and "name" in v and "params" in v:  # a nested statistic, dumped
            out += _stat_columns(StatCallIR.model_validate(v))
    if call.inner is not None:
        out += _stat_columns(call.inner)
    return out


def prompt_column(param: Any) -> str | None:
    """The manifest column of `prompt: column(name)` (None for a literal prompt or none)."""
    if isinstance(param, dict) and set(param) == {"column"}:
        return str(param["column"])
    return None


def required_columns(ir: AuditIR, arm: ArmIR) -> list[str]:
    """Columns (beyond id/path/cluster/strata/factors/prompt, which the loader knows) `arm` needs."""
    from scoreaudit.compiler.demand import demand_of

    need = demand_of(ir)  # only what the plan runs on this arm needs its columns
    cols: list[str] = []
    pairs = arm.source == "pairs"
    for scorer in (s for s in ir.scorers.values() if need.has(("score", arm.name, s.name, ORIGINAL))):
        params = dict(scorer.call.params)
        pcol = prompt_column(params.get("prompt"))
        if pcol and not arm.call.params.get("prompt"):
            cols.append(pcol)  # the arm's own prompt column wins over the scorer's
        cols += columns_of_call("scorer", scorer.call.plugin, params,
                                skip=IMAGES_ONLY if pairs else PAIR_ONLY)
    if not pairs:
        used = {w[3] for w in need.of("measure", arm.name)}
        for region in (r for r in ir.regions.values() if need.has(("region", arm.name, r.name))):
            cols += [c for call in region_calls(region.expr) for c in
                     columns_of_call("region", call.plugin, dict(call.params))]
        for m in (m for m in ir.measures.values() if m.name in used):
            cols += columns_of_call("covariate" if m.role == "covariate" else "measure",
                                    m.call.plugin, dict(m.call.params))
        for op in (o for o in ir.operators.values() if need.has(("operator", arm.name, o.name))):
            cols += columns_of_call("operator", op.call.plugin, dict(op.call.params))
    for cell in ir.cells():
        readings = readings_of(cell.statistic)
        if readings:  # a comparison: each reading's statistic and `where` columns, on its own arm
            for r in readings:
                if r.arm == arm.name:
                    cols += _stat_columns(r.statistic) + [c for c, _ in r.where]
        elif cell.arm == arm.name or arm.name in cell.arms:
            cols += _stat_columns(cell.statistic)
    return list(dict.fromkeys(cols))


def region_calls(expr) -> Iterator[Any]:
    op = expr.op
    if op == "call":
        yield expr.call
    elif op == "not":
        yield from region_calls(expr.operand)
    elif op in ("and", "or"):
        yield from region_calls(expr.left)
        yield from region_calls(expr.right)
