"""One operator over one batch of images: variants, measures, scores.

Per image the operator sweeps only the doses that still need work, in one
call. Three kinds of cached steps:
- `variant`: keyed by the recipe (operator call, image hash, operator-region
  mask hash, dose, audit seed); its value is the variant's content hash and
  the operator's `info`, never the pixels;
- `measure`: keyed by the variant recipe (measure_steps.py);
- `score`: keyed by the variant's content hash (scoring.py), so variants
  that equal an image already scored cost nothing.
On the tensor path (runtime/tensor_steps.py; `Img.dev` set) the sweep runs
on the device and yields `DeviceVariant`s: the same steps and keys, the
pixels downloaded once for the content hash, measures computed on the device
and model scorers handed the tensors.
The identity dose is never swept for pixels or scored: its variant is the
original image and its score row copies the original's score. It is swept
only when its measures are missing (they need the operator's `info`).

Scorers and measures a precomputed table provides on the arm are not in
`slots`/`specs` (the executor leaves them out); a score item's `measures`
still holds every declared measure's change, a table-provided one read from
`table_values`, so a scorer that reads them (planted) sees the same item, and
the same cache key, either way. With no scorer and no measure left, the
operator does no work on the arm.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scoreaudit.compiler.doses import dose_key
from scoreaudit.compiler.ir import ArmIR, OperatorIR
from scoreaudit.keys import StepKey, hash_array, step_key
from scoreaudit.plugins.base import MeasureContext
from scoreaudit.runtime.images import ImageRecord
from scoreaudit.runtime.measure_steps import MeasureSpec, as_float, compute_measure
from scoreaudit.runtime.region_steps import Masks
from scoreaudit.runtime.scoring import ScoreRequest, ScorerSlot, make_item
from scoreaudit.runtime.steps import Lookup, RunContext


@dataclass
class Img:
    """A usable image of the batch in flight."""

    record: ImageRecord
    image: np.ndarray
    content_hash: str
    masks: Masks
    original_scores: dict[str, Any]  # scorer name -> float or failure reason
    dev: Any = None  # the tensor path's DeviceImage (pixels and masks on the run's device), else None


class OperatorFailure(Exception):
    pass


class OperatorSteps:
    def __init__(self, ctx: RunContext, op: OperatorIR, specs: list[MeasureSpec], slots: list[ScorerSlot],
                 table_values: Mapping[tuple[str, str, float, str], float] | None = None):
        self.ctx = ctx
        self.op = op
        self.specs = specs
        self.declared = [s for s in specs if s.role != "builtin"]
        self.slots = slots
        # every declared measure/covariate (declaration order); those not in `specs` come from the table
        self.measure_names = [m.name for m in ctx.ir.measures.values()]
        self.table_values = dict(table_values or {})
        # the identity dose is always swept and written, even if a hand-built IR left it out
        self.doses = sorted({float(d) for d in op.doses} | {float(op.identity)})
        self.tmax = max((abs(d - op.identity) for d in self.doses), default=0.0) or 1.0
        self.placebo = op.placebo_of is not None

    # ---------------------------------------------------------------- keys

    def _variant_key(self, arm: str, img: Img, dose: float) -> StepKey:
        op = self.op
        mask_hash = img.masks.hashes.get(op.region) if op.region else None
        inputs = {"image": img.content_hash, "mask": mask_hash, "dose": float(dose), "seed": self.ctx.seed}
        return step_key("variant", op.call.plugin, op.call.version, dict(op.call.params), inputs,
                        slot=f"variant {arm}/{img.record.image_id} {op.name}@{float(dose)!r}")

    def _measure_key(self, arm: str, img: Img, dose: float, vkey: StepKey, spec: MeasureSpec) -> StepKey:
        slot = f"measure {spec.role}:{spec.name} {arm}/{img.record.image_id} {self.op.name}@{float(dose)!r}"
        return spec.key(vkey.key, img.masks.hashes, slot)

    # ---------------------------------------------------------------- sweeping

    def _sweep(self, img: Img, doses: list[float]) -> list[Any]:
        """One output per dose: OperatorOutput (reference path) or DeviceVariant (tensor path, img.dev set)."""
        op = self.op
        try:
            if img.dev is not None:
                from scoreaudit.runtime import tensor_steps

                outs = tensor_steps.sweep(self.ctx, op, img, list(doses))
            else:
                plugin = self.ctx.plugin("operator", op.call.plugin, dict(op.call.params))
                mask = img.masks.masks.get(op.region) if op.region else None
                outs = list(plugin.sweep(img.image, mask, list(doses), self.ctx.seed))
        except Exception as exc:  # noqa: BLE001 - one image the operator cannot handle: excluded, not a crash
            raise OperatorFailure(f"operator '{op.name}' failed: {type(exc).__name__}: {exc}") from None
        if len(outs) != len(doses):
            raise OperatorFailure(f"operator '{op.name}' returned {len(outs)} variants for {len(doses)} doses")
        for out in outs:
            if img.dev is not None:
                from scoreaudit.runtime.tensor_steps import check_output

                ok = check_output(out)
            else:
                arr = out.image
                ok = isinstance(arr, np.ndarray) and arr.dtype == np.uint8 and arr.ndim == 3 and arr.shape[2] == 3
            if not ok:
                raise OperatorFailure(f"operator '{op.name}' returned a variant that is not uint8 H×W×3")
        return outs

    @staticmethod
    def _info(out: Any) -> dict[str, float]:
        if hasattr(out, "float_info"):  # a DeviceVariant: its 0-d device tensors come back together
            return out.float_info()
        return {k: float(v) for k, v in dict(out.info).items()}

    def _measures(self, img: Img, jobs: list[tuple]) -> list[Any]:
        """Cache values of (step, spec, output, dose) jobs of one image (an identity dose's variant is the original).

        On the tensor path (img.dev) they are computed on the device and come back in one transfer."""
        op, ident = self.op, self.op.identity
        if img.dev is not None:
            from scoreaudit.runtime import tensor_steps

            return tensor_steps.compute_many(self.ctx, [(s, img, out, op.region, d, ident) for _, s, out, d in jobs])
        mask = img.masks.masks.get(op.region) if op.region else None
        values = []
        for _, s, out, d in jobs:
            mctx = MeasureContext(original=img.image, variant=img.image if d == ident else out.image,
                                  masks=img.masks.masks, operator_mask=mask, info=dict(out.info), dose=d,
                                  identity=ident)
            values.append(compute_measure(self.ctx, s, mctx))
        return values

    # ---------------------------------------------------------------- the batch

    def run(self, arm: ArmIR, imgs: list[Img]) -> None:
        ctx, op, ident = self.ctx, self.op, self.op.identity
        doses = self.doses
        if not self.slots and not self.specs:  # tables provide everything on this arm
            ctx.progress.advance(f"{arm.name}: operators + measures", len(imgs))
            return
        vsteps = {(i, d): self._variant_key(arm.name, img, d) for i, img in enumerate(imgs) for d in doses}
        vlook = Lookup(ctx, (vsteps[i, d] for i in range(len(imgs)) for d in doses if d != ident))
        msteps = {(i, d, s.role, s.name): self._measure_key(arm.name, img, d, vsteps[i, d], s)
                  for i, img in enumerate(imgs) for d in doses for s in self.specs}
        mlook = Lookup(ctx, msteps.values())

        pixels: dict[tuple[int, float], Any] = {}  # OperatorOutput or DeviceVariant
        failed: set[int] = set()
        for i, img in enumerate(imgs):
            need = [d for d in doses
                    if (self.slots and d != ident and not vlook.has(vsteps[i, d].key))
                    or any(not mlook.has(msteps[i, d, s.role, s.name].key) for s in self.specs)]
            if not need:
                continue
            try:
                outs = self._sweep(img, need)
            except OperatorFailure as exc:
                failed.add(i)
                ctx.exclude(arm.name, img.record.image_id, img.record.row, "operator", str(exc))
                continue
            jobs = []
            for d, out in zip(need, outs):
                if d != ident:
                    pixels[i, d] = out
                    if not vlook.has(vsteps[i, d].key):  # its pixels come back once, for the content hash
                        vlook.done(vsteps[i, d], {"content_hash": hash_array(out.image), "info": self._info(out)})
                jobs += [(msteps[i, d, s.role, s.name], s, out, d) for s in self.specs
                         if not mlook.has(msteps[i, d, s.role, s.name].key)]
            for (step, _, _, _), value in zip(jobs, self._measures(img, jobs)):
                mlook.done(step, value)

        live = [i for i in range(len(imgs)) if i not in failed]
        values = {k: mlook.get(step.key) for k, step in msteps.items() if k[0] in live}
        for (i, d, role, name), v in sorted(values.items(), key=lambda kv: kv[0]):
            img = imgs[i]
            if isinstance(v, dict):
                ctx.exclude(arm.name, img.record.image_id, img.record.row, "measure",
                            f"{v['failure']} ({op.name}@{d:g})")
            ctx.tables.add_measure(arm.name, img.record.image_id, op.name, d, name, role, as_float(v))

        if not self.slots:  # measures only: no variant needs scoring (nor its recorded hash)
            ctx.progress.advance(f"{arm.name}: operators + measures", len(imgs))
            return
        requests = self._score_requests(arm, imgs, live, vsteps, vlook, values, pixels)
        recorded = {(i, float(d)): vlook.get(vsteps[i, float(d)].key)["content_hash"]
                    for i in live for d in self.doses if d != ident}
        lost = self._sweep_for_scores(arm, imgs, requests, pixels, recorded)
        for slot in self.slots:
            reqs = [(i, d, r) for i, d, r in requests[slot.name] if i not in lost]
            results = slot.score([r for _, _, r in reqs])
            for (i, d, _r), res in zip(reqs, results):
                self._score_row(arm, imgs[i], slot, d, res)
            for i, d, _ in requests[slot.name]:
                if i in lost:
                    ctx.tables.add_score(arm.name, imgs[i].record.image_id, op.name, d, slot.name, float("nan"))
            for i in live:
                self._score_row(arm, imgs[i], slot, ident, imgs[i].original_scores[slot.name])
            ctx.progress.advance(f"{arm.name}: score {slot.name}", len(reqs) + len(live))
        ctx.progress.advance(f"{arm.name}: operators + measures", len(imgs))

    def _score_requests(self, arm, imgs, live, vsteps, vlook, values, pixels):
        op, ident = self.op, self.op.identity
        out: dict[str, list[tuple[int, float, ScoreRequest]]] = {s.name: [] for s in self.slots}
        for i in live:
            img = imgs[i]
            for d in self.doses:
                if d == ident:
                    continue
                deltas = self._deltas(img, i, d, values)
                item = make_item(img.record, op.name, d, (d - ident) / self.tmax, self.placebo, deltas)
                chash = vlook.get(vsteps[i, d].key)["content_hash"]

                def getter(i=i, d=d):
                    return pixels[i, d].image

                tensor = (lambda i=i, d=d: pixels[i, d].tensor) if img.dev is not None else None
                for slot in self.slots:
                    req = slot.request(img.record, chash, slot.prompt_for(arm, img.record), item, getter,
                                       tensor=tensor)
                    out[slot.name].append((i, d, req))
        return out

    def _deltas(self, img: Img, i: int, d: float, values) -> dict[str, float]:
        """Each declared measure's change from the identity dose (computed, or from the table)."""
        ident = self.op.identity
        computed = {s.name: s for s in self.declared}
        out = {}
        for name in self.measure_names:
            s = computed.get(name)
            if s is not None:
                out[name] = as_float(values[i, d, s.role, name]) - as_float(values[i, ident, s.role, name])
            else:
                out[name] = self._table(img, d, name) - self._table(img, ident, name)
        return out

    def _table(self, img: Img, dose: float, name: str) -> float:
        return self.table_values.get((img.record.image_id, self.op.name, dose_key(dose), name), float("nan"))

    def _sweep_for_scores(self, arm, imgs, requests, pixels, recorded) -> set[int]:
        """Re-create the pixels of variants whose scores are missing (their recipe was cached).

        Returns the images the operator failed on this time (excluded, their scores NaN).
        """
        keys = [r.step.key for reqs in requests.values() for _, _, r in reqs]
        found = self.ctx.cache.lookup(keys)
        need: dict[int, set[float]] = {}
        for reqs in requests.values():
            for i, d, r in reqs:
                if r.step.key not in found and (i, d) not in pixels:
                    need.setdefault(i, set()).add(d)
        lost: set[int] = set()
        for i, ds in sorted(need.items()):
            img = imgs[i]
            doses = sorted(ds)
            try:
                outs = self._sweep(img, doses)
            except OperatorFailure as exc:
                lost.add(i)
                self.ctx.exclude(arm.name, img.record.image_id, img.record.row, "operator", str(exc))
                continue
            for d, o in zip(doses, outs):
                pixels[i, d] = o
                if hash_array(o.image) != recorded[i, d]:  # scores are keyed by the recorded hash
                    self.ctx.log.note(f"warning: operator '{self.op.name}' is not deterministic: "
                                      f"{arm.name}/{img.record.image_id} at dose {d:g} differs from its cached variant")
        return lost

    def _score_row(self, arm, img: Img, slot: ScorerSlot, dose: float, result: Any) -> None:
        ctx = self.ctx
        if isinstance(result, str):
            if dose != self.op.identity:  # the original's own failure is already excluded
                ctx.exclude(arm.name, img.record.image_id, img.record.row, "score",
                            f"{result} ({slot.name}, {self.op.name}@{dose:g})")
            score = float("nan")
        else:
            score = float(result)
        ctx.tables.add_score(arm.name, img.record.image_id, self.op.name, dose, slot.name, score)
