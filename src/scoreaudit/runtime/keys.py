"""Content addresses of runtime steps.

A step's key is the sha256 of everything that determines its output: the
key-algorithm version, the step kind, the plugin's name, version and
canonical parameters, and the content hashes of its inputs. Equal keys mean
equal outputs, so the cache can be shared by every spec in a folder and a
changed hypothesis (which enters no key) recomputes nothing.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

# Bump when the way keys are built changes: every old entry becomes unreachable.
KEY_ALGO_VERSION = "scoreaudit-key/1"


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
    """Sorted keys, no whitespace, NaN spelled out: the same value always gives the same text."""
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hash_value(value: Any) -> str:
    return sha256_text(canonical_json(value))


def hash_array(array: np.ndarray) -> str:
    """sha256 of an array's dtype, shape and bytes (C order)."""
    arr = np.ascontiguousarray(array)
    h = hashlib.sha256()
    h.update(f"{arr.dtype.str}|{arr.shape}|".encode())
    h.update(arr.tobytes())
    return h.hexdigest()


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
    key = hash_value([KEY_ALGO_VERSION, kind, plugin, str(version), params_hash, input_hash])
    return StepKey(key=key, slot=slot, kind=kind, plugin=plugin, version=str(version),
                   params_hash=params_hash, input_hash=input_hash)
