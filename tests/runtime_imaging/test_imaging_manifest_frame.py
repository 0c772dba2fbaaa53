"""Manifests are read with polars and checked a column at a time, with the values and messages they always had.

The reference for cell values is pandas' CSV reader (what manifests were read with before): every
value of a messy CSV/TSV must come out the same. Row problems planted in a large manifest come back
with their row numbers, in row order.
"""

from __future__ import annotations

import io
import json
import math
import random

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from scoreaudit.runtime.manifests import load_manifest
from scoreaudit.runtime.manifest_frame import read_manifest

from test_imaging_manifest import images_arm, pairs_arm

CELLS = ["1", "2", "-3", "0.5", "1e3", " 4", "inf", "", "NA", "n/a", "null", "nan", "True", "false", "TRUE",
         "x", "007", " y ", "#N/A", "None"]


def _pandas(data: bytes, sep: str, text) -> list[dict]:
    header = pd.read_csv(io.BytesIO(data), nrows=0, sep=sep)
    df = pd.read_csv(io.BytesIO(data), sep=sep, dtype={c: str for c in text if c in header.columns})

    def plain(v):
        if isinstance(v, np.generic):
            v = v.item()
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

    return [{k: plain(v) for k, v in r.items()} for r in df.to_dict(orient="records")]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sep", [",", "\t"])
def test_cell_values_match_the_pandas_reader(tmp_path, seed, sep):
    rng = random.Random(seed)
    cols = ["id", "path", "c1", "c2", "c3", "c4"]
    kinds = {c: rng.sample(CELLS, rng.randint(1, 4)) for c in cols}
    lines = [sep.join(cols)]
    for _ in range(rng.randint(1, 40)):
        lines.append(sep.join(rng.choice(kinds[c]) for c in cols))
        if rng.random() < 0.1:
            lines.append("")  # blank lines are not rows
    data = ("\n".join(lines) + "\n").encode()
    path = tmp_path / ("m.csv" if sep == "," else "m.tsv")
    path.write_bytes(data)
    got = read_manifest(path, ["id", "path"]).to_dicts()
    want = _pandas(data, sep, ["id", "path"])
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w and all(type(g[k]) is type(w[k]) for k in g), (g, w)


def test_json_and_parquet_values(tmp_path):
    recs = [{"id": 7, "n": 1, "f": 1.5, "b": True, "m": "x"}, {"id": "8", "n": None, "f": 2, "b": False, "m": 3},
            {"id": 9.0, "n": 3, "f": None, "b": None, "m": [1, 2]}]
    (tmp_path / "m.json").write_text(json.dumps(recs))
    rows = read_manifest(tmp_path / "m.json", ["id"]).to_dicts()
    assert [r["id"] for r in rows] == ["7", "8", "9"]  # key columns are text: 7, "7" and 7.0 agree
    assert [r["n"] for r in rows] == [1.0, None, 3.0]  # integers with a missing value become floats
    assert [r["f"] for r in rows] == [1.5, 2.0, None]
    assert [r["b"] for r in rows] == [True, False, None] and [r["m"] for r in rows] == ["x", 3, [1, 2]]
    pd.DataFrame({"id": ["a", "b"], "k": pd.array([1, None], dtype="Int64"), "f": [float("nan"), 2.0]}) \
        .to_parquet(tmp_path / "m.parquet")
    rows = read_manifest(tmp_path / "m.parquet", ["id"]).to_dicts()
    assert rows == [{"id": "a", "k": 1.0, "f": None}, {"id": "b", "k": None, "f": 2.0}]


def test_a_ragged_csv_is_e0701_naming_the_manifest(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "m.csv").write_text("id,path\na,a.png,extra\n")
    res = load_manifest(images_arm(folder="data", manifest="data/m.csv"), tmp_path)
    assert [d.code for d in res.diagnostics] == ["E0701"]
    assert "cannot read manifest 'data/m.csv'" in res.diagnostics[0].message


