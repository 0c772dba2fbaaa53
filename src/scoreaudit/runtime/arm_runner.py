"""One arm's images through their steps, batch by batch (runtime/executor.py's docstring gives the order).

`ArmRunner` runs an arm here or hands its batches to a backend (`LocalBackend`, or
runtime/ray_backend.py's `RayBackend`); the helpers say what one arm computes (`arm_plan`),
under which operators (`stage_under`) and with which memo keys (`arm_memos`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scoreaudit.compiler.coverage import is_table_only, provided
from scoreaudit.compiler.doses import dose_keys
from scoreaudit.compiler.ir import ORIGINAL, ArmIR, AuditIR
from scoreaudit.compiler.plan import ArmStage
from scoreaudit.runtime.images import Exclusion, decode_record
from scoreaudit.runtime.manifests import ManifestResult, imageless
from scoreaudit.runtime.measure_steps import MeasureSpec, empty_mask_names, measure_specs
from scoreaudit.runtime.memo import (
    Capture,
    Memos,
    arm_key as memo_arm_key,
    intact_memos,
    replay,
)
from scoreaudit.runtime.operator_steps import Img, OperatorSteps
from scoreaudit.runtime.original_steps import original_measures, original_scores
from scoreaudit.runtime.region_steps import Masks, RegionSteps
from scoreaudit.runtime.scoring import ScorerSlot
from scoreaudit.runtime.steps import RunContext

if TYPE_CHECKING:  # the table code imports pandas: only an audit with tables loads it
    from scoreaudit.runtime.precomputed.matching import TableSet


class LocalBackend:
    """`--executor local`: each batch runs here, in order."""

    name = "local"

    def batches(self, runner: ArmRunner, arm: ArmIR, manifest: ManifestResult, batches: list[list],
                images_arm: bool):
        """(batch, merge) pairs in order; `merge()` adds the batch's rows, log lines and cache entries."""
        for todo in batches:
            yield todo, (lambda todo=todo: runner._batch(arm, manifest, todo, images_arm))

    def close(self) -> None:
        pass


#: Images whose memos are read (and held decoded) at once when an arm replays its cache.
MEMO_WINDOW = 256


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

        def _for(op: str) -> tuple[list[MeasureSpec], list[ScorerSlot]]:
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
        n_ops = len(self.ops) if images_arm else 0
        todo_batches: list[list] = []
        # memos are read in bulk, a window of images at a time: one read per window keeps the replay fast,
        # and only one window's decoded memos are held at once (not the whole arm's)
        window = max(size, MEMO_WINDOW // size * size)
        found: dict = {}
        for start in range(0, len(records), size):
            if start % window == 0:
                found = intact_memos(ctx.cache, (memo_keys.get(r.image_id) for r in records[start:start + window]))
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
        from scoreaudit.runtime.precomputed.rows import manifest_scores

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
                                f"{', '.join(self.required_regions[r])} "
                                f"need{'s' if len(self.required_regions[r]) == 1 else ''} it"
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
        from scoreaudit.runtime.precomputed.rows import precomputed_measures, precomputed_scores

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
    from scoreaudit.runtime.precomputed.rows import precomputed_measures

    df = precomputed_measures(ir, arm, None, pre)
    return {(i, o, d, n): float(v)
            for i, o, d, n, v in zip(df["image_id"], df["operator"], dose_keys(df["dose"]).tolist(), df["name"],
                                     df["value"])}


def arm_plan(ir: AuditIR, work: ArmStage, slots: dict[str, ScorerSlot], specs: list[MeasureSpec],
              given: dict[str, set[tuple[str, str]]]) -> tuple[list[ScorerSlot], list[MeasureSpec]]:
    """What one arm computes: the plan's scorers and measures that no table provides there
    (none without images; a scorer that reads only tables has no slot)."""
    arm = work.arm
    if imageless(ir.arms[arm]):
        return [], []
    return ([slots[name] for name in work.scorers if name in slots and (arm, name) not in given["scores"]],
            [s for s in specs if s.name in work.measures and (arm, s.name) not in given["measures"]])


def stage_under(stage: ArmStage) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """operator (ORIGINAL included) -> (scorers, measures) the plan runs under it on the stage's arm."""
    return {o: (stage.scorers_under(o), stage.measures_under(o)) for o in (ORIGINAL, *stage.operators)}


def arm_memos(ir: AuditIR, stage: ArmStage, slots: list[ScorerSlot], specs: list[MeasureSpec], dev: str,
           pre: TableSet | None, manifest: ManifestResult, regions: RegionSteps) -> Memos:
    """The arm's memo keys (runtime/memo.py): its plan keys plus what they leave out."""
    extra = {"scorers": {sl.name: [sl.ir.call.plugin, sl.ir.call.version, sl.key_params, sl.needs_prompt]
                         for sl in slots},
             "measures": [sp.name for sp in specs], "device": dev,
             "tables": [[t.path, t.sha256, t.kind, t.arm] for t in (pre.tables if pre is not None else ())],
             "max_pixels": manifest.max_pixels, "seed": ir.settings.seed}
    return Memos(stage.arm, memo_arm_key(stage, extra), regions.columns, manifest.base_dir)


def scorer_slots(ctx: RunContext) -> dict[str, ScorerSlot]:
    """A slot per scorer that computes (a table-only scorer, `precomputed()`, never gets one: its
    factory cannot build it)."""
    return {s.name: ScorerSlot(ctx, s) for s in ctx.ir.scorers.values() if not is_table_only(ctx.ir, s.name)}
