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
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scoreaudit.compiler.coverage import coverage_diagnostics, is_table_only, provided
from scoreaudit.compiler.doses import dose_keys
from scoreaudit.compiler.ir import ORIGINAL, ArmIR, AuditIR
from scoreaudit.compiler.plan import ArmStage, arm_work, build_plan, walk
from scoreaudit.diagnostics import DiagnosticError, has_errors
from scoreaudit.registry import REGISTRIES, load_plugins
from scoreaudit.runtime.cache import Cache, first_score_time, utc_now
from scoreaudit.runtime.columns import required_columns
from scoreaudit.runtime.device import needs_torch, resolve_device
from scoreaudit.runtime.generation import is_generated, materialise
from scoreaudit.runtime.images import Exclusion, decode_record
from scoreaudit.runtime.manifests import ManifestResult, imageless, load_manifest
from scoreaudit.runtime.memo import (Capture, Memos, arm_key as memo_arm_key, intact_memos, known_probes, probe_step,
                                      replay)
from scoreaudit.runtime.measure_steps import MeasureSpec, empty_mask_names, measure_specs
from scoreaudit.runtime.operator_steps import Img, OperatorSteps
from scoreaudit.runtime.original_steps import original_measures, original_scores
from scoreaudit.runtime.precomputed.matching import TableSet, load_tables
from scoreaudit.runtime.precomputed.provenance import manifest_provenance, provenance
from scoreaudit.runtime.precomputed.rows import manifest_scores, precomputed_measures, precomputed_scores
from scoreaudit.runtime.progress import Progress
from scoreaudit.runtime.region_steps import Masks, RegionSteps
from scoreaudit.runtime.runlog import RunLog
from scoreaudit.runtime.scoring import ScorerSlot
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


def _requires(ir: AuditIR, run_scorers: set[str] | None = None) -> list[tuple[str, ...]]:
    """Plugins' `requires`; only the scorers in `run_scorers` (None: all) will run."""
    load_plugins()
    out = []
    for s in ir.scorers.values():
        if run_scorers is not None and s.name not in run_scorers:
            continue
        out.append(tuple(REGISTRIES["scorer"].get(s.call.plugin).meta.get("requires", ()) or ()))
    for o in ir.operators.values():
        out.append(tuple(REGISTRIES["operator"].get(o.call.plugin).meta.get("requires", ()) or ()))
    for m in ir.measures.values():
        reg = "covariate" if m.role == "covariate" else "measure"
        out.append(tuple(REGISTRIES[reg].get(m.call.plugin).meta.get("requires", ()) or ()))
    return out


def load_manifests(ir: AuditIR, spec_dir: Path, root: Path | None = None,
                   trusted: set[str] = frozenset(), known: dict[str, dict] | None = None,
                   pixel_free: set[str] = frozenset(), pixel_notes: dict[str, str] | None = None
                   ) -> dict[str, ManifestResult]:
    """Read and check every arm's manifest; raise every E07xx problem at once, before any work.

    `root`: files must lie below it (E0707); None allows any path (`run --allow-outside`).
    `trusted`: arms whose files the run wrote itself (generated arms, in the output folder).
    `known`: arm -> files whose header passed in an earlier run (`memo.known_probes`).
    `pixel_free`: images arms the plan decodes nothing of (`ArmStage.pixels`): no file is looked at.
    `pixel_notes`: arm -> what in the plan needs its pixels (`pixel_note`), added to its image-file errors.
    """
    known = known or {}
    results = {name: load_manifest(arm, spec_dir, columns=required_columns(ir, arm),
                                   on_error=ir.settings.on_error, root=None if name in trusted else root,
                                   known=known.get(name), pixels=name not in pixel_free)
               for name, arm in ir.arms.items()}
    notes = pixel_notes or {}
    diags = [_noted(d, notes.get(name)) for name, r in results.items() for d in r.diagnostics]
    diags += outside_file_columns(ir, results, root)
    if has_errors(diags):
        raise DiagnosticError(diags)
    return results


def _max_pixels(arm: ArmIR) -> int:
    return int(arm.call.params.get("max_pixels") or 89_478_485)


