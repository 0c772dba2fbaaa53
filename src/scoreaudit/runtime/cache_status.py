"""`scoreaudit plan --cache`: what `run` would take from the cache and the generated-image and probe stores,
read without decoding or writing anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scoreaudit.compiler.ir import AuditIR
from scoreaudit.compiler.plan import arm_work
from scoreaudit.runtime.arm_runner import arm_memos, arm_plan, scorer_slots
from scoreaudit.runtime.cache import Cache
from scoreaudit.runtime.device import resolve_device
from scoreaudit.runtime.executor import default_cache_path
from scoreaudit.runtime.generation import is_generated
from scoreaudit.runtime.manifests import imageless
from scoreaudit.runtime.measure_steps import measure_specs
from scoreaudit.runtime.memo import (
    intact_memos,
)
from scoreaudit.runtime.progress import Progress
from scoreaudit.runtime.region_steps import RegionSteps
from scoreaudit.runtime.run_inputs import planned_arms, prepare
from scoreaudit.runtime.scoring import ScorerSlot
from scoreaudit.runtime.steps import RunContext
from scoreaudit.runtime.tables import Tables


def cache_status(ir: AuditIR, plan: Any, *, spec_path: Path, cache_path: Path | None = None,
                 device: str = "auto", allow_outside: bool = False) -> dict[str, Any] | None:
    """What `run` would take from the cache (`scoreaudit plan --cache`); None when there is no cache.

    {"images": {arm: [cached, total]}, "steps": {step id: "cached" | "to run"}}: an image is
    cached when its memo is (every one of its steps is); a per-image plan step is cached when
    all the arm's images are. Statistics and the report always run (they read the tables).
    Generated arms and probes add {"generated": {arm: [in the store, total]}, "probes": {probe:
    [finished, total]}} from their stores (`generation.store_status`, `probe.store_status`); their
    `generate/` and `probe/` steps are cached when everything is in the store (a total of None: the
    pipeline or prompts are missing here). A generated arm's per-image steps are "to run": its
    images are copied into each run's output, and memos follow those copies.
    Reads the manifests and the image files' bytes; decodes nothing, writes nothing.
    """
    spec_path = Path(spec_path)
    spec_dir = spec_path.resolve().parent
    cache_path = Path(cache_path) if cache_path is not None else default_cache_path(spec_path)
    if not cache_path.is_file():
        return None
    root = None if allow_outside else spec_dir
    stores = _store_status(ir, spec_dir, cache_path, device, allow_outside)  # generated images and probe trajectories
    ir = planned_arms(ir, plan)
    ir = ir.model_copy(update={"arms": {n: a for n, a in ir.arms.items() if not is_generated(a)}})
    prep = prepare(ir, plan, spec_dir, root, device)
    manifests, pre, given, dev = prep.manifests, prep.pre, prep.given, prep.device
    cache = Cache(cache_path, readonly=True)
    try:
        ctx = RunContext(ir=ir, cache=cache, log=None, tables=Tables(), progress=Progress(False), device=dev,
                         spec_dir=spec_dir)
        slots = scorer_slots(ctx)
        specs = measure_specs(ir)
        work = arm_work(plan)
        images: dict[str, list[int]] = {}
        for name, arm in ir.arms.items():
            records = manifests[name].records
            if imageless(arm) or name not in work or not work[name].pixels:
                images[name] = [len(records), len(records)]
                continue
            arm_slots, arm_specs = arm_plan(ir, work[name], slots, specs, given)
            memos = arm_memos(ir, work[name], arm_slots, arm_specs, dev, pre, manifests[name],
                           RegionSteps(ctx, work[name].regions))
            keys = [memos.step(r) for r in records]
            found = intact_memos(cache, keys)
            images[name] = [sum(1 for k in keys if k is not None and k.key in found), len(records)]
    finally:
        cache.close()
    for name, (_, total) in stores["generated"].items():
        images[name] = [0, total]
    steps = {}
    for s in plan.steps:
        done = s.arm is not None and s.kind in ("decode", "region", "operator", "measure", "score") and \
            images.get(s.arm, [0, 1])[0] == images.get(s.arm, [0, 1])[1]
        if s.kind in ("generate", "probe"):
            found = stores["generated" if s.kind == "generate" else "probes"].get(s.arm or s.params.get("probe"))
            done = found is not None and found[1] is not None and found[0] == found[1]
        steps[s.id] = "cached" if done else "to run"
    extra = {k: v for k, v in stores.items() if v}
    return {"images": images, "steps": steps, **extra}


def _store_status(ir: AuditIR, spec_dir: Path, cache_path: Path, device: str, allow_outside: bool = False
                  ) -> dict[str, dict]:
    """{"generated": {arm: [in store, total]}, "probes": {probe: [finished, total]}} for `cache_status`."""
    out: dict[str, dict] = {"generated": {}, "probes": {}}
    if not ir.probes and not any(is_generated(a) for a in ir.arms.values()):
        return out
    from scoreaudit.runtime import generation, probe as probes

    dev = resolve_device(device, True)  # as `run` resolves it for generation and probes (dtype auto)
    for name, arm in ir.arms.items():
        if is_generated(arm):
            found = generation.store_status(arm, spec_dir=spec_dir, device=dev,
                                            store=cache_path.with_name(cache_path.name + ".generated"),
                                            allow_outside=allow_outside)
            out["generated"][name] = list(found) if found is not None else [0, None]
    ctx = RunContext(ir=ir, cache=None, log=None, tables=Tables(), progress=Progress(False), device=dev,
                     spec_dir=spec_dir)
    for name, p in ir.probes.items():
        found = probes.store_status(p, scorer_slot=ScorerSlot(ctx, ir.scorers[p.scorer]), spec_dir=spec_dir,
                                    device=dev, store=cache_path.with_name(cache_path.name + ".probes"),
                                    allow_outside=allow_outside)
        out["probes"][name] = list(found) if found is not None else [0, None]
    return out
