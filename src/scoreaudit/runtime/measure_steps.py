"""Measure and covariate steps: one float per (image, operator, dose) and name.

A measure's key is its plugin call plus the variant's recipe key (which
already names the image, the operator, its region mask and the dose) and the
hashes of the region masks its own parameters name. Besides the declared
measures and covariates every (image, operator, dose) gets the builtin
`leakage` row (the auditability verdict needs it). A plugin exception is an
exclusion (stage "measure") with value NaN; an undefined value is NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scoreaudit.compiler.ir import AuditIR
from scoreaudit.keys import StepKey, step_key
from scoreaudit.plugins.base import MeasureContext
from scoreaudit.registry import REGISTRIES, load_plugins
from scoreaudit.runtime.columns import ref_fields
from scoreaudit.runtime.steps import RunContext

BUILTIN_LEAKAGE = "leakage"


@dataclass(frozen=True)
class MeasureSpec:
    """One measure/covariate row of the measures table, with what its key needs."""

    name: str
    role: str  # measure | covariate | builtin
    registry: str  # measure | covariate
    plugin: str
    version: str
    params: Mapping[str, Any]
    regions: tuple[str, ...]  # region names its parameters refer to

    def key(self, variant_key: str, region_hashes: Mapping[str, str], slot: str) -> StepKey:
        inputs = {"variant": variant_key, "masks": {r: region_hashes.get(r) for r in self.regions}}
        return step_key("measure", self.plugin, self.version, dict(self.params), inputs, slot)


def measure_specs(ir: AuditIR) -> list[MeasureSpec]:
    """Declared measures and covariates (declaration order), then the builtin leakage."""
    load_plugins()
    specs = []
    for m in ir.measures.values():
        reg = "covariate" if m.role == "covariate" else "measure"
        entry = REGISTRIES[reg].get(m.call.plugin)
        names = [m.call.params[f] for f in ref_fields(entry.params, ("region",))
                 if isinstance(m.call.params.get(f), str)]
        if m.region:
            names.append(m.region)
        specs.append(MeasureSpec(m.name, m.role, reg, m.call.plugin, m.call.version, dict(m.call.params),
                                 tuple(dict.fromkeys(names))))
    leak = REGISTRIES["covariate"].get(BUILTIN_LEAKAGE)
    specs.append(MeasureSpec(BUILTIN_LEAKAGE, "builtin", "covariate", leak.name, leak.version,
                             leak.params().model_dump(mode="json"), ()))
    return specs


def compute_measure(ctx: RunContext, spec: MeasureSpec, mctx: MeasureContext) -> Any:
    """The value to cache: a float (NaN allowed), or {"failure": reason} when the plugin raised."""
    plugin = ctx.plugin(spec.registry, spec.plugin, dict(spec.params))
    try:
        value = float(plugin.compute(mctx))
    except Exception as exc:  # noqa: BLE001 - a plugin bug or unusable input: excluded, never a crash
        return {"failure": f"{spec.role} '{spec.name}' failed: {type(exc).__name__}: {exc}"}
    return value if math.isfinite(value) or math.isnan(value) else float("nan")


def as_float(value: Any) -> float:
    return float("nan") if isinstance(value, dict) else float(value)


def empty_mask_names(masks: Mapping[str, np.ndarray], required: set[str]) -> list[str]:
    return sorted(r for r in required if r in masks and not masks[r].any())
