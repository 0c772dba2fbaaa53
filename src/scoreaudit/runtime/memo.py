"""Per-image memos: every row one image's steps produced, as one cache entry.

A re-run whose steps are all cached still had to decode every image (its
content hash enters every key), rebuild and look up every step key, and
note each step's provenance. The memo short-cuts that: its key is the arm's
work (the plan keys of the arm's decode, region, operator, measure and score
steps, the scorers' key parameters with their weight files' identity, the
device, the precomputed tables' hashes) plus what the image's steps read from
disk (the image file's bytes, the manifest row, the mask files the regions
read). Its value is the image's table rows (scores and measures as columns),
its exclusions, its run-log lines as written, their counts, and the time the
earliest of its scores was computed (`first_score_at`, so `run.json` needs
no query per score key). Replaying a memo is a handful of list extensions:
no dict per row, no line formatting. An image with a memo is replayed:
nothing is decoded, no step key is built. An image without one goes
through the steps (which use the per-step cache), and its memo is staged with
the batch, so it commits in the same transaction as the steps it summarises.

Memos are an index over the step cache, never the only copy of a result:
deleting them (or bumping MEMO_VERSION) only makes the next run slower.
"""

from __future__ import annotations

import base64
import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scoreaudit.keys import StepKey, digest, hash_value
from scoreaudit.runtime.images import ImageRecord
from scoreaudit.runtime.runlog import cached_lines
from scoreaudit.runtime.tables import Tables

SCORE_COLUMNS = ("operator", "dose", "scorer", "score")
MEASURE_COLUMNS = ("operator", "dose", "name", "role", "value")
FLOAT_COLUMNS = ("dose", "score", "value")  # stored as little-endian float64 bytes (exact, fast to read)


def pack_floats(values: Sequence[float]) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f8").tobytes()).decode("ascii")