def outside_file_columns(ir: AuditIR, manifests: dict[str, ManifestResult], root: Path | None) -> list:
    """E0707 for every manifest value a region plugin opens as a file (`mask(column:)`) outside `root`.

    Checked before any work with the same containment check as images and
    manifests, so a row such as `../x.png` or `/etc/passwd` is never opened.
    """
    from scoreaudit.diagnostics import Diagnostic
    from scoreaudit.runtime.columns import region_calls
    from scoreaudit.runtime.manifests import inside_all

    if root is None:
        return []
    load_plugins()
    cols: list[str] = []
    for region in ir.regions.values():
        for call in region_calls(region.expr):
            entry = REGISTRIES["region"].get(call.plugin)
            for param in entry.meta.get("file_columns", ()) or ():
                value = call.params.get(param)
                if isinstance(value, str) and value not in cols:
                    cols.append(value)
    out = []
    for name, m in manifests.items():
        named = [(rec, c, rec.columns.get(c).strip()) for rec in m.records for c in cols
                 if isinstance(rec.columns.get(c), str) and rec.columns.get(c).strip()]
        for (rec, c, value), ok in zip(named, inside_all(m.base_dir, [v for _, _, v in named], root)):
            if not ok:
                out.append(Diagnostic(
                    "E0707", "error", f"arm '{name}': the file named in column '{c}' of row {rec.row} "
                    f"(image '{rec.image_id}') leaves the project folder: {value}",
                    path=m.manifest, help="keep masks inside the spec's folder, or run with --allow-outside"))
    return out


def load_precomputed(ir: AuditIR, spec_dir: Path, manifests: dict[str, ManifestResult],
                     root: Path | None = None) -> TableSet:
    """Every precomputed table, matched to the manifests' ids; raise every error (E080x) before any work.

    The same checks as `scoreaudit check` (runtime.precomputed.check.check_precomputed),
    on the ids the run will use.
    """
    ids = {n: [r.image_id for r in m.records] for n, m in manifests.items()}
    pre = load_tables(ir, spec_dir, root=root).matched(ir, ids)
    diags = list(pre.diagnostics)
    if pre.ok:  # a table that cannot be read provides nothing: its holes would only repeat E0801/E0803
        diags += coverage_diagnostics(ir, ids, pre)
    errs = [d for d in diags if d.is_error]
    if errs:
        raise DiagnosticError(errs)
    return pre


def _runs_somewhere(ir: AuditIR, given: set[tuple[str, str]]) -> set[str]:
    """Scorers that are computed on at least one arm (not table-only, not table-provided everywhere)."""
    return {s for s in ir.scorers if not is_table_only(ir, s)
            and any((a, s) not in given and not imageless(arm) for a, arm in ir.arms.items())}


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


def read_stat_inputs(ir: AuditIR, spec_dir: Path, root: Path | None) -> dict[str, bytes]:
    """Bundle name → bytes of every table a statistic reads (`correlate(..., table:)`), checked like any data.

    Outside `root`: E0707; not a regular file: E0730. A missing table is left
    to the statistic, which reports it on its cells.
    """
    from scoreaudit.diagnostics import Diagnostic
    from scoreaudit.safeio import UnsafePath, inside
    from scoreaudit.stats.inputs import input_name, table_params

    out: dict[str, bytes] = {}
    diags = []
    for table in dict.fromkeys(table_params(ir.model_dump(mode="json"))):
        path = spec_dir / table
        if not inside(path, root):
            diags.append(Diagnostic("E0707", "error", f"table '{table}' leaves the project folder",
                                    path=ir.source_path,
                                    help="keep the table inside the spec's folder, or run with --allow-outside"))
            continue
        try:
            out[input_name(table)] = read_regular(path, root=root)  # the opened file itself contained
        except FileNotFoundError:
            continue
        except UnsafePath as exc:
            diags.append(Diagnostic("E0730", "error", f"table '{table}' {exc.what}", path=ir.source_path,
                                    help="name a table file; folders, pipes and devices are never read"))
        except OSError as exc:
            diags.append(Diagnostic("E0730", "error", f"cannot read table '{table}' ({exc.strerror or exc})",
                                    path=ir.source_path, help="check the file's permissions"))
    if diags:
        raise DiagnosticError(diags)
    return out


class LocalBackend:
    """`--executor local`: each batch runs here, in order."""

    name = "local"

    def batches(self, runner: "ArmRunner", arm: ArmIR, manifest: ManifestResult, batches: list[list],
                images_arm: bool):
        """(batch, merge) pairs in order; `merge()` adds the batch's rows, log lines and cache entries."""
        for todo in batches:
            yield todo, (lambda todo=todo: runner._batch(arm, manifest, todo, images_arm))

    def close(self) -> None:
        pass


