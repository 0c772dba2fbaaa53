"""Cache integrity: every value has a checksum; a damaged value is recomputed, a damaged database is one message."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hardening_helpers import project
from scoreaudit import cli
from scoreaudit.exitcodes import Exit
from scoreaudit.runtime.cache import Cache, CacheError
from scoreaudit.keys import step_key


def _key(i: int):
    return step_key("score", "s", "1", {"i": i}, {"x": i}, slot=f"slot{i}")


def test_a_flipped_bit_in_a_value_is_detected_and_not_returned(tmp_path):
    path = tmp_path / "c.sqlite"
    with Cache(path) as c:
        c.stage(_key(1), 0.25)
        c.stage(_key(2), np.arange(5.0))
        c.commit()
    db = sqlite3.connect(path)
    (blob,) = db.execute("SELECT value FROM entries WHERE key=?", (_key(1).key,)).fetchone()
    bad = bytearray(blob)
    bad[-1] ^= 0x01  # one bit of the float
    db.execute("UPDATE entries SET value=? WHERE key=?", (bytes(bad), _key(1).key))
    db.commit()
    db.close()
    with Cache(path) as c:
        found = c.lookup([_key(1).key, _key(2).key])
        assert _key(1).key not in found and _key(1).key in c.corrupt
        assert np.array_equal(found[_key(2).key][0], np.arange(5.0))
        c.stage(_key(1), 0.25)  # the recomputed value replaces the damaged one
        c.commit()
    with Cache(path) as c:
        assert c.lookup([_key(1).key])[_key(1).key][0] == 0.25 and not c.corrupt


def _score_blob_flip(cache: Path) -> None:
    db = sqlite3.connect(cache)
    key, blob = db.execute("SELECT key, value FROM entries WHERE kind='score' ORDER BY key LIMIT 1").fetchone()
    bad = bytearray(blob)
    bad[-3] ^= 0x10
    db.execute("UPDATE entries SET value=? WHERE key=?", (bytes(bad), key))
    db.commit()
    db.close()


def _drop_memos(cache: Path) -> None:
    """Remove the per-image memos, so the next run reads every step's value (as after a spec change)."""
    db = sqlite3.connect(cache)
    db.execute("DELETE FROM entries WHERE kind='image'")
    db.commit()
    db.close()


def test_a_run_recomputes_a_corrupted_score_and_reports_it(tmp_path, capsys):
    spec = project(tmp_path / "p")
    cache = tmp_path / "c.sqlite"
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "a"), "--cache", str(cache), "--quiet"]) == 0
    _score_blob_flip(cache)
    _drop_memos(cache)  # the steps' values are read (a memo replay reads only the memo)
    capsys.readouterr()
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "b"), "--cache", str(cache), "--quiet"]) == 0
    assert "corrupt" in capsys.readouterr().err
    a = pd.read_parquet(tmp_path / "a/tables/scores.parquet")
    b = pd.read_parquet(tmp_path / "b/tables/scores.parquet")
    pd.testing.assert_frame_equal(a, b)
    run = json.loads((tmp_path / "b/run.json").read_text())
    assert run["counts"]["corrupt_cache_values"] == 1
    assert "cached value corrupt" in (tmp_path / "b/run.log").read_text()


