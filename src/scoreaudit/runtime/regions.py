"""Evaluating an audit's regions for one image: plugin calls and `not`, `&`, `|`.

Entry point for the executor:

    evaluator = RegionEvaluator(ir.regions)            # once per run: builds plugins, orders regions
    result = evaluator.evaluate(image, row, base_dir)  # per image (the ORIGINAL image)
    result.masks["skin"], result.coverage["skin"]      # bool H×W, share of the image's pixels

Regions are evaluated in dependency order (a region's `depends_on`, the
region names its expression refers to, and region-typed parameters such as
`skin(within: face)`), so every plugin sees the masks it needs in
`RegionContext.masks`. Equal plugin calls share one instance. A failing
region (e.g. a missing user mask) raises `ImageFailure(stage="region")`
naming the region; the executor records it as an exclusion.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scoreaudit.compiler import ir
from scoreaudit.plugins.base import RegionContext
from scoreaudit.registry import Ref, load_plugins, regions as region_registry
from scoreaudit.runtime.images import ImageFailure


@dataclass(frozen=True)
class RegionResult:
    masks: Mapping[str, np.ndarray]  # region name → bool H×W
    coverage: Mapping[str, float]  # region name → share of the image's pixels in the region


def _region_params(params_model) -> list[str]:
    """Names of a parameter model's fields annotated `Ref("region")`."""
    out = []
    for name, fld in params_model.model_fields.items():
        metas = list(fld.metadata)
        for arg in typing.get_args(fld.annotation):  # Optional[Annotated[str, Ref]]
            metas += list(getattr(arg, "__metadata__", ()))
        if any(isinstance(m, Ref) and m.kind == "region" for m in metas):
            out.append(name)
    return out


def _call_key(call: ir.PluginCall) -> str:
    return call.model_dump_json()


def _references(expr: ir.RegionExprIR, known: set[str]) -> set[str]:
    """Region names an expression needs computed first."""
    if isinstance(expr, ir.RegionRefIR):
        return {expr.name}
    if isinstance(expr, ir.RegionNotIR):
        return _references(expr.operand, known)
    if isinstance(expr, ir.RegionBinIR):
        return _references(expr.left, known) | _references(expr.right, known)
    entry = region_registry.get(expr.call.plugin)
    return {expr.call.params[p] for p in _region_params(entry.params)
            if isinstance(expr.call.params.get(p), str) and expr.call.params[p] in known}


def evaluation_order(regions: Mapping[str, ir.RegionIR]) -> list[str]:
    """Topological order (ties by declaration order); ValueError on a cycle."""
    load_plugins()
    known = set(regions)
    deps = {n: (set(r.depends_on) | _references(r.expr, known)) & known for n, r in regions.items()}
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            raise ValueError("region cycle: " + " -> ".join(chain + (name,)))
        state[name] = 1
        for dep in sorted(deps[name], key=list(regions).index):
            visit(dep, chain + (name,))
        state[name] = 2
        order.append(name)

    for name in regions:
        visit(name, ())
    return order


class RegionEvaluator:
    """Builds each region plugin once; evaluates every region of one image per call."""

    def __init__(self, regions: Mapping[str, ir.RegionIR], device: str = "cpu") -> None:
        load_plugins()
        self.regions = dict(regions)
        self.order = evaluation_order(self.regions)
        self._plugins: dict[str, Any] = {}
        for region in self.regions.values():
            self._build(region.expr, device)
        self._ops: dict[str, Callable[[Any, np.ndarray, RegionContext, dict], np.ndarray]] = {
            "call": lambda e, img, ctx, masks: self._call(e, img, ctx),
            "ref": lambda e, img, ctx, masks: masks[e.name],
            "not": lambda e, img, ctx, masks: ~self._eval(e.operand, img, ctx, masks),
            "and": lambda e, img, ctx, masks: self._eval(e.left, img, ctx, masks)
            & self._eval(e.right, img, ctx, masks),
            "or": lambda e, img, ctx, masks: self._eval(e.left, img, ctx, masks)
            | self._eval(e.right, img, ctx, masks),
        }

    def _build(self, expr: ir.RegionExprIR, device: str) -> None:
        if isinstance(expr, ir.RegionCallIR):
            key = _call_key(expr.call)
            if key not in self._plugins:
                entry = region_registry.get(expr.call.plugin)
                self._plugins[key] = entry.impl(entry.validate(expr.call.params), device=device)
        elif isinstance(expr, ir.RegionNotIR):
            self._build(expr.operand, device)
        elif isinstance(expr, ir.RegionBinIR):
            self._build(expr.left, device)
            self._build(expr.right, device)

    def _call(self, expr: ir.RegionCallIR, image: np.ndarray, ctx: RegionContext) -> np.ndarray:
        mask = np.asarray(self._plugins[_call_key(expr.call)].compute(image, ctx), dtype=bool)
        if mask.shape != image.shape[:2]:
            raise ImageFailure("region", f"region plugin {expr.call.plugin}() returned a "
                                         f"{mask.shape} mask for a {image.shape[:2]} image")
        return mask

    def _eval(self, expr, image, ctx, masks) -> np.ndarray:
        return self._ops[expr.op](expr, image, ctx, masks)

    def evaluate(self, image: np.ndarray, row: Mapping[str, Any] | None = None,
                 base_dir: str | Path = ".", root: str | Path | None = None) -> RegionResult:
        masks: dict[str, np.ndarray] = {}
        ctx = RegionContext(masks=masks, row=dict(row or {}), base_dir=str(base_dir),
                            root=str(root) if root is not None else None)
        for name in self.order:
            try:
                masks[name] = self._eval(self.regions[name].expr, image, ctx, masks)
            except ImageFailure as exc:
                raise ImageFailure("region", f"region '{name}': {exc.reason}") from None
        n = image.shape[0] * image.shape[1]
        coverage = {name: float(np.count_nonzero(m)) / n if n else 0.0 for name, m in masks.items()}
        return RegionResult(masks=dict(masks), coverage=coverage)


def evaluate_regions(regions: Mapping[str, ir.RegionIR], image: np.ndarray,
                     row: Mapping[str, Any] | None = None, base_dir: str | Path = ".") -> RegionResult:
    """One-shot convenience (builds the plugins each call; use RegionEvaluator in loops)."""
    return RegionEvaluator(regions).evaluate(image, row, base_dir)
