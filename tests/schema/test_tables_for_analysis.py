"""The bundle's tables are ready for analysis: typed columns, no JSON inside strings, null for missing.

On the demo audit's real bundle (the same small run as test_results_schema.py):
a cell's test is a struct, its axis and where lists, its detail a struct of
the same numbers results.json holds; validity's checks a list of structs;
every cell has a standard error, checked against the per-cluster contrasts
it came from; no float holds NaN; and every table's every column is in
spec/tables.md, which is generated (`python -m scoreaudit.bundleschema`).
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from scoreaudit import api, bundleschema
from scoreaudit.bundletables import rows_table

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e_precomputed"))

import e2e_helpers as e2e  # noqa: E402


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("demo_tables")
    spec = importlib.util.spec_from_file_location("make_demo_data", ROOT / "scripts" / "make_demo_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.build(folder / "data" / "demo", n_real=6, n_prompts=3)
    text = (ROOT / "examples" / "demo.audit").read_text(encoding="utf-8")
    text = text.replace("bootstrap: 2000", "bootstrap: 100").replace("formats: html, pdf", "formats: html")
    api.run(e2e.write_spec(folder, text, name="demo.audit"), out=folder / "out", progress=False,
            render_report=False, device="cpu")
    return folder / "out"


def _results(bundle: Path) -> dict:
    return json.loads((bundle / "results.json").read_text(encoding="utf-8"))


def _leaves(arr: pa.Array, path: str):
    """(path, leaf array) of every scalar leaf of a possibly nested column."""
    if pa.types.is_struct(arr.type):
        for i, f in enumerate(arr.type):
            yield from _leaves(arr.field(i), f"{path}.{f.name}")
    elif pa.types.is_list(arr.type):
        yield from _leaves(arr.flatten(), path + "[]")
    else:
        yield path, arr


def _all_leaves(bundle: Path):
    for p in sorted((bundle / "tables").glob("*.parquet")):
        t = pq.read_table(p)
        for name in t.column_names:
            for path, leaf in _leaves(t.column(name).combine_chunks(), name):
                yield p.stem, path, leaf


def test_no_json_inside_strings(bundle):
    found = []
    for table, path, leaf in _all_leaves(bundle):
        if not pa.types.is_string(leaf.type):
            continue
        for v in leaf.to_pylist():
            if isinstance(v, str) and v[:1] in "[{":
                try:
                    json.loads(v)
                except ValueError:
                    continue
                found.append((table, path, v[:60]))
                break
    assert found == []


def test_missing_numbers_are_null_never_nan(bundle):
    nan = [(t, p) for t, p, leaf in _all_leaves(bundle)
           if pa.types.is_floating(leaf.type) and pc.any(pc.is_nan(leaf)).as_py()]
    assert nan == []


def test_cells_test_axis_and_detail_are_typed_and_equal_results_json(bundle):
    cells = pq.read_table(bundle / "tables" / "cells.parquet")
    assert pa.types.is_struct(cells.schema.field("test").type)
    assert cells.schema.field("axis").type == pa.list_(pa.string())
    assert pa.types.is_struct(cells.schema.field("detail").type)
    by_id = {c["id"]: c for c in _results(bundle)["cells"]}
    rows = cells.to_pylist()
    assert rows and any(r["axis"] for r in rows)
    for r in rows:
        c = by_id[r["id"]]
        assert r["test"] == {k: c["test"].get(k) for k in r["test"]}, r["id"]
        assert r["axis"] == c["axis"]
        for k, v in c["detail"].items():  # every number of the detail, under its own field
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                assert r["detail"][k] == pytest.approx(v, rel=1e-12), (r["id"], k)


def test_validity_checks_are_a_list_of_structs(bundle):
    t = pq.read_table(bundle / "tables" / "validity.parquet")
    assert t.schema.field("checks").type.value_type.names == ["statistic", "op", "threshold", "value", "held"]
    vals = _results(bundle)["validations"]
    assert [r["checks"] for r in t.to_pylist()] == [v["checks"] for v in vals]


def test_every_cell_has_a_standard_error_and_the_t_cells_equal_their_contrasts(bundle):
    """cells.se was null in every row; now the contrasts' sd/√G where the cell is their mean (planted truth:
    the stored contrasts, recomputed here), and a positive number wherever the estimate is defined."""
    cells = pq.read_table(bundle / "tables" / "cells.parquet").to_pylist()
    with_interval = [c for c in cells if c["estimate"] is not None and c["interval"] != "none"]
    assert len(with_interval) >= 20  # the demo's 28 cells: all but its 4 homogeneous ones (own test, no interval)
    assert [c["id"] for c in with_interval if not (c["se"] is not None and c["se"] > 0)] == []
    contrasts = pq.read_table(bundle / "tables" / "contrasts.parquet").to_pylist()
    checked = 0
    for c in cells:
        xs = [r["value"] for r in contrasts if r["cell"] == c["id"]]
        if len(xs) < 2 or abs(sum(xs) / len(xs) - c["estimate"]) > 1e-9 * max(1.0, abs(c["estimate"])):
            continue
        m = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
        assert c["se"] == pytest.approx(sd / math.sqrt(len(xs)), rel=1e-9), c["id"]
        checked += 1
    assert checked >= 1


def test_every_column_of_every_table_is_in_tables_md(bundle):
    undocumented = []
    for p in sorted((bundle / "tables").glob("*.parquet")):
        if p.stem not in bundleschema.TABLES:
            undocumented.append(p.stem)
            continue
        fixed = p.stem == "images"  # its other columns are the manifests' ("(others)")
        for name in pq.read_schema(p).names:
            if bundleschema.column_doc(p.stem, name) is None and not fixed:
                undocumented.append(f"{p.stem}.{name}")
    assert undocumented == [], "add them to scoreaudit.bundleschema.TABLES, then python -m scoreaudit.bundleschema"


def test_tables_md_is_current():
    assert (ROOT / "spec" / "tables.md").read_text(encoding="utf-8") == bundleschema.tables_reference(), \
        "spec/tables.md is stale: python -m scoreaudit.bundleschema"


@pytest.mark.parametrize("values,kind", [
    ([{"x": 1}, {"x": 2.5}], pa.struct([("x", pa.float64())])),
    ([{"x": {"y": [1, 2]}}, None], pa.struct([("x", pa.struct([("y", pa.list_(pa.int64()))]))])),
    ([[{"a": "u"}], []], pa.list_(pa.struct([("a", pa.string())]))),
    ([[1.0, float("nan")], None], pa.list_(pa.float64())),
])
def test_nested_values_become_nested_types(values, kind):
    t = rows_table([{"zz_new": v} for v in values])
    assert t.schema.field("zz_new").type == kind
    if kind == pa.list_(pa.float64()):
        assert t.column("zz_new").to_pylist() == [[1.0, None], None]  # NaN is null