class ArmRunner:
    """Runs one arm batch by batch (see the module docstring for the order).

    `slots` and `specs` are what this arm computes: scorers and measures a
    table provides on the arm are left out (their rows come from `pre`).
    """

    def __init__(self, ctx: RunContext, regions: RegionSteps, slots: list[ScorerSlot], specs: list[MeasureSpec],
                 pre: TableSet | None = None, arm: str | None = None, operators: tuple[str, ...] | None = None,
                 under: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] | None = None):
        self.ctx = ctx
        self.pre = pre
        self.table_scores = provided(pre)["scores"]  # (arm, scorer) a table provides
        self.slots = slots
        self.specs = specs
        self.all_specs = measure_specs(ctx.ir)  # every declared measure: a score item's `measures` names them all
        self.regions = regions
        table = _table_values(ctx.ir, arm, pre) if pre is not None and arm is not None else {}
        names = list(ctx.ir.operators) if operators is None else list(operators)
        self.operators = [ctx.ir.operators[o] for o in names]
        # `under`: operator -> (scorers, measures) the plan runs on its variants (ArmStage.scorers_under /
        # measures_under); None: every slot and spec under every operator
        under = under or {}

        def _for(op: str):
            if op not in under:
                return self.specs, slots
            sc, ms = under[op]
            return [sp for sp in self.specs if sp.name in ms], [sl for sl in slots if sl.name in sc]

        self.under = under
        self.pixels = True  # False: the plan decodes nothing of this arm (ArmStage.pixels)
        self.original_specs = _for(ORIGINAL)[0]
        self.ops = [OperatorSteps(ctx, op, *_for(op.name), table_values=table) for op in self.operators]
        need: dict[str, list[str]] = {}
        for op in self.operators:
            if op.region:
                need.setdefault(op.region, []).append(f"operator '{op.name}'")
        for s in self.specs:
            for r in s.regions:
                need.setdefault(r, []).append(f"{s.role} '{s.name}'")
        self.required_regions = need
        self.usable: list[str] = []  # ids of the images that made it into images.parquet
        self.memos: Memos | None = None  # set by the executor (runtime/memo.py)
        self.backend: Any = LocalBackend()

    def run(self, arm: ArmIR, manifest: ManifestResult) -> None:
        ctx = self.ctx
        for e in manifest.exclusions:
            ctx.tables.add_exclusion(e.arm, e.image_id, e.row, e.stage, e.reason)
        records = list(manifest.records)
        if imageless(arm) or not self.pixels:  # nothing the plan runs here reads pixels
            self._imageless(arm, records)
            return
        images_arm = arm.source == "images"
        n_doses = sum(len(op.doses) for op in self.operators) if images_arm else 0
        ctx.progress.task(f"{arm.name}: decode + regions", len(records))
        if images_arm and self.ops:
            ctx.progress.task(f"{arm.name}: operators + measures", len(records) * len(self.ops))
        for slot in self.slots:
            ctx.progress.task(f"{arm.name}: score {slot.name}", len(records) * (1 + n_doses))
        size = max(1, ctx.ir.settings.batch_size)
        memo_keys = {r.image_id: self.memos.step(r) for r in records} if self.memos is not None else {}
        found = intact_memos(ctx.cache, memo_keys.values())  # one bulk read
        n_ops = len(self.ops) if images_arm else 0
        todo_batches: list[list] = []
        for start in range(0, len(records), size):
            batch = records[start:start + size]
            todo = []
            for rec in batch:
                k = memo_keys.get(rec.image_id)
                if k is not None and k.key in found:
                    if replay(ctx, arm.name, found[k.key][0]) is not None:
                        self.usable.append(rec.image_id)
                else:
                    todo.append(rec)
            hits = len(batch) - len(todo)
            if hits:
                ctx.progress.advance(f"{arm.name}: decode + regions", hits)
                if n_ops:
                    ctx.progress.advance(f"{arm.name}: operators + measures", hits * n_ops)
                for slot in self.slots:
                    ctx.progress.advance(f"{arm.name}: score {slot.name}", hits * (1 + n_doses))
            if todo:
                todo_batches.append(todo)
        ctx.log.flush()
        for todo, merge in self.backend.batches(self, arm, manifest, todo_batches, images_arm):
            capture = Capture(ctx.tables, ctx.log)
            try:
                merge()
            finally:
                capture.close()
            created = {k: t for k, (_, t) in ctx.cache.lookup(capture.score_keys()).items()}
            for iid, value in capture.by_image(arm.name, [r.image_id for r in todo], created).items():
                if memo_keys.get(iid) is not None:
                    ctx.cache.stage(memo_keys[iid], value)
            ctx.cache.commit()
            ctx.log.flush()

    def _imageless(self, arm: ArmIR, records) -> None:
        """A `pairs(..., images: false)` arm: image rows without pixels, scores from manifest columns."""
        ctx = self.ctx
        for rec in records:
            ctx.tables.add_image(arm=arm.name, image_id=rec.image_id, row=rec.row, cluster=rec.cluster,
                                 content_hash=None, width=None, height=None, side=rec.side,
                                 pair_id=rec.pair_id, manifest=rec.columns)
            self.usable.append(rec.image_id)
        scores, excl = manifest_scores(ctx.ir, arm.name, records, skip=self.table_scores)
        for e in excl:
            ctx.exclude(e.arm, e.image_id, e.row, e.stage, e.reason)
        for r in scores.itertuples(index=False):
            ctx.tables.add_score(r.arm, r.image_id, r.operator, r.dose, r.scorer, r.score)

    def _batch(self, arm: ArmIR, manifest: ManifestResult, batch, images_arm: bool) -> None:
        ctx = self.ctx
        decoded = []
        for rec in batch:
            d = decode_record(rec, manifest.max_pixels)
            if isinstance(d, Exclusion):
                ctx.exclude(d.arm, d.image_id, d.row, d.stage, d.reason)
            else:
                decoded.append(d)
                ctx.warnings.extend(d.notes)
        masks = self.regions.run(decoded, manifest.base_dir) if images_arm else {}
        ctx.progress.advance(f"{arm.name}: decode + regions", len(batch))
        imgs: list[Img] = []
        for d in decoded:
            rec = d.record
            m = masks.get(rec.image_id)
            if isinstance(m, str):
                ctx.exclude(arm.name, rec.image_id, rec.row, "region", m)
                continue
            empty = empty_mask_names(m.masks, set(self.required_regions)) if m is not None else []
            if empty:
                why = "; ".join(f"region '{r}' is empty in this image, and "
                                f"{', '.join(self.required_regions[r])} need{'s' if len(self.required_regions[r]) == 1 else ''} it"
                                for r in empty)
                ctx.exclude(arm.name, rec.image_id, rec.row, "region", why)
                continue
            if m is None:  # pairs arms have no regions
                m = Masks({}, {}, {})
            imgs.append(Img(rec, d.image, d.content_hash, m, {}))
            if ctx.tensor_path:  # pixels and masks go to the device once (runtime/tensor_steps.py)
                from scoreaudit.runtime.tensor_steps import attach

                attach(ctx, imgs[-1:])
            self.usable.append(rec.image_id)
            h, w = d.image.shape[:2]
            ctx.tables.add_image(arm=arm.name, image_id=rec.image_id, row=rec.row, cluster=rec.cluster,
                                 content_hash=d.content_hash, width=w, height=h, side=rec.side,
                                 pair_id=rec.pair_id, manifest=rec.columns)
            for name, cov in sorted(m.coverage.items()):
                ctx.tables.add_region(arm.name, rec.image_id, name, cov)
        if images_arm:
            original_measures(ctx, arm, imgs, self.original_specs)
        original_scores(ctx, arm, imgs, self.slots, self.all_specs)
        if images_arm:
            for op in self.ops:
                op.run(arm, imgs)

    def add_precomputed(self, arm: ArmIR, pre: TableSet) -> None:
        """After the arm's batches: the tables' rows for its usable images, and the tables' exclusions."""
        ctx = self.ctx
        ids = list(self.usable)
        for r in precomputed_scores(ctx.ir, arm.name, ids, pre).itertuples(index=False):
            ctx.tables.add_score(r.arm, r.image_id, r.operator, r.dose, r.scorer, r.score)
        for r in precomputed_measures(ctx.ir, arm.name, ids, pre).itertuples(index=False):
            ctx.tables.add_measure(r.arm, r.image_id, r.operator, r.dose, r.name, r.role, r.value)
        files = [t.path for t in pre.tables]
        for e in pre.exclusions:
            if e.arm == arm.name:  # reasons start with the table's path (and row)
                where = next((f for f in files if e.reason.startswith(f"{f} ")), None)
                ctx.exclude(e.arm, e.image_id, e.row, e.stage, e.reason, path=where)


