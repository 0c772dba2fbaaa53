"""Steps on the unaltered images: their scores (operator `original`, dose 0.0) and measures.

Every image of every arm gets an `original` score per scorer: cross-image
statistics read them, and each operator's identity-dose row copies them.
Images arms also get `original` rows for the declared measures and
covariates (cross-image selections rank images by them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scoreaudit.compiler.ir import ORIGINAL, ArmIR
from scoreaudit.keys import step_key
from scoreaudit.plugins.base import MeasureContext
from scoreaudit.runtime.measure_steps import MeasureSpec, as_float, compute_measure
from scoreaudit.runtime.operator_steps import Img
from scoreaudit.runtime.scoring import ScorerSlot, make_item
from scoreaudit.runtime.steps import Lookup, RunContext


def original_measures(ctx: RunContext, arm: ArmIR, imgs: list[Img], specs: list[MeasureSpec]) -> None:
    declared = [s for s in specs if s.role != "builtin"]
    if not declared or not imgs:
        return
    steps = {}
    for i, img in enumerate(imgs):
        vkey = step_key("variant", ORIGINAL, "1", {}, {"image": img.content_hash}, slot="")
        for s in declared:
            slot = f"measure {s.role}:{s.name} {arm.name}/{img.record.image_id} {ORIGINAL}@0.0"
            steps[i, s.name] = (s, s.key(vkey.key, img.masks.hashes, slot))
    look = Lookup(ctx, (st for _, st in steps.values()))
    todo = [(i, s, st) for (i, _), (s, st) in steps.items() if not look.has(st.key)]
    on_device = [job for job in todo if imgs[job[0]].dev is not None]
    if on_device:  # the tensor path: on the device copies, the values back in one transfer
        from scoreaudit.runtime import tensor_steps

        values = tensor_steps.compute_many(ctx, [(s, imgs[i], None, None, 0.0, 0.0) for i, s, _ in on_device])
        for (_, _, st), value in zip(on_device, values):
            look.done(st, value)
    for i, s, st in todo:
        img = imgs[i]
        if img.dev is None and not look.has(st.key):
            mctx = MeasureContext(original=img.image, variant=img.image, masks=img.masks.masks,
                                  operator_mask=None, info={}, dose=0.0, identity=0.0)
            look.done(st, compute_measure(ctx, s, mctx))
    for (i, _name), (s, st) in steps.items():
        img = imgs[i]
        value = look.get(st.key)
        if isinstance(value, dict):
            ctx.exclude(arm.name, img.record.image_id, img.record.row, "measure",
                        f"{value['failure']} ({ORIGINAL})")
        ctx.tables.add_measure(arm.name, img.record.image_id, ORIGINAL, 0.0, s.name, s.role, as_float(value))


def _pixels_of(img: Img) -> Callable[[], Any]:
    return lambda: img.image


def _device_pixels_of(img: Img) -> Callable[[], Any]:
    return lambda: img.dev.image


def original_scores(ctx: RunContext, arm: ArmIR, imgs: list[Img], slots: list[ScorerSlot],
                    specs: list[MeasureSpec]) -> None:
    """Score the unaltered images; results land in `img.original_scores` and the scores table."""
    zero = {s.name: 0.0 for s in specs if s.role != "builtin"}
    for slot in slots:
        reqs = []
        for img in imgs:
            item = make_item(img.record, ORIGINAL, 0.0, 0.0, False, zero)
            reqs.append(slot.request(img.record, img.content_hash, slot.prompt_for(arm, img.record), item,
                                     image=_pixels_of(img),
                                     tensor=_device_pixels_of(img) if img.dev is not None else None))
        for img, result in zip(imgs, slot.score(reqs)):
            img.original_scores[slot.name] = result
            if isinstance(result, str):
                ctx.exclude(arm.name, img.record.image_id, img.record.row, "score",
                            f"{result} ({slot.name}, {ORIGINAL})")
                score = float("nan")
            else:
                score = result
            ctx.tables.add_score(arm.name, img.record.image_id, ORIGINAL, 0.0, slot.name, score)
        ctx.progress.advance(f"{arm.name}: score {slot.name}", len(imgs))
