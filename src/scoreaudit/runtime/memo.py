"""Per-image memos: every row one image's steps produced, as one cache entry.

A re-run whose steps are all cached still had to decode every image (its
content hash enters every key), rebuild and look up every step key, and
note each step's provenance. The memo short-cuts that: its key is the arm's
work (the plan keys of the arm's decode, region, operator, measure and score
steps, the scorers' key parameters with their weight files' identity, the
device, the precomputed tables' hashes) plus what the image's steps read from
disk (the image file's bytes, the manifest row, the mask files the regions
read). Its value is the image's table rows, its exclusions and its run-log
lines. When every image of a batch has a memo, the batch is replayed from
them: nothing is decoded, no step key is built. An image without one goes
through the steps (which use the per-step cache), and its memo is staged with
the batch, so it commits in the same transaction as the steps it summarises.

Memos are an index over the step cache, never the only copy of a result:
deleting them (or bumping MEMO_VERSION) only makes the next run slower.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from scoreaudit.keys import StepKey, digest, hash_value
from scoreaudit.runtime.images import ImageRecord
from scoreaudit.runtime.tables import Tables

MEMO_VERSION = "1"  # bump when the executor's rows for the same steps change


@dataclass(frozen=True)
class LoggedStep:
    """A run-log line replayed from a memo (what RunLog.step reads)."""

    key: str
    kind: str
    slot: str


def file_identity(path: Path | None) -> list | None:
    """A file's (resolved path, size, mtime_ns): any edit, copy or checkout changes it, and then the
    image goes through its steps, whose keys hash the decoded pixels (the memo is only a shortcut)."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None  # unreadable now: no memo, the steps report it
    return [os.fspath(path), st.st_size, st.st_mtime_ns]


def arm_key(stage: Any, extra: Any) -> str:
    """The arm's work: the plan keys of its per-image steps (a `plan.ArmStage`), plus what they do not
    cover (`extra`)."""
    return hash_value([MEMO_VERSION, list(stage.keys), extra])


class Memos:
    """Keys for the images of one arm, replay of found memos, capture of new ones."""

    def __init__(self, arm: str, key: str, mask_columns: Sequence[str], base_dir: Path):
        self.arm = arm
        self.key = key
        self.mask_columns = list(mask_columns)
        self.base_dir = Path(base_dir)

    def step(self, rec: ImageRecord) -> StepKey | None:
        """The memo key of one image (None when its file cannot be read: no memo)."""
        sha = file_identity(rec.path)
        if rec.path is not None and sha is None:
            return None
        masks = {}
        for c in self.mask_columns:
            v = rec.columns.get(c)
            masks[c] = file_identity(self.base_dir / v) if isinstance(v, str) and v else None
        inputs = [sha, rec.image_id, rec.row, rec.cluster, rec.prompt, rec.side, rec.pair_id,
                  dict(rec.columns), masks]
        input_hash = hash_value(inputs)
        return StepKey(key=digest("image", "memo", MEMO_VERSION, self.key, input_hash),
                       slot=f"memo {self.arm}/{rec.image_id}", kind="image", plugin="memo", version=MEMO_VERSION,
                       params_hash=self.key, input_hash=input_hash)


def intact_memos(cache: Any, keys: Iterable[StepKey | None]) -> dict[str, tuple[Any, str]]:
    """The memos found for these keys whose steps' stored values are all intact.

    A memo's rows are copies of its steps' values, so its own checksum is not enough: a step value
    damaged on disk would go unnoticed as long as the memo replays. The steps' checksums are checked
    in the same bulk read (no decoding); a memo standing for a damaged value is left out, so its
    image goes through its steps, which recompute that value, replace it and report it.
    """
    found = cache.lookup(k.key for k in keys if k is not None)
    bad = cache.verify(key for value, _t in found.values() for key, _kind, _slot in value["steps"])
    if bad:
        found = {k: v for k, v in found.items() if not any(key in bad for key, _k, _s in v[0]["steps"])}
    return found


# ---------------------------------------------------------------- capture and replay


class Capture:
    """Rows and run-log lines added while a batch runs, split by image afterwards."""

    def __init__(self, tables: Tables, log: Any):
        self.tables = tables
        self.log = log
        self.start = {n: len(getattr(tables, n)) for n in ("images", "scores", "measures", "regions", "exclusions")}
        self.steps: list[tuple[Any, str]] = []
        log.capture = self.steps

    def close(self) -> None:
        self.log.capture = None

    def by_image(self, arm: str, image_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        ids = list(image_ids)
        out: dict[str, dict[str, Any]] = {i: {"image": None, "regions": [], "scores": [], "measures": [],
                                              "exclusions": [], "steps": []} for i in ids}
        t = self.tables
        for r in t.images[self.start["images"]:]:
            if r["image_id"] in out:
                out[r["image_id"]]["image"] = r
        for r in t.regions[self.start["regions"]:]:
            if r["image_id"] in out:
                out[r["image_id"]]["regions"].append([r["region"], r["coverage"]])
        for r in t.scores[self.start["scores"]:]:
            if r["image_id"] in out:
                out[r["image_id"]]["scores"].append([r["operator"], r["dose"], r["scorer"], r["score"]])
        for r in t.measures[self.start["measures"]:]:
            if r["image_id"] in out:
                out[r["image_id"]]["measures"].append([r["operator"], r["dose"], r["name"], r["role"], r["value"]])
        for i in ids:
            out[i]["image_id"] = i
        for r in t.exclusions[self.start["exclusions"]:]:
            if r["image_id"] in out:
                out[r["image_id"]]["exclusions"].append([r["row"], r["stage"], r["reason"]])
        tokens = {f"{arm}/{i}": i for i in ids}
        for step, _reason in self.steps:
            for tok in step.slot.split(" "):
                if tok in tokens:
                    out[tokens[tok]]["steps"].append([step.key, step.kind, step.slot])
                    break
        return out


def replay(ctx: Any, arm: str, value: Mapping[str, Any]) -> str | None:
    """Add one memo's rows to the tables and its lines to the run log; the image id when it is usable."""
    t = ctx.tables
    image = value["image"]
    image_id = None
    if image is not None:
        t.images.append(dict(image))
        image_id = image["image_id"]
    iid = image_id if image_id is not None else value.get("image_id")
    t.regions.extend({"arm": arm, "image_id": iid, "region": r, "coverage": c} for r, c in value["regions"])
    t.scores.extend({"arm": arm, "image_id": iid, "operator": o, "dose": d, "scorer": s, "score": v}
                    for o, d, s, v in value["scores"])
    t.measures.extend({"arm": arm, "image_id": iid, "operator": o, "dose": d, "name": n, "role": r, "value": v}
                      for o, d, n, r, v in value["measures"])
    steps = value["steps"]
    ctx.log.cached(steps)
    ctx.score_keys.update(key for key, kind, _ in steps if kind == "score")
    for row, stage, reason in value["exclusions"]:
        ctx.exclude(arm, iid, row, stage, reason)
    return image_id