def _table_values(ir: AuditIR, arm: str, pre: TableSet) -> dict[tuple[str, str, float, str], float]:
    """(image_id, operator, dose key, measure) → the table's value, for one arm."""
    df = precomputed_measures(ir, arm, None, pre)
    return {(i, o, d, n): float(v)
            for i, o, d, n, v in zip(df["image_id"], df["operator"], dose_keys(df["dose"]).tolist(), df["name"], df["value"])}


def _arm_plan(ir: AuditIR, work: ArmStage, slots: dict[str, ScorerSlot], specs: list[MeasureSpec],
              given: dict[str, set[tuple[str, str]]]) -> tuple[list[ScorerSlot], list[MeasureSpec]]:
    """What one arm computes: the plan's scorers and measures that no table provides there
    (none without images; a scorer that reads only tables has no slot)."""
    arm = work.arm
    if imageless(ir.arms[arm]):
        return [], []
    return ([slots[name] for name in work.scorers if name in slots and (arm, name) not in given["scores"]],
            [s for s in specs if s.name in work.measures and (arm, s.name) not in given["measures"]])


def planned_arms(ir: AuditIR, plan: Any) -> AuditIR:
    """The IR with only the arms the plan has steps for (a declared arm nothing reads is not work)."""
    work = arm_work(plan)
    if all(n in work for n in ir.arms):
        return ir
    return ir.model_copy(update={"arms": {n: a for n, a in ir.arms.items() if n in work}})


