"""`scoreaudit run`: execute the audit's plan, streaming each arm's images through its steps.

The plan (compiler/plan.py, built from the IR when the caller passes none)
is what runs: the executor walks its steps (`plan.walk`), each arm's
per-image steps (decode, regions, operators, measures, scores) handed over as
one `ArmStage`; it keys each step's work on one image by content
(scoreaudit/keys.py) and skips what the cache or a precomputed table holds.
Generate steps ran before the walk (every manifest is checked before any
work); select, statistic and report steps belong to the statistics engine
and the report.

Order per arm, one batch of `settings.batch_size` images at a time:
decode (once per image per run) → regions (cached per image) → scores and
measures of the unaltered images → per operator (placebos included): the
doses' variants, measures and scores. Each batch's new cache entries are
committed in one transaction after the batch (runtime/cache.py), so memory is
bounded by the batch and a killed run loses at most the batch in flight.

Everything the run needs from the manifests (every column the spec names) is
checked before the first image is decoded: problems are E07xx diagnostics,
raised together as one DiagnosticError. Image-level problems become
exclusions (or, under `on_error: fail`, stop the run with an E0706 diagnostic).

Precomputed inputs (spec/precomputed.md) are read and checked right after the
manifests, before any work: table errors and every missing cell a claim reads
(E0801-E0806) stop the run. What a table provides is never computed: per arm,
the scorers and measures a table gives have no step at all (a `precomputed()`
scorer never has a slot), and their rows are copied from the table after the
arm's batches; the table's per-row problems become exclusions. A
`pairs(..., images: false)` arm decodes nothing: its images rows have no
hash or size, and its scores come from manifest columns and tables.

Outputs (spec/bundle.md): spec.audit, ir.json, plan.json, run.log,
tables/{images,scores,measures,regions,exclusions}.parquet and run.json:
    {"first_score_at", "device", "started_at", "finished_at", "cache",
     "batch_size", "scorers": {name: {"plugin", "version", "weights_sha256"}},
     "counts": {"images": {arm: n}, "excluded": {arm: n}, "rows": {table: n},
                "steps": {kind: {reason: n}}},
     "precomputed": [provenance entries, runtime.precomputed.provenance.provenance]}
`first_score_at` is the UTC time the earliest score this audit read was first
computed (cache.first_score_time): the lock check compares the lock with it.

This module runs the steps in order and writes the bundle; what it reads first is
runtime/run_inputs.py, one arm's batches runtime/arm_runner.py, and `plan --cache`'s
answer runtime/cache_status.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scoreaudit.compiler.ir import AuditIR
from scoreaudit.compiler.plan import ArmStage, build_plan, walk
from scoreaudit.runtime.arm_runner import ArmRunner, LocalBackend, arm_memos, arm_plan, scorer_slots, stage_under
from scoreaudit.runtime.cache import Cache, first_score_time, utc_now
from scoreaudit.runtime.device import resolve_device
from scoreaudit.runtime.generation import is_generated, materialise
from scoreaudit.runtime.measure_steps import measure_specs
from scoreaudit.runtime.memo import (
    known_probes,
    probe_step,
)
from scoreaudit.runtime.precomputed.provenance import manifest_provenance, provenance
from scoreaudit.runtime.progress import Progress
from scoreaudit.runtime.region_steps import RegionSteps
from scoreaudit.runtime.run_inputs import (
    max_pixels,
    planned_arms,
    prepare,
    probed_scorers,
    read_stat_inputs,
    runs_somewhere,
)
from scoreaudit.runtime.runlog import RunLog
from scoreaudit.runtime.steps import RunContext
from scoreaudit.runtime.tables import Tables, write_tables
from scoreaudit.safeio import check_output_dir, read_regular, write_atomic

CACHE_RELPATH = Path(".scoreaudit") / "cache.sqlite"


@dataclass(frozen=True)
class RunSummary:
    out_dir: Path
    cache_path: Path
    device: str
    tables: dict[str, Path]
    first_score_at: str | None
    counts: dict[str, Any]
    started_at: str
    finished_at: str


def default_cache_path(spec_path: Path) -> Path:
    return Path(spec_path).resolve().parent / CACHE_RELPATH


def _write_inputs(ir: AuditIR, plan: Any, spec_path: Path, out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "spec.audit", read_regular(spec_path))
    write_atomic(out_dir / "ir.json", json.dumps(ir.model_dump(mode="json"), indent=2) + "\n")
    if hasattr(plan, "model_dump_json"):
        write_atomic(out_dir / "plan.json", plan.model_dump_json(indent=2) + "\n")


def duplicate_content(images: list[dict]) -> list[str]:
    """A warning per set of ids in one arm whose pixels are identical: they would count as independent images."""
    groups: dict[tuple[str, str], list[str]] = {}
    for r in images:
        if r.get("content_hash"):
            groups.setdefault((r["arm"], r["content_hash"]), []).append(str(r["image_id"]))
    out = []
    for (arm, _), ids in sorted(groups.items()):
        if len(ids) > 1:
            shown = ", ".join(sorted(ids)[:10]) + (f" and {len(ids) - 10} more" if len(ids) > 10 else "")
            out.append(f"arm '{arm}': {len(ids)} images have identical pixels ({shown}); they are counted as "
                       "separate images (and clusters, unless a cluster column groups them)")
    return out


def execute(ir: AuditIR, plan: Any = None, *, executor: str = "local", ray_address: str | None = None,
            **options: Any) -> RunSummary:
    """Run (or resume) an audit and write its per-image tables; see the module docstring and `_execute`.

    `executor`: "local" (this process) or "ray" (runtime/ray_backend.py; `ray_address` joins an
    existing cluster, None starts a local instance for the run). Under Ray one connection serves
    generation, the arms and the probes, and is closed however the run ends.
    """
    if executor not in ("local", "ray"):
        raise ValueError(f"unknown executor {executor!r} (local or ray)")
    conn = None
    if executor == "ray":
        from scoreaudit.runtime.ray_pipelines import RayConnection

        conn = RayConnection(ray_address)
    try:
        return _execute(ir, plan, executor=executor, ray_address=ray_address, conn=conn, **options)
    finally:
        if conn is not None:
            conn.close()


def _execute(ir: AuditIR, plan: Any = None, *, spec_path: Path, out_dir: Path, device: str = "auto",
             cache_path: Path | None = None, progress: bool = True, allow_outside: bool = False,
             executor: str = "local", ray_address: str | None = None, conn: Any = None,
             tensor_path: str = "auto") -> RunSummary:
    """Run (or resume) an audit and write its per-image tables; see the module docstring.

    `tensor_path` ("auto", "on", "off"; runtime/tensor_steps.py): keep each image on the device through
    operators, measures and model-scorer preprocessing; auto = on for a CUDA device.

    Data files must lie inside the spec's folder unless `allow_outside` (a spec never reaches
    outside its project on its own). `executor`: "local" (this process) or "ray"
    (runtime/ray_backend.py; `ray_address` joins an existing cluster, None starts a local
    instance for the run; `conn`, its RayConnection, made by `execute`); the tables are the same
    either way, and generated arms and probes run in its pipeline actors.
    """
    started = utc_now()
    spec_path = Path(spec_path)
    out_dir = Path(out_dir)
    spec_dir = spec_path.resolve().parent
    if plan is None:
        plan = build_plan(ir, spec_dir)
    cache_path = Path(cache_path) if cache_path is not None else default_cache_path(spec_path)
    root = None if allow_outside else spec_dir
    generated: dict = {}
    probed: dict = {}
    probe_rows: list = []
    spec_ir = ir  # the bundle keeps the spec's IR (generated arms as written), not the run's stand-in arms
    ir = planned_arms(ir, plan)  # an arm the plan has no step for is neither generated, read nor checked
    if any(is_generated(a) for a in ir.arms.values()):  # generated arms become images arms of their files
        gen_dev = resolve_device(device, True)
        check_output_dir(out_dir)  # before the generated images are written into it (no links followed)
        notes: list[str] = []
        with Progress(progress) as gen_prog:  # images/s and steps/s while generating
            ir, generated = materialise(ir, spec_dir=spec_dir, out_dir=out_dir, cache_path=cache_path,
                                        device=gen_dev, note=notes.append, progress=gen_prog,
                                        allow_outside=allow_outside,
                                        **({"make": conn.generator} if conn is not None else {}))
        if conn is not None:  # pipeline actors made the images: free their GPUs for the scorers
            conn.release_generators()
            notes.extend(conn.notes)
    known = known_probes(cache_path, {n: max_pixels(a) for n, a in ir.arms.items()})
    prep = prepare(ir, plan, spec_dir, root, device, trusted=set(generated), known=known)
    manifests, pre, given, dev = prep.manifests, prep.pre, prep.given, prep.device
    stat_inputs = read_stat_inputs(ir, spec_dir, root)
    from scoreaudit.runtime.tensor_steps import resolve_tensor_path

    on_device, tensor_note = resolve_tensor_path(tensor_path, dev, executor)
    check_output_dir(out_dir)
    _write_inputs(spec_ir, plan, spec_path, out_dir)
    for rel, data in stat_inputs.items():
        write_atomic(out_dir / rel, data)
    tables = Tables()
    cache = Cache(cache_path)
    log = RunLog(out_dir / "run.log")
    log.note(f"started {started}; device {dev}; cache {cache_path}; batch_size {ir.settings.batch_size}")
    log.note(tensor_note)
    for line in (notes if generated else ()):
        log.note(line)
    for d in (pre.diagnostics if pre is not None else ()):  # warnings only (errors stopped the run above): rows the audit does not use
        log.note(f"{d.severity}[{d.code}]: {d.message}" + "".join(f"; {n}" for n in d.notes))
    ctx = RunContext(ir=ir, cache=cache, log=log, tables=tables, progress=Progress(False), device=dev,
                     spec_dir=spec_dir, root=root, tensor_path=on_device,
                     policies={n: m.on_error for n, m in manifests.items()},
                     manifests={n: m.manifest for n, m in manifests.items()})
    for name, m in manifests.items():  # unchanged files are not opened again next time (manifests.load_manifest)
        if m.probed and m.probed != {k: tuple(v) for k, v in known.get(name, {}).items()}:
            files = {k: list(v) for k, v in m.probed.items()}
            cache.stage(probe_step(name, m.max_pixels, m.probed), {"max_pixels": m.max_pixels, "files": files})
    backend: Any = LocalBackend()
    try:
        slots = scorer_slots(ctx)
        specs = measure_specs(ir)
        region_steps: dict[tuple[str, ...], RegionSteps] = {}

        def arm_regions(stage: ArmStage) -> RegionSteps:
            """The regions the plan evaluates on the arm (arms with the same regions share one: a model loads once)."""
            if stage.regions not in region_steps:
                region_steps[stage.regions] = RegionSteps(ctx, stage.regions)
            return region_steps[stage.regions]

        if conn is not None:
            from scoreaudit.runtime.ray_backend import RayBackend

            backend = RayBackend(ctx, cache_path, connection=conn)

        def run_arm(stage: ArmStage) -> None:
            arm = ir.arms[stage.arm]
            arm_slots, arm_specs = arm_plan(ir, stage, slots, specs, given)
            regions = arm_regions(stage)
            runner = ArmRunner(ctx, regions, arm_slots, arm_specs, pre, arm.name, stage.operators,
                               under=stage_under(stage))
            runner.backend = backend
            runner.pixels = stage.pixels
            runner.memos = arm_memos(ir, stage, arm_slots, arm_specs, dev, pre, manifests[arm.name], regions)
            runner.run(arm, manifests[arm.name])
            if pre is not None:
                runner.add_precomputed(arm, pre)

        with Progress(progress) as prog:
            ctx.progress = prog
            def run_probe_step(step) -> None:  # optimisation probes (runtime/probe.py), with the arms' scorers
                from scoreaudit.runtime.probe import run_probe

                name = step.params["probe"]
                rows, probed[name] = run_probe(ir.probes[name], scorer_slot=slots[ir.probes[name].scorer],
                                               spec_dir=spec_dir, out_dir=out_dir,
                                               store=cache_path.with_name(cache_path.name + ".probes"),
                                               device=resolve_device(device, True), note=log.note, progress=prog,
                                               remote=backend if conn is not None else None,
                                               allow_outside=allow_outside)
                probe_rows.extend(rows)

            def generated_before(step) -> None:
                """Generate steps ran before the walk (every manifest is checked before any other work)."""
                if step.params["arm"] not in generated:
                    raise RuntimeError(f"plan step {step.id} was not materialised before the walk")

            walk(plan, {"arm": run_arm, "probe": run_probe_step, "generate": generated_before,
                        # select, statistic and report steps are the statistics engine's and the report's: they
                        # run from the bundle's plan.json after the tables are written (plan.EXECUTED_BY)
                        "select": None, "statistic": None, "report": None})
            if ir.probes:
                from scoreaudit.runtime.probe import write_probe_thumbnails

                write_probe_thumbnails(ir, probed, out_dir)
        ran = runs_somewhere(ir, given["scores"]) | set(probed_scorers(ir))
        weights = {n: s.weights_sha256() for n, s in slots.items() if n in ran}
    finally:
        try:
            cache.commit()  # staged values are complete results: keep them even when the run stops
        finally:
            cache.close()
            log.flush()
            backend.close()
    paths = write_tables(tables, out_dir / "tables")
    if ir.probes:
        from scoreaudit.bundletables import PROBE_PROMPTS_SCHEMA, PROBE_SCHEMA, rows_table, write_parquet
        from scoreaudit.runtime.probe import prompt_rows

        write_parquet(rows_table(probe_rows, schema=PROBE_SCHEMA), out_dir / "tables" / "probe.parquet")
        paths["probe"] = out_dir / "tables" / "probe.parquet"
        attrs = [r for name in probed for r in prompt_rows(ir.probes[name], spec_dir, allow_outside)]
        write_parquet(rows_table(attrs, schema=PROBE_PROMPTS_SCHEMA), out_dir / "tables" / "probe_prompts.parquet")
        paths["probe_prompts"] = out_dir / "tables" / "probe_prompts.parquet"
    first = min(filter(None, [first_score_time(cache_path, ctx.score_keys), *ctx.replayed_first]), default=None)
    finished = utc_now()
    images: dict[str, int] = {}
    for r in tables.images:
        images[r["arm"]] = images.get(r["arm"], 0) + 1
    excluded: dict[str, set] = {}
    for r in tables.exclusions:
        excluded.setdefault(r["arm"], set()).add((r["image_id"], r["row"]))
    warnings = list(ctx.warnings) + duplicate_content(tables.images)
    if warnings:
        import sys

        from scoreaudit.diagnostics import safe_text

        for w in warnings:
            log.note(f"warning: {w}")
        for w in warnings[:20]:
            print(f"warning: {safe_text(w)}", file=sys.stderr)
        if len(warnings) > 20:
            print(f"warning: ... and {len(warnings) - 20} more (run.log lists them all)", file=sys.stderr)
    corrupt = cache.corrupt  # including those a Ray task found (merged by the backend)
    if corrupt:  # reported in run.log, run.json and on the terminal; their steps were recomputed
        log.note(f"warning: {len(corrupt)} cached value(s) failed their checksum and were recomputed")
        import sys

        from scoreaudit.diagnostics import safe_text

        print(f"warning: {len(corrupt)} cached value(s) in {safe_text(str(cache_path))} were corrupt "
              "(checksum mismatch); their steps were recomputed and the values replaced", file=sys.stderr)
    counts = {"images": {a: images.get(a, 0) for a in ir.arms},
              "excluded": {a: len(excluded.get(a, ())) for a in ir.arms},
              "rows": tables.counts(), "steps": log.summary(), "corrupt_cache_values": len(corrupt),
              "forward_passes": {s: int(log.forward.get(s, 0)) for s in ir.scorers}}
    log.note(f"finished {finished}; steps {json.dumps(counts['steps'], sort_keys=True)}")
    log.close()
    run = {"first_score_at": first, "device": dev, "started_at": started, "finished_at": finished,
           "cache": str(cache_path), "batch_size": ir.settings.batch_size,
           "scorers": {s.name: {"plugin": s.call.plugin, "version": s.call.version,
                                "weights_sha256": weights.get(s.name)} for s in ir.scorers.values()},
           "counts": counts, "warnings": warnings,
           "precomputed": provenance(pre, manifest_provenance(ir, spec_dir)),
           **({"generated": generated} if generated else {}), **({"probes": probed} if probed else {})}
    from scoreaudit.runtime.reproduce import git_provenance, run_command  # what reproduces this bundle

    run["command"] = run_command(spec_path, out_dir, device=device, executor=executor, tensor_path=tensor_path,
                                 allow_outside=allow_outside)
    run["git"] = git_provenance()
    write_atomic(out_dir / "run.json", json.dumps(run, indent=2, sort_keys=True) + "\n")
    return RunSummary(out_dir=out_dir, cache_path=cache_path, device=dev, tables=paths, first_score_at=first,
                      counts=counts, started_at=started, finished_at=finished)
