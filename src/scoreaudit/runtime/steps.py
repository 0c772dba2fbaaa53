"""Shared run state and the one pattern every step follows: look up, compute what is missing, stage.

`RunContext` carries what all steps need (IR, cache, run log, tables,
progress, device, plugin instances). `Lookup` resolves a list of step keys
against the cache once, logs the cached ones, and remembers why each missing
one must run, so the caller computes exactly the missing values and `done`
stages them with their log line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scoreaudit.compiler.ir import AuditIR
from scoreaudit.keys import StepKey, canonical_json
from scoreaudit.registry import REGISTRIES, load_plugins
from scoreaudit.runtime.cache import Cache
from scoreaudit.runtime.progress import Progress
from scoreaudit.runtime.runlog import RunLog
from scoreaudit.runtime.tables import Tables


@dataclass
class RunContext:
    ir: AuditIR
    cache: Cache
    log: RunLog
    tables: Tables
    progress: Progress
    device: str
    spec_dir: Path
    root: Path | None = None  # data must lie under this folder (None: `run --allow-outside`)
    score_keys: set[str] = field(default_factory=set)
    replayed_first: list[str] = field(default_factory=list)  # first_score_at of each replayed memo (runtime/memo.py)
    policies: dict[str, str] = field(default_factory=dict)  # arm -> on_error (skip | fail)
    manifests: dict[str, str | None] = field(default_factory=dict)  # arm -> manifest display path
    warnings: list[str] = field(default_factory=list)  # said on the terminal, in run.log and run.json
    tensor_path: bool = False  # images, operators, measures and model-scorer inputs stay on `device` (tensor_steps.py)
    _plugins: dict[str, Any] = field(default_factory=dict)

    @property
    def seed(self) -> int:
        return self.ir.settings.seed

    def exclude(self, arm: str, image_id: str | None, row: int | None, stage: str, reason: str,
                path: str | None = None) -> None:
        """Record an exclusion; under `on_error: fail` stop the run with it as an E0706 diagnostic.

        `path` is the file the problem is in, when it is not the arm's manifest (a precomputed table).
        """
        self.tables.add_exclusion(arm, image_id, row, stage, reason)
        if self.policies.get(arm, self.ir.settings.on_error) == "fail":
            from scoreaudit.diagnostics import DiagnosticError
            from scoreaudit.runtime.images import Exclusion, exclusion_errors

            shown = reason if row is None or f"row {row}" in reason else f"{reason} (row {row})"
            raise DiagnosticError(exclusion_errors([Exclusion(arm, image_id, row, stage, shown)],
                                                   path=path or self.manifests.get(arm)))

    def plugin(self, kind: str, name: str, params: dict[str, Any]) -> Any:
        """One instance per (kind, plugin, params), built with the run's device."""
        ident = canonical_json([kind, name, params])
        if ident not in self._plugins:
            load_plugins()
            entry = REGISTRIES[kind].get(name)
            self._plugins[ident] = entry.impl(entry.validate(params), device=self.device)
        return self._plugins[ident]


class Lookup:
    """The cached values of some steps, and the reasons the others must run."""

    def __init__(self, ctx: RunContext, steps: Iterable[StepKey]):
        self.ctx = ctx
        steps = list(steps)
        found = ctx.cache.lookup(s.key for s in steps)
        self.values: dict[str, Any] = {k: v for k, (v, _t) in found.items()}
        self.missing: dict[str, StepKey] = {}
        self._later: list[StepKey] = []
        self._reasons = ctx.cache.reasons(s for s in steps if s.key not in found)
        for s in steps:
            if s.key in getattr(ctx.cache, "corrupt", {}):  # its stored value failed its checksum: recomputed and replaced
                self._reasons[s.slot] = "cached value corrupt"
        for s in steps:
            if s.key in found:
                ctx.log.step(s, "cached")
                ctx.cache.note(s)
            elif s.key not in self.missing:
                self.missing[s.key] = s
            else:  # a second slot asking for the same content: served by the first's computation
                self._later.append(s)

    def has(self, key: str) -> bool:
        return key in self.values

    def get(self, key: str) -> Any:
        return self.values[key]

    def done(self, step: StepKey, value: Any) -> None:
        """Stage a computed value and log why it ran."""
        if step.key in self.values:
            return
        self.values[step.key] = value
        self.ctx.cache.stage(step, value)
        self.ctx.log.step(step, self._reasons.get(step.slot, "new"))
        for other in [s for s in self._later if s.key == step.key]:
            self.ctx.log.step(other, "cached")
            self.ctx.cache.note(other)