def unpack_floats(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f8")


def pack_names(values: Sequence[str]) -> str | list:
    """A column of names (operators, scorers, measures, roles: identifiers) as one space-joined text;
    anything else stays a list."""
    if values and all(isinstance(v, str) and v and " " not in v for v in values):
        return " ".join(values)
    return list(values)


def unpack_names(value: str | list) -> list:
    return value.split(" ") if isinstance(value, str) else value


def pack_text(text: str) -> str:
    """Run-log lines, compressed: a memo is read on every cached re-run, and these are most of it."""
    return base64.b64encode(zlib.compress(text.encode("utf-8"), 1)).decode("ascii")


def unpack_text(text: str) -> str:
    return zlib.decompress(base64.b64decode(text)).decode("utf-8")

MEMO_VERSION = "2"  # bump when the executor's rows for the same steps, or the memo's layout, change


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
    from scoreaudit.safeio import final_path

    return [final_path(path), st.st_size, st.st_mtime_ns]  # a re-run's staging copy is the bundle's file


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


# ---------------------------------------------------------------- header probes


def probe_step(arm: str, max_pixels: int, files: Mapping[str, Sequence[int]]) -> StepKey:
    """The cache entry recording which image files of an arm passed the header probe
    (`manifests.load_manifest`), as path -> (size, mtime_ns). Entries are write-once, so the
    key follows the content and the slot (`probe <arm>`) points at the latest."""
    params = hash_value(["probe", MEMO_VERSION, arm, max_pixels])
    inputs = hash_value(sorted((k, list(v)) for k, v in files.items()))
    return StepKey(key=digest("image", "probe", MEMO_VERSION, params, inputs), slot=f"probe {arm}", kind="image",
                   plugin="probe", version=MEMO_VERSION, params_hash=params, input_hash=inputs)


def known_probes(cache_path: Path, max_pixels: Mapping[str, int]) -> dict[str, dict[str, list]]:
    """arm -> the files whose header passed in the last run (same max_pixels), from the cache; {} without one.

    Read-only and best effort: a cache that cannot be read only means every header is read again
    (the run itself reports the cache's problems)."""
    from scoreaudit.runtime.cache import Cache

    if not Path(cache_path).is_file():
        return {}
    try:
        cache = Cache(cache_path, readonly=True)
    except Exception:  # noqa: BLE001 - reported when the run opens the cache
        return {}
    try:
        prov = cache.provenance(f"probe {a}" for a in max_pixels)
        found = cache.lookup(p["key"] for p in prov.values())
    except Exception:  # noqa: BLE001 - as above
        return {}
    finally:
        cache.close()
    out = {}
    for arm, mp in max_pixels.items():
        p = prov.get(f"probe {arm}")
        value = found.get(p["key"], (None,))[0] if p else None
        if isinstance(value, dict) and value.get("max_pixels") == mp and isinstance(value.get("files"), dict):
            out[arm] = value["files"]
    return out


def intact_memos(cache: Any, keys: Iterable[StepKey | None]) -> dict[str, tuple[Any, str]]:
    """The memos found for these keys whose own checksum holds (`Cache.lookup` checks it).

    A memo holds copies of every row its steps produced, sealed with its own checksum, so a
    replay never reads the steps' values: a damaged memo is left out (its image goes through
    its steps, which read, check and, if needed, recompute their values), and a damaged step
    value cannot reach the tables through a memo. That step value is caught, reported and
    replaced on the first run that reads it (any change that invalidates the memo), not on
    every replay: checking all of them made a 1,500-image stats-only re-run 5 s instead of 1.5
    (bench/rerun.py). `Cache.verify` checks any set of keys when a caller wants that anyway.
    """
    return cache.lookup(k.key for k in keys if k is not None)


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

    def by_image(self, arm: str, image_ids: Iterable[str], created: Mapping[str, str] | None = None
                 ) -> dict[str, dict[str, Any]]:
        """Each image's memo value; `created` gives score keys' first computed times (`Cache.lookup`)."""
        ids = list(image_ids)
        out: dict[str, dict[str, Any]] = {
            i: {"image": None, "image_id": i, "regions": [], "exclusions": [],
                "scores": {c: [] for c in SCORE_COLUMNS}, "measures": {c: [] for c in MEASURE_COLUMNS}}
            for i in ids}
        t = self.tables
        for r in t.images[self.start["images"]:]:
            if r["image_id"] in out:
                out[r["image_id"]]["image"] = r
        for r in t.regions[self.start["regions"]:]:
            if r["image_id"] in out:
                out[r["image_id"]]["regions"].append([r["region"], r["coverage"]])
        for table, cols in (("scores", SCORE_COLUMNS), ("measures", MEASURE_COLUMNS)):
            for r in getattr(t, table)[self.start[table]:]:
                if r["image_id"] in out:
                    have = out[r["image_id"]][table]
                    for c in cols:
                        have[c].append(r[c])
        for r in t.exclusions[self.start["exclusions"]:]:
            if r["image_id"] in out:
                out[r["image_id"]]["exclusions"].append([r["row"], r["stage"], r["reason"]])
        steps: dict[str, list] = {i: [] for i in ids}
        tokens = {f"{arm}/{i}": i for i in ids}
        for step, _reason in self.steps:
            for tok in step.slot.split(" "):
                if tok in tokens:
                    steps[tokens[tok]].append(step)
                    break
        for i in ids:
            for table in ("scores", "measures"):
                cols = out[i][table]
                for c in cols:
                    cols[c] = pack_floats(cols[c]) if c in FLOAT_COLUMNS else pack_names(cols[c])
            counts: dict[str, int] = {}
            for st in steps[i]:
                counts[st.kind] = counts.get(st.kind, 0) + 1
            times = [created[st.key] for st in steps[i] if st.kind == "score" and created and st.key in created]
            out[i].update(log=pack_text(cached_lines(steps[i])), counts=sorted(counts.items()),
                          first_score_at=min(times) if times else None)
        return out

    def score_keys(self) -> list[str]:
        """Keys of the score steps the batch went through (to look up when each was first computed)."""
        return [step.key for step, _ in self.steps if step.kind == "score"]


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
    for table in ("scores", "measures"):
        cols = {c: unpack_floats(v) if c in FLOAT_COLUMNS else unpack_names(v) for c, v in value[table].items()}
        n = len(cols["dose"])
        if n:
            t.extend_columns(table, {"arm": [arm] * n, "image_id": [iid] * n, **cols})
    ctx.log.cached(unpack_text(value["log"]), value["counts"])
    if value["first_score_at"] is not None:
        ctx.replayed_first.append(value["first_score_at"])
    for row, stage, reason in value["exclusions"]:
        ctx.exclude(arm, iid, row, stage, reason)
    return image_id
