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
