"""Every table of a real bundle reads in polars, pandas and duckdb, with real column types.

No column is Null-typed (an all-missing column still says it holds numbers or
text), `se` is a number and `undefined` text, `params` is a struct and `arms` a
list, empty tables keep typed columns, and the three readers agree on the
rows and columns.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scoreaudit.bundletables import SCHEMAS, rows_table


def _tables(folder: Path) -> list[Path]:
    return sorted((folder / "out" / "tables").glob("*.parquet"))


def test_the_bundle_has_the_runtime_and_statistics_tables(computed):
    names = {p.stem for p in _tables(computed[0])}
    assert set(SCHEMAS) | {"cells", "curves"} <= names


def test_every_table_reads_in_polars_pandas_and_duckdb(computed):
    con = duckdb.connect()
    for path in _tables(computed[0]):
        schema = pq.read_schema(path)
        assert not [f.name for f in schema if pa.types.is_null(f.type)], f"{path.name}: Null-typed columns"
        a = pl.read_parquet(path)
        b = pd.read_parquet(path)
        c = con.execute(f"SELECT * FROM read_parquet('{path.as_posix()}')").fetch_df()
        assert list(a.columns) == list(b.columns) == list(c.columns) == schema.names, path.name
        assert len(a) == len(b) == len(c) == pq.read_metadata(path).num_rows, path.name
        described = {r[0]: r[1] for r in con.execute(
            f"DESCRIBE SELECT * FROM read_parquet('{path.as_posix()}')").fetchall()}
        assert "NULL" not in {t.upper() for t in described.values()}, (path.name, described)


def test_statistics_columns_have_their_types(computed):
    cells = pq.read_schema(computed[0] / "out" / "tables" / "cells.parquet")
    assert pa.types.is_float64(cells.field("se").type)
    assert pa.types.is_string(cells.field("undefined").type)
    assert pa.types.is_struct(cells.field("params").type)
    assert pa.types.is_list(cells.field("arms").type)
    params = pl.read_parquet(computed[0] / "out" / "tables" / "cells.parquet")["params"]
    assert "operator" in params.struct.fields  # a statistic's arguments read as fields
    con = duckdb.connect()
    ops = con.execute("SELECT DISTINCT params.operator FROM read_parquet(?) WHERE params.operator IS NOT NULL",
                      [str(computed[0] / "out" / "tables" / "cells.parquet")]).fetchall()
    assert ops


def test_empty_tables_keep_typed_columns(tmp_path):
    """An audit without regions or exclusions still writes typed columns (spec/bundle.md)."""
    from scoreaudit.bundletables import CELL_COLUMNS, write_parquet

    for name, schema in SCHEMAS.items():
        write_parquet(rows_table([], schema=schema), tmp_path / f"{name}.parquet")
        assert pq.read_schema(tmp_path / f"{name}.parquet") == schema
    write_parquet(rows_table([], columns=CELL_COLUMNS), tmp_path / "cells.parquet")
    cells = pq.read_schema(tmp_path / "cells.parquet")
    assert cells.names == list(CELL_COLUMNS)
    assert not [f.name for f in cells if pa.types.is_null(f.type)]
    assert pa.types.is_float64(cells.field("estimate").type) and pa.types.is_string(cells.field("outcome").type)
    for path in tmp_path.glob("*.parquet"):
        assert len(pl.read_parquet(path)) == len(pd.read_parquet(path)) == 0


@pytest.mark.parametrize("values,kind", [
    ([None, None], pa.string()),
    ([1, None, 3], pa.int64()),
    ([1, 2.5], pa.float64()),
    ([True, None], pa.bool_()),
    ([["a"], None], pa.list_(pa.string())),
    ([{"x": 1}, {"x": "a"}], pa.struct([("x", pa.string())])),  # a field of mixed kinds is text
])
def test_unknown_columns_are_typed_by_what_they_hold(values, kind):
    t = rows_table([{"zz_new": v} for v in values])
    assert t.schema.field("zz_new").type == kind
