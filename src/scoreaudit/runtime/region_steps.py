"""Regions of one image, computed once and cached as one step per image.

The step's inputs are the image's content hash, the manifest values of every
column a region plugin reads (e.g. `mask(column: torso_mask)`) and the
sha256 of the file such a value names, so editing a user mask recomputes
exactly the images whose mask changed. The value is every region's mask,
bit-packed (sorted by name); a region failure (ImageFailure) is cached as its
reason, since it is as deterministic as a mask.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scoreaudit.keys import hash_array, step_key
from scoreaudit.runtime.columns import columns_of_call, region_calls
from scoreaudit.runtime.images import Decoded, ImageFailure
from scoreaudit.runtime.steps import Lookup, RunContext
from scoreaudit.safeio import file_problem, read_regular


@dataclass(frozen=True)
class Masks:
    masks: Mapping[str, np.ndarray]
    hashes: Mapping[str, str]
    coverage: Mapping[str, float]


def _file_sha(base_dir: Path, value: Any, root: Path | None = None) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    path = base_dir / value
    if file_problem(path) is not None:
        return None
    try:
        return hashlib.sha256(read_regular(path, root=root)).hexdigest()  # the opened file itself contained
    except OSError:  # swapped for a FIFO or removed since the check: the region step reports it
        return None


def pack(masks: Mapping[str, np.ndarray]) -> np.ndarray:
    names = sorted(masks)
    if not names:
        return np.zeros((0, 0), dtype=np.uint8)
    return np.stack([np.packbits(np.asarray(masks[n], dtype=bool).ravel()) for n in names])


def packed_problem(packed: Any, names: list[str], shape: tuple[int, int]) -> str | None:
    """Why a cached packed-mask value cannot be this image's masks (None: it fits). A forged or damaged
    entry with a valid checksum (e.g. 1×1 masks) would otherwise unpack to zero-padded empty masks."""
    if isinstance(packed, dict):  # a recorded failure
        return None if isinstance(packed.get("failure"), str) else "a cached region failure without a reason"
    want = (len(names), (shape[0] * shape[1] + 7) // 8) if names else (0, 0)
    if not isinstance(packed, np.ndarray) or packed.dtype != np.uint8 or tuple(packed.shape) != want:
        got = f"{getattr(packed, 'dtype', type(packed).__name__)} {tuple(getattr(packed, 'shape', ()))}"
        return f"cached masks are {got}, not the {want} packed bits of {len(names)} mask(s) of {shape[1]}×{shape[0]}"
    return None


def unpack(packed: np.ndarray, names: list[str], shape: tuple[int, int]) -> dict[str, np.ndarray]:
    n = shape[0] * shape[1]
    return {name: np.unpackbits(packed[i], count=n).astype(bool).reshape(shape)
            for i, name in enumerate(sorted(names))}


class RegionSteps:
    """Evaluates (or loads) the regions an arm needs (`names`, the plan's; None: every declared one)
    of each decoded image of a batch."""

    def __init__(self, ctx: RunContext, names=None):
        self.ctx = ctx
        self.regions = {n: r for n, r in ctx.ir.regions.items() if names is None or n in names}
        self._evaluator = None
        calls = [c for r in self.regions.values() for c in region_calls(r.expr)]
        self.columns = list(dict.fromkeys(col for c in calls for col in
                                          columns_of_call("region", c.plugin, dict(c.params))))
        self.params = {name: r.model_dump(mode="json") for name, r in sorted(self.regions.items())}
        self.version = ",".join(sorted({f"{c.plugin}@{c.version}" for c in calls})) or "expr"

    @property
    def evaluator(self):
        if self._evaluator is None:
            from scoreaudit.runtime.regions import RegionEvaluator

            self._evaluator = RegionEvaluator(self.regions, device=self.ctx.device)
        return self._evaluator

    def key(self, d: Decoded, base_dir: Path):
        row = d.record.columns
        inputs = {"image": d.content_hash,
                  "columns": {c: [row.get(c), _file_sha(base_dir, row.get(c), self.ctx.root)] for c in self.columns}}
        return step_key("regions", "regions", self.version, self.params, inputs,
                        slot=f"regions {d.record.arm}/{d.record.image_id}")

    def run(self, decoded: list[Decoded], base_dir: Path) -> dict[str, Masks | str]:
        """image_id → Masks, or the failure reason."""
        if not self.regions:
            return {d.record.image_id: Masks({}, {}, {}) for d in decoded}
        steps = {d.record.image_id: self.key(d, base_dir) for d in decoded}
        look = Lookup(self.ctx, steps.values())
        out: dict[str, Masks | str] = {}
        for d in decoded:
            step = steps[d.record.image_id]
            why = packed_problem(look.get(step.key), sorted(self.regions), d.image.shape[:2]) \
                if look.has(step.key) else None
            if why is not None:  # a cached value that does not fit the image: recomputed and replaced
                corrupt = getattr(self.ctx.cache, "corrupt", None)
                if corrupt is not None:
                    corrupt[step.key] = why
                del look.values[step.key]
                look._reasons[step.slot] = "cached value corrupt"
            if not look.has(step.key):
                try:
                    res = self.evaluator.evaluate(d.image, d.record.columns, base_dir, root=self.ctx.root)
                    value: Any = pack(res.masks)
                except ImageFailure as exc:
                    value = {"failure": exc.reason}
                look.done(step, value)
            value = look.get(step.key)
            if isinstance(value, dict):
                out[d.record.image_id] = str(value["failure"])
                continue
            masks = unpack(value, list(self.regions), d.image.shape[:2])
            size = max(1, d.image.shape[0] * d.image.shape[1])
            out[d.record.image_id] = Masks(
                masks=masks, hashes={n: hash_array(m) for n, m in masks.items()},
                coverage={n: float(np.count_nonzero(m)) / size for n, m in masks.items()})
        return out
