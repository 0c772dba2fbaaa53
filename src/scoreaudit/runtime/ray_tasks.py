"""The worker side of a batch task: the local executor's code, with the cache read through the driver's reader actor
and every effect (table rows, run-log lines, progress, new cache entries) returned to the driver as data."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from scoreaudit.runtime.ray_cluster import import_ray, register_entries
from scoreaudit.runtime.ray_scorers import ActorScorer

_WORKER: dict[Any, Any] = {}  # per worker process: plugin instances and region evaluators, reused across tasks


class MemoryLog:
    """The RunLog interface, kept in memory and shipped back to the driver."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, Any]] = []  # ("note", text) | ("step", (step, reason))
        self.capture = None

    def note(self, text: str) -> None:
        self.lines.append(("note", text))

    def step(self, step: Any, reason: str) -> None:
        self.lines.append(("step", (step, reason)))

    def flush(self) -> None:
        pass


class CountingProgress:
    """The Progress interface, counting advances per bar for the driver's bars."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def task(self, label: str, total: int) -> str:
        return label

    def advance(self, label: str, n: int = 1) -> None:
        self.counts[label] = self.counts.get(label, 0) + n

    def log(self, message: str) -> None:
        pass


class ShardCache:
    """The Cache interface of one task: reads through the driver's reader actor, keeps new entries.

    Checksums work as in the driver's cache (runtime/cache.py's `open_rows` and `seal_value`): the
    reader sends the stored bytes, the task checks them where the value is used and records a
    damaged one in `corrupt` (the driver then recomputes-and-replaces and reports it); new values are
    sealed here and checked again by the driver before it writes them.
    """

    def __init__(self, reader: Any):
        self.reader = reader
        self.entries: dict[str, tuple[Any, str, bytes]] = {}  # key -> (StepKey, codec, sealed blob)
        self.prov: dict[str, Any] = {}  # slot -> StepKey
        self.corrupt: dict[str, str] = {}  # key -> why its stored value was rejected

    def lookup(self, keys: Iterable[str]) -> dict[str, tuple[Any, str]]:
        from scoreaudit.runtime.cache import open_rows, unseal

        out: dict[str, tuple[Any, str]] = {}
        rest = []
        for k in dict.fromkeys(keys):
            if k in self.entries:
                _step, codec, blob = self.entries[k]
                out[k] = (unseal(codec, blob), "")
            else:
                rest.append(k)
        if rest:
            out.update(open_rows(import_ray().get(self.reader.rows.remote(rest)), self.corrupt))
        return out

    def reasons(self, steps: Iterable[Any]) -> dict[str, str]:
        from scoreaudit.runtime.cache import explain

        steps = list(steps)
        prov = import_ray().get(self.reader.provenance.remote([s.slot for s in steps])) if steps else {}
        out = {}
        for s in steps:
            p = self.prov.get(s.slot)
            last = ({"plugin": p.plugin, "version": p.version, "params_hash": p.params_hash,
                     "input_hash": p.input_hash} if p is not None else prov.get(s.slot))
            out[s.slot] = explain(s, last)
        return out

    def stage(self, step: Any, value: Any) -> None:
        from scoreaudit.runtime.cache import seal_value

        if step.key not in self.entries:
            self.entries[step.key] = (step, *seal_value(value))
        self.note(step)

    def note(self, step: Any) -> None:
        self.prov[step.slot] = step

    def commit(self) -> None:  # the driver commits
        pass


def run_batch(common: dict, records: list, reader: Any, actors: dict) -> dict:
    """One batch on a worker: the local executor's `_batch`, with its effects returned as data."""
    from scoreaudit.diagnostics import DiagnosticError
    from scoreaudit.runtime.measure_steps import measure_specs
    from scoreaudit.runtime.region_steps import RegionSteps
    from scoreaudit.runtime.scoring import ScorerSlot
    from scoreaudit.runtime.steps import RunContext
    from scoreaudit.runtime.tables import Tables

    register_entries(common["entries"])
    ir = common["ir"]
    plugins = _WORKER.setdefault("plugins", {})
    # the worker's stand-ins for the driver's cache, log and progress: the same calls, their effects kept as data
    cache, log, progress = ShardCache(reader), MemoryLog(), CountingProgress()
    ctx = RunContext(ir=ir, cache=cache, log=log, tables=Tables(),  # type: ignore[arg-type]
                     progress=progress, device=common["device"], spec_dir=common["spec_dir"],  # type: ignore[arg-type]
                     policies=common["policies"], manifests=common["manifests"], _plugins=plugins)
    slots = []
    for name in common["slots"]:
        slot = ScorerSlot(ctx, ir.scorers[name])
        if name in actors:
            slot.factory = functools.partial(ActorScorer, actors[name])
        slots.append(slot)
    specs = [s for s in measure_specs(ir) if s.name in common["specs"]]
    regions = RegionSteps(ctx, common.get("regions"))
    ident = repr(sorted(regions.params.items())) + common["device"]
    regions._evaluator = _WORKER.get(("regions", ident))
    arm = ir.arms[common["arm"]]
    # the driver's runner class travels with the batch (by reference), so this module needs no
    # import of the executor that imports it
    runner = common["runner_cls"](ctx, regions, slots, specs, common["pre"], arm.name, common["operators"],
                                  under=common.get("under"))
    error = None
    try:
        runner._batch(arm, common["manifest"], records, arm.source == "images")
    except DiagnosticError as exc:  # `on_error: fail`: the driver raises it
        error = list(exc.diagnostics)
    if regions._evaluator is not None:
        _WORKER[("regions", ident)] = regions._evaluator
    t = ctx.tables
    return {"entries": list(cache.entries.values()), "prov": list(cache.prov.values()),
            "log": log.lines, "progress": progress.counts, "usable": runner.usable,
            "score_keys": sorted(ctx.score_keys), "error": error, "corrupt": ctx.cache.corrupt,
            "tables": {n: getattr(t, n) for n in ("images", "scores", "measures", "regions", "exclusions")}}


class CacheReader:
    """Reads the driver's cache file (read-only) for the tasks; pinned to the driver's node."""

    def __init__(self, path: str) -> None:
        from scoreaudit.runtime.cache import Cache

        self.cache = Cache(path, readonly=True)

    def rows(self, keys: list[str]) -> list:
        """Stored bytes with their checksums: the task checks them (ShardCache.lookup)."""
        return self.cache.rows(keys)

    def provenance(self, slots: list[str]) -> dict:
        return self.cache.provenance(slots)