def pixel_free_arms(plan: Any, ir: AuditIR) -> set[str]:
    """Arms the plan decodes none of: every score they need is read from data, or nothing reads them."""
    work = arm_work(plan)
    return {name for name in ir.arms if name not in work or not work[name].pixels}


def stage_under(stage: ArmStage) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """operator (ORIGINAL included) -> (scorers, measures) the plan runs under it on the stage's arm."""
    return {o: (stage.scorers_under(o), stage.measures_under(o)) for o in (ORIGINAL, *stage.operators)}


def _memos(ir: AuditIR, stage: ArmStage, slots: list[ScorerSlot], specs: list[MeasureSpec], dev: str,
           pre: TableSet, manifest: ManifestResult, regions: RegionSteps) -> Memos:
    """The arm's memo keys (runtime/memo.py): its plan keys plus what they leave out."""
    extra = {"scorers": {sl.name: [sl.ir.call.plugin, sl.ir.call.version, sl.key_params, sl.needs_prompt]
                         for sl in slots},
             "measures": [sp.name for sp in specs], "device": dev,
             "tables": [[t.path, t.sha256, t.kind, t.arm] for t in pre.tables],
             "max_pixels": manifest.max_pixels, "seed": ir.settings.seed}
    return Memos(stage.arm, memo_arm_key(stage, extra), regions.columns, manifest.base_dir)


@dataclass(frozen=True)
class Prepared:
    """What `run` and `plan --cache` both read before any work (`prepare`): the manifests, the
    precomputed tables, what those provide and the device the scorers will run on."""

    manifests: dict[str, ManifestResult]
    pre: TableSet
    given: dict[str, set[tuple[str, str]]]
    device: str


def prepare(ir: AuditIR, plan: Any, spec_dir: Path, root: Path | None, device: str, *,
            trusted: set[str] = frozenset(), known: dict[str, dict] | None = None) -> Prepared:
    """The one run set-up (shared by `run` and `plan --cache`, so the cache status is the run's):
    every manifest (E07xx) and table (E080x) checked, then the device resolved for the scorers
    that will compute somewhere (a probe's scorer included)."""
    work = arm_work(plan)
    manifests = load_manifests(ir, spec_dir, root, trusted=trusted, known=known,
                               pixel_free=pixel_free_arms(plan, ir),
                               pixel_notes={a: n for a, st in work.items() if (n := pixel_note(st))})
    pre = load_precomputed(ir, spec_dir, manifests, root)
    given = provided(pre)
    dev = resolve_device(device, needs_torch(_requires(ir, _runs_somewhere(ir, given["scores"])
                                                        | set(probed_scorers(ir)))))
    return Prepared(manifests, pre, given, dev)


