"""The long runtime tables, held as columns and built by polars, are the bytes the dict-row Arrow
build wrote (issue 33): `to_arrow` over dict rows is that build, kept for the images table and for
NaN keys, and is the reference here."""

from __future__ import annotations

import pickle
import random

import numpy as np

from scoreaudit.bundletables import write_parquet
from scoreaudit.runtime.tables import Tables, missing_as_null, to_arrow, write_tables


def _fill(rng: random.Random) -> tuple[Tables, dict[str, list[dict]]]:
    t = Tables()
    ids = [f"i{k}" for k in range(25)] + ["é", "Z", "a b", "ß", "日本"]  # code-point order, not locale
    rows: dict[str, list[dict]] = {"scores": [], "measures": [], "regions": []}
    for iid in rng.sample(ids, len(ids)):
        for op, d in (("original", 0.0), ("light", -5.0), ("light", 5.0), ("hue", -0.5)):
            for s in ("s2", "s1"):
                v = float("nan") if rng.random() < 0.1 else rng.gauss(0, 1)
                t.add_score("a", iid, op, d, s, v)
                rows["scores"].append({"arm": "a", "image_id": iid, "operator": op, "dose": d, "scorer": s, "score": v})
            t.add_measure("a", iid, op, d, "ita", "measure", rng.random())
            rows["measures"].append({"arm": "a", "image_id": iid, "operator": op, "dose": d, "name": "ita",
                                     "role": "measure", "value": t.measures.cols["value"][-1]})
        t.add_region("a", iid, "skin", 0.25)
        rows["regions"].append({"arm": "a", "image_id": iid, "region": "skin", "coverage": 0.25})
    return t, rows


def _reference(name: str, rows: list[dict], tmp_path, tag: str) -> bytes:
    path = tmp_path / tag / f"{name}.parquet"
    write_parquet(missing_as_null(name, to_arrow(name, rows)), path)
    return path.read_bytes()


def test_polars_build_writes_the_dict_row_bytes(tmp_path):
    t, rows = _fill(random.Random(5))
    out = write_tables(t, tmp_path / "new")
    for name in ("scores", "measures", "regions"):
        assert out[name].read_bytes() == _reference(name, rows[name], tmp_path, "ref"), name


def test_replayed_columns_and_rows_together(tmp_path):
    t, rows = _fill(random.Random(6))
    extra = [("b", f"r{k}", "light", 5.0, "s1", float(k)) for k in range(7)]
    cols = list(zip(*extra))
    t.extend_columns("scores", {"arm": list(cols[0]), "image_id": list(cols[1]), "operator": list(cols[2]),
                                "dose": np.array(cols[3]), "scorer": list(cols[4]), "score": np.array(cols[5])})
    ref = rows["scores"] + [dict(zip(("arm", "image_id", "operator", "dose", "scorer", "score"), r)) for r in extra]
    assert t.counts()["scores"] == len(ref)
    out = write_tables(t, tmp_path / "new")
    assert out["scores"].read_bytes() == _reference("scores", ref, tmp_path, "ref")


def test_nan_key_keeps_the_python_order(tmp_path):
    t = Tables()
    for iid, d in (("b", float("nan")), ("a", 1.0), ("a", float("nan")), ("a", -1.0)):
        t.add_score("x", iid, "op", d, "s", 1.0)
    out = write_tables(t, tmp_path / "new")
    assert out["scores"].read_bytes() == _reference("scores", list(t.scores), tmp_path, "ref")


