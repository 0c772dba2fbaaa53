"""Content addresses: the one key scheme of plans, the cache and the run log.

A key is the sha256 of everything that determines a step's output: the
key-algorithm version, the step kind, the plugin's name and version, the hash
of its canonical parameters and the hash of its inputs. The plan
(compiler/plan.py) keys a step by the keys of the steps it depends on, so a
change upstream changes every key downstream and nothing else; the runtime
keys a step on one image by the content hashes of what it reads (pixels,
masks, the variant's recipe), so equal keys mean equal outputs and the cache
is shared by every spec in a folder.

No project imports: the compiler and the runtime both build keys here.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

# Bump when the way keys are built changes: every old cache entry becomes unreachable.
KEY_ALGO = 1
KEY_ALGO_VERSION = f"scoreaudit-key/{KEY_ALGO}"

_FAST = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _plain(value: Any) -> Any:
    """JSON-able, canonical form of a value (numpy scalars, tuples, NaN, sets)."""
    if isinstance(value, (np.generic,)):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return {"__float__": "nan"}
        if math.isinf(value):
            return {"__float__": "inf" if value > 0 else "-inf"}
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain(v) for v in value)
    if hasattr(value, "model_dump"):
        return _plain(value.model_dump(mode="json"))
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, NaN spelled out: the same value always gives the same text.

    Plain JSON data goes through the C encoder directly (plans key thousands of
    steps); anything else (NaN, numpy scalars, sets, models) is made plain first.
    """
    try:
        return _FAST.encode(value)
    except (TypeError, ValueError):
        return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)


@cache
def source_version(subpackage: str = "") -> str:
    """sha256 over the source files (names and bytes) of the scoreaudit package, or of one `subpackage`
    of it (`reports`), once per process: part of the key of every output reused from an earlier bundle
    (statistics, thumbnails, reports), so that a change of the code it comes from makes it again."""
    root = Path(__file__).resolve().parent / subpackage
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_value(value: Any) -> str:
    return sha256_text(canonical_json(value))


def hash_array(array: np.ndarray) -> str:
    """sha256 of an array's dtype, shape and bytes (C order): an image's or a mask's identity."""
    arr = np.ascontiguousarray(array)
    h = hashlib.sha256()
    h.update(f"{arr.dtype.str}|{arr.shape}|".encode())
    h.update(arr.tobytes())
    return h.hexdigest()


def digest(kind: str, plugin: str | None, version: str | None, params_hash: str, input_hash: str) -> str:
    """The key itself: every key, in plans and in the cache, is built by this function."""
    return sha256_text(canonical_json([KEY_ALGO_VERSION, kind, str(plugin), str(version), params_hash,
                                       input_hash]))


@dataclass(frozen=True)
class StepKey:
    """A step's content address plus what the run log needs to explain a recompute.

    `slot` names the step independently of its inputs (e.g. "score pick real/img1 light@5"),
    so a later run can say whether the plugin version, the parameters or the inputs changed.
    """

    key: str
    slot: str
    kind: str
    plugin: str
    version: str
    params_hash: str
    input_hash: str


def step_key(kind: str, plugin: str, version: str, params: Any, inputs: Any, slot: str) -> StepKey:
    params_hash = hash_value(params)
    input_hash = hash_value(inputs)
    key = digest(kind, plugin, str(version), params_hash, input_hash)
    return StepKey(key=key, slot=slot, kind=kind, plugin=plugin, version=str(version),
                   params_hash=params_hash, input_hash=input_hash)