def pixel_needs(stage: ArmStage) -> list[str]:
    """What in the plan decodes the arm's images: its regions, operators and measures, and the scorers
    that compute (a score read from data needs no pixels)."""
    from scoreaudit.registry import reads_data

    out = []
    for s in stage.steps:
        if s.kind in ("region", "operator") or (s.kind == "measure" and s.params.get("role") != "builtin"):
            out.append(f"{s.kind} {s.params.get('region') or s.params.get('operator') or s.params.get('name')}")
        elif s.kind == "score" and s.plugin is not None and not reads_data(s.plugin):
            out.append(f"scorer {s.params['scorer']}")
    return list(dict.fromkeys(out))


def pixel_note(stage: ArmStage) -> str | None:
    """The note an arm's image-file errors carry: what in the plan decodes its images, for which cells
    (None when nothing does)."""
    needs = pixel_needs(stage)
    if not needs:
        return None
    cells = list(dict.fromkeys(c for s in stage.steps if s.kind != "decode" for c in s.needed_by if "/" in c))
    shown = ", ".join(cells[:4]) + (f" and {len(cells) - 4} more" if len(cells) > 4 else "")
    return (f"the plan decodes this arm's images for {', '.join(needs[:6])}"
            + (f" (needed by {shown})" if cells else "")
            + "; an arm whose every score is read from data needs no image file")


def _noted(d: Any, note: str | None) -> Any:
    """An image-file error (E0704/E0705) with the arm's pixel note; any other diagnostic as it is."""
    import dataclasses

    if note is None or d.code not in ("E0704", "E0705"):
        return d
    return dataclasses.replace(d, notes=tuple(d.notes) + (note,))


def scorer_slots(ctx: RunContext) -> dict[str, ScorerSlot]:
    """A slot per scorer that computes (a table-only scorer, `precomputed()`, never gets one: its
    factory cannot build it)."""
    return {s.name: ScorerSlot(ctx, s) for s in ctx.ir.scorers.values() if not is_table_only(ctx.ir, s.name)}


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
            arm_slots, arm_specs = _arm_plan(ir, work[name], slots, specs, given)
            memos = _memos(ir, work[name], arm_slots, arm_specs, dev, pre, manifests[name],
                           RegionSteps(ctx, work[name].regions))
            keys = [memos.step(r) for r in records]
            found = intact_memos(cache, keys)
            images[name] = [sum(1 for k in keys if k is not None and k.key in found), len(records)]
    finally:
        cache.close()
    for name, (done, total) in stores["generated"].items():
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


def probed_scorers(ir: AuditIR) -> list[str]:
    """The scorers some optimisation probe differentiates (they run even when no arm needs them)."""
    return [p.scorer for p in ir.probes.values()]


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
    known = known_probes(cache_path, {n: _max_pixels(a) for n, a in ir.arms.items()})
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
    for d in pre.diagnostics:  # warnings only (errors stopped the run above): rows the audit does not use
        log.note(f"{d.severity}[{d.code}]: {d.message}" + "".join(f"; {n}" for n in d.notes))
    ctx = RunContext(ir=ir, cache=cache, log=log, tables=tables, progress=Progress(False), device=dev,
                     spec_dir=spec_dir, root=root, tensor_path=on_device,
                     policies={n: m.on_error for n, m in manifests.items()},
                     manifests={n: m.manifest for n, m in manifests.items()})
    for name, m in manifests.items():  # unchanged files are not opened again next time (images.load_manifest)
        if m.probed and m.probed != {k: tuple(v) for k, v in known.get(name, {}).items()}:
            cache.stage(probe_step(name, m.max_pixels, m.probed), {"max_pixels": m.max_pixels,
                                                                     "files": {k: list(v) for k, v in m.probed.items()}})
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
            arm_slots, arm_specs = _arm_plan(ir, stage, slots, specs, given)
            regions = arm_regions(stage)
            runner = ArmRunner(ctx, regions, arm_slots, arm_specs, pre, arm.name, stage.operators,
                               under=stage_under(stage))
            runner.backend = backend
            runner.pixels = stage.pixels
            runner.memos = _memos(ir, stage, arm_slots, arm_specs, dev, pre, manifests[arm.name], regions)
            runner.run(arm, manifests[arm.name])
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
        ran = _runs_somewhere(ir, given["scores"]) | set(probed_scorers(ir))
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