def test_rows_survive_a_worker_round_trip():
    """Ray ships a worker's tables pickled and the driver extends its own with them."""
    worker, driver = Tables(), Tables()
    rows = [("a", f"i{k}", "light", float(k), "s1", k / 3) for k in range(9)]
    for r in rows:
        worker.add_score(*r)
    driver.add_score("z", "first", "op", 0.0, "s", 2.0)
    driver.scores.extend(pickle.loads(pickle.dumps(worker.scores)))
    driver.scores.extend([dict(zip(driver.scores.names, ("z", "dict", "op", 1.0, "s", None)))])  # dict rows too
    got = list(driver.scores)
    assert len(driver.scores) == len(got) == 11
    assert [tuple(r.values()) for r in got[1:10]] == rows
    assert got[10]["image_id"] == "dict" and np.isnan(got[10]["score"])  # a missing float is NaN, then null
    assert [r["image_id"] for r in driver.scores[1:3]] == ["i0", "i1"]


def _pyarrow_manifest_array(values):
    """The manifest column as pyarrow's own conversion built it before polars did (the reference)."""
    import math

    import pyarrow as pa

    vals = [None if v is None or (isinstance(v, float) and math.isnan(v)) else
            (v.item() if isinstance(v, np.generic) else v) for v in values]
    kinds = {type(v) for v in vals if v is not None}
    if len(kinds) <= 1:
        try:
            return pa.array(vals)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            pass
    if kinds <= {int, float}:
        return pa.array([None if v is None else float(v) for v in vals], type=pa.float64())
    return pa.array([None if v is None else str(v) for v in vals], type=pa.string())


def test_columns_built_by_polars_equal_pyarrows_own_conversion():
    """What manifests hold: ints with gaps, ints past int64, mixed kinds, all-missing columns, numpy
    scalars, bytes and dates (those keep pyarrow's path), NaN."""
    import datetime

    import pyarrow as pa

    from scoreaudit.runtime.tables import _manifest_array, typed_array

    for values in ([1, 2**70], [1, None], ["x", 1], [None, None], [np.int64(3), None], [1.0, 2], [True, 1],
                   [b"x"], [datetime.date(2020, 1, 1)], [float("nan"), 2.5], [np.str_("a"), "b"], [2**63, -1],
                   [True, None, False], ["é", "日本", None], []):
        got, want = _manifest_array(list(values)), _pyarrow_manifest_array(list(values))
        assert got.type == want.type and got.equals(want), values
    for values, type_ in (([1, None, 3], pa.int64()), (["a", None], pa.string()), ([1.5, float("nan"), None], pa.float64()),
                          ([None], pa.bool_()), ([], pa.string())):
        got, want = typed_array(values, type_), pa.array(values, type=type_)

        def seen(arr):
            return [("NaN" if isinstance(v, float) and v != v else v) for v in arr.to_pylist()]

        assert got.type == want.type and seen(got) == seen(want) and got.null_count == want.null_count, values


def test_writing_the_tables_does_not_import_pandas(tmp_path):
    """A cached re-run with nothing changed never needs pandas (0.15 s to import): building the images and
    exclusions tables from Python rows, and the nulls of the value columns, go through polars and Arrow."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from scoreaudit.runtime.tables import Tables, write_tables
        t = Tables()
        for k in range(5):
            t.add_image(arm="a", image_id=f"i{{k}}", row=k, cluster=f"c{{k % 2}}", content_hash="h", width=8, height=8,
                        manifest={{"tone": "dark" if k % 2 else None, "age": k, "w": 0.5 * k}})
            t.add_score("a", f"i{{k}}", "original", 0.0, "s", float("nan") if k == 2 else 0.1 * k)
            t.add_measure("a", f"i{{k}}", "original", 0.0, "ita", "measure", 1.0)
        t.add_exclusion("a", "i9", 9, "decode", "unreadable")
        write_tables(t, Path({str(tmp_path)!r}))
        assert "pandas" not in sys.modules, "pandas was imported"
        print("ok")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
    import pandas as pd

    images = pd.read_parquet(tmp_path / "images.parquet")
    assert list(images["age"]) == [0, 1, 2, 3, 4] and images["tone"].isna().sum() == 3
    assert pd.read_parquet(tmp_path / "scores.parquet")["score"].isna().sum() == 1
    assert len(pd.read_parquet(tmp_path / "exclusions.parquet")) == 1
