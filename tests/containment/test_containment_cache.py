"""Hostile caches: a value whose checksum holds is still bounded by what it declares and what the image is."""

from __future__ import annotations

import io
import json
import sqlite3
import zlib

import numpy as np
import pytest

from containment_helpers import MASK_SPEC, project
from scoreaudit import cli
from scoreaudit.runtime.cache import Cache, CorruptValue, seal, unseal
from scoreaudit.keys import step_key


def _npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def _bomb(header_of: np.ndarray, extra: int) -> bytes:
    """A zlib stream of a small array's .npy followed by `extra` zero bytes (streamed: never held whole)."""
    z = zlib.compressobj(1)
    parts = [z.compress(_npy(header_of))]
    chunk = b"\0" * (1 << 20)
    for _ in range(extra >> 20):
        parts.append(z.compress(chunk))
    parts.append(z.flush())
    return b"".join(parts)


def test_a_sealed_zlib_bomb_is_refused_without_inflating_it():
    blob = _bomb(np.zeros((1, 1), np.uint8), 256 << 20)  # 256 MiB of zeros behind a 1×1 header
    assert len(blob) < 2 << 20
    codec, sealed = seal("npy", blob)  # a valid checksum: the cache cannot tell it from a real value
    with pytest.raises(CorruptValue, match="beyond"):
        unseal(codec, sealed)


def test_a_header_declaring_a_huge_array_is_refused():
    z = zlib.compress(_npy(np.zeros(16, np.uint8)).replace(b"(16,)", b"(1099511627776,)"))
    with pytest.raises(CorruptValue, match="declares"):
        unseal(*seal("npy", z))


@pytest.mark.parametrize("shape", [(0,), (3, 5), (65408,), (65536,), (1000, 999), (7, 8193)])
def test_honest_arrays_still_round_trip(shape, tmp_path):
    a = (np.arange(int(np.prod(shape))) % 251).astype(np.uint8).reshape(shape)
    with Cache(tmp_path / "c.sqlite") as c:
        k = step_key("regions", "r", "1", {}, {"s": list(shape)}, slot="s")
        c.stage(k, a)
        c.commit()
    with Cache(tmp_path / "c.sqlite") as c:
        assert np.array_equal(c.lookup([k.key])[k.key][0], a) and not c.corrupt


def test_forged_one_pixel_masks_are_recomputed_not_used(tmp_path, capsys):
    spec = project(tmp_path / "p", spec=MASK_SPEC, n_real=4)
    out = tmp_path / "o"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    honest = json.loads((out / "results.json").read_text())
    cache = spec.parent / ".scoreaudit" / "cache.sqlite"
    db = sqlite3.connect(cache)
    keys = [k for (k,) in db.execute("SELECT key FROM entries WHERE kind='regions'")]
    assert keys
    codec, blob = seal("npy", zlib.compress(_npy(np.zeros((1, 1), np.uint8))))  # "1×1 masks", checksum valid
    db.executemany("UPDATE entries SET codec=?, value=? WHERE key=?", [(codec, blob, k) for k in keys])
    db.execute("DELETE FROM entries WHERE kind='image'")  # no memo replay: the region values are read
    db.commit()
    db.close()
    capsys.readouterr()
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    again = json.loads((out / "results.json").read_text())
    assert again["exclusions"] == honest["exclusions"]  # no image lost to empty forged masks
    assert [c["estimate"] for c in again["cells"]] == [c["estimate"] for c in honest["cells"]]
    assert f"{len(keys)} cached value(s)" in err and "corrupt" in err