@pytest.mark.parametrize("seed", range(6))
def test_a_corrupted_database_is_one_clear_message(tmp_path, capsys, seed):
    spec = project(tmp_path / "p")
    cache = tmp_path / "c.sqlite"
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "a"), "--cache", str(cache), "--quiet"]) == 0
    data = bytearray(cache.read_bytes())
    rng = np.random.default_rng(seed)
    start = int(rng.integers(0, max(1, len(data) - 4096))) if seed % 2 else 0
    data[start:start + 4096] = rng.integers(0, 256, min(4096, len(data) - start), dtype=np.uint8).tobytes()
    cache.write_bytes(bytes(data))
    for wal in (tmp_path / "c.sqlite-wal", tmp_path / "c.sqlite-shm"):
        wal.unlink(missing_ok=True)
    capsys.readouterr()
    rc = cli.main(["run", str(spec), "--out", str(tmp_path / "b"), "--cache", str(cache), "--quiet"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    # either the damage hit only values (recomputed, reported) or the database is refused with what to do
    # the damage hit only values (recomputed and reported, or not read at all by the cached re-run's replay)
    # or the database is refused with what to do; never a traceback
    assert rc == 0 or rc == Exit.IO and "delete" in err, (rc, err)


def test_cache_error_is_a_diagnostic_with_what_to_do(tmp_path):
    bad = tmp_path / "c.sqlite"
    bad.write_bytes(b"not a database" * 100)
    with pytest.raises(CacheError) as e:
        Cache(bad)
    assert "delete the file" in str(e.value)


def _all_intact(cache: Path) -> bool:
    with Cache(cache) as c:
        keys = [k for (k,) in c._query("SELECT key FROM entries")]
        return not c.verify(keys)


def _memo_blob_flip(cache: Path) -> None:
    """Flip a bit in one image's memo (not in the arm's header-probe record, also of kind 'image')."""
    db = sqlite3.connect(cache)
    key, blob = db.execute("SELECT key, value FROM entries WHERE kind='image' AND key NOT IN "
                           "(SELECT key FROM provenance WHERE slot LIKE 'probe %') ORDER BY key LIMIT 1").fetchone()
    bad = bytearray(blob)
    bad[len(bad) // 2] ^= 0x04
    db.execute("UPDATE entries SET value=? WHERE key=?", (bytes(bad), key))
    db.commit()
    db.close()


def test_a_damaged_memo_is_not_replayed(tmp_path, capsys):
    """The memo itself is a cached value with a checksum: damaged, its image goes through its steps."""
    spec = project(tmp_path / "p")
    cache = tmp_path / "c.sqlite"
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "a"), "--cache", str(cache), "--quiet"]) == 0
    _memo_blob_flip(cache)
    capsys.readouterr()
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "b"), "--cache", str(cache), "--quiet"]) == 0
    assert "1 cached value(s)" in capsys.readouterr().err
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a/tables/scores.parquet"),
                                  pd.read_parquet(tmp_path / "b/tables/scores.parquet"))
    assert _all_intact(cache)


def test_plan_cache_does_not_count_an_image_whose_values_are_damaged(tmp_path):
    from scoreaudit import api
    from scoreaudit.runtime.cache_status import cache_status

    spec = project(tmp_path / "p")
    cache = tmp_path / "c.sqlite"
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "a"), "--cache", str(cache), "--quiet"]) == 0
    ir, plan = api.compile(spec, tables=False)
    cached, total = cache_status(ir, plan, spec_path=spec, cache_path=cache)["images"]["real"]
    assert cached == total
    _memo_blob_flip(cache)
    assert cache_status(ir, plan, spec_path=spec, cache_path=cache)["images"]["real"] == [total - 1, total]


def test_a_damaged_step_value_never_reaches_the_tables_through_a_memo(tmp_path, capsys):
    """A memo holds its own checksummed copies of the rows: replayed, a damaged step value is not
    read; once the memos are gone (a spec change), the step reads, reports and replaces it."""
    spec = project(tmp_path / "p")
    cache = tmp_path / "c.sqlite"
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "a"), "--cache", str(cache), "--quiet"]) == 0
    _score_blob_flip(cache)
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "b"), "--cache", str(cache), "--quiet"]) == 0
    a = pd.read_parquet(tmp_path / "a/tables/scores.parquet")
    pd.testing.assert_frame_equal(a, pd.read_parquet(tmp_path / "b/tables/scores.parquet"))
    _drop_memos(cache)
    capsys.readouterr()
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "c"), "--cache", str(cache), "--quiet"]) == 0
    assert "1 cached value(s)" in capsys.readouterr().err
    pd.testing.assert_frame_equal(a, pd.read_parquet(tmp_path / "c/tables/scores.parquet"))
    assert _all_intact(cache)


@pytest.mark.slow  # Ray (12 s measured)
def test_ray_tasks_check_checksums_and_the_driver_replaces_the_value(tmp_path, capsys):
    """Under --executor ray the tasks read stored bytes and check them (the shared `open_rows`); the
    damaged value is recomputed, reported by the run and replaced by the driver."""
    pytest.importorskip("ray", reason="the ray extra is installed by scripts/bootstrap.sh test")
    spec = project(tmp_path / "p")
    cache = tmp_path / "c.sqlite"
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "a"), "--cache", str(cache), "--quiet"]) == 0
    db = sqlite3.connect(cache)
    db.execute("DELETE FROM entries WHERE kind='image'")  # no memos: every image goes to a Ray task
    db.commit()
    db.close()
    _score_blob_flip(cache)
    capsys.readouterr()
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "b"), "--cache", str(cache), "--quiet",
                     "--executor", "ray"]) == 0
    assert "1 cached value(s)" in capsys.readouterr().err
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "a/tables/scores.parquet"),
                                  pd.read_parquet(tmp_path / "b/tables/scores.parquet"))
    run = json.loads((tmp_path / "b/run.json").read_text())
    assert run["counts"]["corrupt_cache_values"] == 1
    assert "cached value corrupt" in (tmp_path / "b/run.log").read_text()
    assert _all_intact(cache)  # the driver wrote the recomputed value over the damaged one
