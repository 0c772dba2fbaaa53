"""The SQLite step cache: codecs without pickle, atomic batches, provenance reasons, first score time."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pytest

from scoreaudit.runtime.cache import Cache, CacheError, decode, encode, explain, first_score_time
from scoreaudit.keys import KEY_ALGO_VERSION, canonical_json, hash_value, step_key


def _step(params=None, inputs=None, version="1", slot="score s a/x original@0.0", kind="score"):
    return step_key(kind, "fake", version, params or {"g": 1}, inputs or {"image": "h1"}, slot)


def test_codecs_round_trip_and_refuse_pickle():
    for v in (1.5, float("nan"), -0.0, {"a": [1, None, "x"], "b": float("inf")}):
        out = decode(*encode(v))
        if isinstance(v, float) and math.isnan(v):
            assert math.isnan(out)
        else:
            assert out == v
    arr = np.arange(12, dtype=np.uint8).reshape(3, 4)
    back = decode(*encode(arr))
    assert back.dtype == arr.dtype and np.array_equal(back, arr)
    with pytest.raises(TypeError):
        encode(np.array([object()], dtype=object))


def test_keys_are_canonical_and_versioned():
    assert canonical_json({"b": 1, "a": (1.0, float("nan"))}) == canonical_json({"a": [1.0, float("nan")], "b": 1})
    a = _step(params={"x": 1, "y": 2})
    assert a.key == _step(params={"y": 2, "x": 1}).key
    assert a.key != _step(params={"x": 1, "y": 3}).key
    assert a.key != _step(params={"x": 1, "y": 2}, version="2").key
    assert a.key != _step(params={"x": 1, "y": 2}, inputs={"image": "h2"}).key
    assert a.key != _step(params={"x": 1, "y": 2}, kind="measure").key
    assert KEY_ALGO_VERSION in canonical_json([KEY_ALGO_VERSION])
    assert len(hash_value({})) == 64


def test_batch_is_invisible_until_commit_and_survives_reopen(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = Cache(path)
    s = _step()
    cache.stage(s, 3.25)
    assert cache.lookup([s.key])[s.key][0] == 3.25  # staged values serve lookups in the same run
    other = sqlite3.connect(path)
    assert other.execute("SELECT count(*) FROM entries").fetchone()[0] == 0
    cache.commit()
    assert other.execute("SELECT count(*) FROM entries").fetchone()[0] == 1
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    other.close()
    cache.close()
    again = Cache(path)
    assert again.lookup([s.key])[s.key][0] == 3.25
    again.close()


def test_entries_are_write_once(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    s = _step()
    cache.stage(s, 1.0)
    cache.commit()
    t0 = cache.lookup([s.key])[s.key][1]
    cache.stage(s, 1.0)
    cache.commit()
    assert cache.lookup([s.key])[s.key][1] == t0
    cache.close()


def test_reasons_from_provenance(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    base = _step()
    assert cache.reasons([base])[base.slot] == "new"
    cache.stage(base, 1.0)
    cache.commit()
    assert cache.reasons([_step(params={"g": 2})])[base.slot] == "parameters changed"
    assert cache.reasons([_step(version="2")])[base.slot] == "plugin version changed"
    assert cache.reasons([_step(inputs={"image": "h2"})])[base.slot] == "input changed"
    assert explain(base, None) == "new"
    cache.close()


def test_first_score_time(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = Cache(path)
    a, b = _step(inputs={"image": "a"}), _step(inputs={"image": "b"})
    m = _step(kind="measure", inputs={"image": "m"})
    cache.stage(m, 0.0)
    cache.stage(a, 1.0)
    cache.commit()
    cache.stage(b, 2.0)
    cache.commit()
    ta, tb, tm = (cache.lookup([k.key])[k.key][1] for k in (a, b, m))
    cache.close()
    assert ta <= tb and ta.endswith("Z")
    assert first_score_time(path, [b.key]) == tb
    assert first_score_time(path, [b.key, a.key]) == ta
    assert first_score_time(path, [m.key]) is None  # only score entries count
    assert first_score_time(tmp_path / "none.sqlite", [a.key]) is None


def test_not_a_cache_file(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(CacheError, match="not a usable scoreaudit cache"):
        Cache(bad)