def test_row_problems_of_a_large_manifest_come_back_by_row_in_order(tmp_path):
    """5,000 rows with planted missing ids, repeated ids, missing paths and missing files."""
    folder = tmp_path / "imgs"
    folder.mkdir()
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(folder / "ok.png")
    n = 5000
    ids = [f"i{k}" for k in range(n)]
    paths = ["ok.png"] * n
    missing_id = {10, 999, 4321}
    repeated = {20: 3, 2000: 1500}  # row index -> index of the row whose id it repeats
    missing_path = {30, 3000}
    missing_file = {40, 4999}
    for k in missing_id:
        ids[k] = ""
    for k, of in repeated.items():
        ids[k] = ids[of]
    for k in missing_path:
        paths[k] = ""
    for k in missing_file:
        paths[k] = f"gone{k}.png"
    pd.DataFrame({"id": ids, "path": paths}).to_csv(tmp_path / "m.csv", index=False)
    res = load_manifest(images_arm(folder="imgs", manifest="m.csv"), tmp_path)
    assert [(e.row, e.reason.split(" (")[0]) for e in res.exclusions] == sorted(
        [(k + 1, f"row {k + 1} has no value in id column 'id'") for k in missing_id]
        + [(k + 1, f"row {k + 1}") for k in missing_path]
        + [(k + 1, "image file not found") for k in missing_file])
    assert [d.message for d in res.diagnostics] == [
        f"duplicate image id '{ids[k]}' in manifest 'm.csv': row {of + 1} and row {k + 1}"
        for k, of in sorted(repeated.items())]
    bad = missing_id | set(repeated) | missing_path | missing_file
    assert [r.row for r in res.records] == [k + 1 for k in range(n) if k not in bad]


def test_pairs_and_imageless_pairs_share_the_id_checks(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    for name in ("a.png", "b.png"):
        Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(folder / name)
    pd.DataFrame({"id": ["x", "x", "", "y"], "l": ["a.png"] * 4, "r": ["b.png", "b.png", "b.png", "nope.png"]}) \
        .to_csv(folder / "pairs.csv", index=False)
    res = load_manifest(pairs_arm(manifest="p/pairs.csv", preferred="l", other="r"), tmp_path)
    assert [d.message for d in res.diagnostics] == [
        "duplicate image id 'x' in manifest 'p/pairs.csv': row 1 and row 2"]
    assert [(e.image_id, e.row) for e in res.exclusions] == [(None, 3), ("y:other", 4), ("y:preferred", 4)]
    assert [r.image_id for r in res.records] == ["x:preferred", "x:other"]
    res = load_manifest(pairs_arm(manifest="p/pairs.csv", preferred="l", other="r", images=False), tmp_path)
    assert [d.code for d in res.diagnostics] == ["E0703", "E0708"]
    assert [r.image_id for r in res.records] == ["x:preferred", "x:other", "y:preferred", "y:other"]


@pytest.mark.parametrize("seed", range(8))
def test_table_cells_are_read_as_written_like_pandas(seed):
    """tablefile.delimited_frame (long tables and manifests) against pandas with NA parsing off."""
    from scoreaudit.runtime.tablefile import delimited_frame

    rng = random.Random(seed)
    cells = ["1", "", "NA", "nan", " x ", "007", '"q,uoted"', '"multi\nline"', '"two\n\nlines"', "é", '""']
    for _ in range(40):
        sep = rng.choice([",", "\t"])
        cols = [f"c{i}" for i in range(rng.randint(2, 4))]
        lines = [sep.join(cols)]
        for _ in range(rng.randint(0, 6)):
            lines.append(sep.join(rng.choice(cells) for _ in cols))
            if rng.random() < 0.15:
                lines.append(rng.choice(["", "  "]))
        data = ("\n".join(lines) + "\n").encode()
        if rng.random() < 0.2:
            data = b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n")
        want = pd.read_csv(io.BytesIO(data), sep=sep, dtype=str, keep_default_na=False, na_filter=False,
                           encoding="utf-8-sig")
        got = delimited_frame(data, sep)
        assert got.columns == list(want.columns)
        assert [list(r) for r in got.iter_rows()] == [list(r) for r in want.itertuples(index=False, name=None)]
