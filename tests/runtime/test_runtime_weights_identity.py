"""Score cache keys follow the weight files: a file replaced at the same path is a new input."""

import os
from dataclasses import dataclass
from pathlib import Path

from scoreaudit.registry import Params
from scoreaudit.runtime.scoring import weights_identity


class _P(Params):
    weights: str


@dataclass
class _Located:
    files: dict
    ready: bool = True


class _Impl:
    @classmethod
    def locate_for_run(cls, params):
        path = Path(params.weights)
        return _Located({"head": path}, ready=path.exists())


@dataclass
class _Entry:
    impl: type
    params: type


def test_identity_changes_when_the_file_is_replaced(tmp_path):
    w = tmp_path / "head.safetensors"
    w.write_bytes(b"a" * 10)
    entry = _Entry(_Impl, _P)
    first = weights_identity(entry, {"weights": str(w)})
    assert first == {"head": [str(w.resolve()), 10, w.stat().st_mtime_ns]}
    assert weights_identity(entry, {"weights": str(w)}) == first  # stable: cached scores stay valid
    w.write_bytes(b"b" * 12)
    os.utime(w, ns=(w.stat().st_atime_ns, w.stat().st_mtime_ns + 1_000_000))
    assert weights_identity(entry, {"weights": str(w)}) != first


def test_no_identity_without_weight_files(tmp_path):
    assert weights_identity(_Entry(object, _P), {"weights": "x"}) is None  # a scorer without weights
    assert weights_identity(_Entry(_Impl, _P), {"weights": str(tmp_path / "missing")}) is None
    assert weights_identity(_Entry(_Impl, _P), {}) is None  # incomplete arguments: the factory reports it
