"""The per-image tables of the results bundle (spec/bundle.md), written byte-identically.

Rows accumulate in memory during the run (a few floats per step, never
pixels). The long tables (scores, measures, regions: up to ~100 rows per
image) are held as columns, floats packed 8 bytes each, not one dict per row,
and built by polars (one sort by the key columns, no Python per row).
`write_tables` sorts each table by its key columns, fixes every column's Arrow
type, strips schema metadata and writes with fixed parquet settings, so two
runs over the same inputs — with any batch size — give identical bytes.
"""

from __future__ import annotations

import itertools
import math
from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute  # pa.compute

from scoreaudit.bundletables import SCHEMAS, write_parquet  # part of this module's interface
from scoreaudit.memtrim import trim

RESERVED = ("arm", "image_id", "row", "cluster", "content_hash", "width", "height", "side", "pair_id")

SORT_KEYS: dict[str, tuple[str, ...]] = {
    "images": ("arm", "image_id"),
    "scores": ("arm", "image_id", "operator", "dose", "scorer"),
    "measures": ("arm", "image_id", "operator", "dose", "name", "role"),
    "regions": ("arm", "image_id", "region"),
    "exclusions": ("arm", "image_id", "row", "stage", "reason"),
}

STAGES = ("manifest", "decode", "region", "operator", "measure", "score", "statistic")


class ColumnRows:
    """A long table's rows held as columns: one list per text column, one packed float64 array per
    number column. A row costs ~8 bytes per float and a pointer per text (the arm, id and name
    strings are shared), not a dict; it iterates as dict rows, and `extend` takes another
    ColumnRows (a Ray worker's) or dict rows."""

    def __init__(self, schema: pa.Schema) -> None:
        self.names = tuple(schema.names)
        self.floats = frozenset(f.name for f in schema if pa.types.is_floating(f.type))
        self.cols: dict[str, Any] = {n: array("d") if n in self.floats else [] for n in self.names}
        self._bind()

    def _bind(self) -> None:
        self._appends = tuple(self.cols[n].append for n in self.names)

    def __getstate__(self) -> dict:  # bound appends do not pickle (Ray ships worker tables)
        return {"names": self.names, "floats": self.floats, "cols": self.cols}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._bind()

    def add(self, *values: Any) -> None:
        """One row, values in column order (the float columns take floats)."""
        for append, v in zip(self._appends, values):
            append(v)

    def append(self, row: Mapping[str, Any]) -> None:
        self.add(*(float("nan") if n in self.floats and row.get(n) is None else row.get(n) for n in self.names))

    def extend(self, rows: ColumnRows | list[Mapping[str, Any]]) -> None:
        if isinstance(rows, ColumnRows):
            for n in self.names:
                self.cols[n].extend(rows.cols[n])
            return
        for r in rows:
            self.append(r)

    def extend_columns(self, columns: Mapping[str, Any]) -> None:
        """Rows given as columns (lists, or float arrays for the number columns)."""
        for n, values in columns.items():
            if n in self.floats:
                self.cols[n].frombytes(np.ascontiguousarray(values, dtype=np.float64).tobytes())
            else:
                self.cols[n].extend(values)

    def __len__(self) -> int:
        return len(self.cols[self.names[0]])

    def __getitem__(self, rows: slice) -> ColumnRows:
        """The rows of a slice (the rows a batch added: `memo.Capture`), as another ColumnRows."""
        if not isinstance(rows, slice):
            raise TypeError("ColumnRows is sliced, not indexed (iterate for dict rows)")
        out = ColumnRows.__new__(ColumnRows)
        out.__setstate__({"names": self.names, "floats": self.floats,
                          "cols": {n: self.cols[n][rows] for n in self.names}})
        return out

    def __iter__(self):
        for values in zip(*(self.cols[n] for n in self.names)):
            yield dict(zip(self.names, values))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ColumnRows):
            return self.names == other.names and all(list(self.cols[n]) == list(other.cols[n]) for n in self.names)
        return isinstance(other, list) and list(self) == other

    def frame(self):
        """The rows as a polars DataFrame with the contract's types (floats without a copy per value)."""
        import polars as pl

        data = {n: (pl.Series(n, np.frombuffer(self.cols[n], dtype=np.float64) if len(self.cols[n]) else
                              np.zeros(0), dtype=pl.Float64)
                    if n in self.floats else pl.Series(n, self.cols[n], dtype=_POLARS[n])) for n in self.names}
        return pl.DataFrame(data)


#: The polars type of each text/integer column of the long tables (floats are Float64).
_POLARS: dict[str, Any] = {}


def _polars_types() -> None:
    import polars as pl

    for schema in SCHEMAS.values():
        for f in schema:
            _POLARS.setdefault(f.name, pl.Int64 if pa.types.is_integer(f.type) else pl.Utf8)


#: The long tables held as columns (images and exclusions stay dict rows: one per image, with manifest columns).
COLUMNAR = ("scores", "measures", "regions")


@dataclass
class Tables:
    """Row buffers for the five runtime tables: dict rows for images and exclusions, `ColumnRows`
    for the long tables (scores, measures, regions)."""

    images: list[dict[str, Any]] = field(default_factory=list)
    scores: ColumnRows = field(default_factory=lambda: ColumnRows(SCHEMAS["scores"]))
    measures: ColumnRows = field(default_factory=lambda: ColumnRows(SCHEMAS["measures"]))
    regions: ColumnRows = field(default_factory=lambda: ColumnRows(SCHEMAS["regions"]))
    exclusions: list[dict[str, Any]] = field(default_factory=list)
    replayed: dict[str, dict[str, list]] = field(default_factory=dict)  # table -> column -> chunks (`extend_columns`)

    def add_image(self, *, arm: str, image_id: str, row: int | None, cluster: str, content_hash: str,
                  width: int, height: int, side: str | None = None, pair_id: str | None = None,
                  manifest: Mapping[str, Any] | None = None) -> None:
        rec = {"arm": arm, "image_id": image_id, "row": row, "cluster": cluster,
               "content_hash": content_hash, "width": width, "height": height,
               "side": side, "pair_id": pair_id}
        for col, val in (manifest or {}).items():
            rec[f"m_{col}" if col in RESERVED else str(col)] = val
        self.images.append(rec)

    def add_score(self, arm: str, image_id: str, operator: str, dose: float, scorer: str, score: float) -> None:
        a, i, o, d, s, v = self.scores._appends  # one append per column, no row object (hot: every score)
        a(arm), i(image_id), o(operator), d(float(dose)), s(scorer), v(float(score))

    def add_measure(self, arm: str, image_id: str, operator: str, dose: float, name: str, role: str,
                    value: float) -> None:
        a, i, o, d, n, r, v = self.measures._appends
        a(arm), i(image_id), o(operator), d(float(dose)), n(name), r(role), v(float(value))

    def add_region(self, arm: str, image_id: str, region: str, coverage: float) -> None:
        a, i, r, c = self.regions._appends
        a(arm), i(image_id), r(region), c(float(coverage))

    def add_exclusion(self, arm: str, image_id: str | None, row: int | None, stage: str, reason: str) -> None:
        if stage not in STAGES:
            raise ValueError(f"unknown exclusion stage {stage!r}")
        self.exclusions.append({"arm": arm, "image_id": image_id, "row": row, "stage": stage,
                                "reason": reason})

    def extend_columns(self, name: str, columns: Mapping[str, Any]) -> None:
        """Rows of `scores` or `measures` given as columns (lists or float arrays; a memo's replay:
        no dict per row, one append per column)."""
        have = self.replayed.setdefault(name, {c: [] for c in SCHEMAS[name].names})
        for c, values in columns.items():
            have[c].append(values)

    def counts(self) -> dict[str, int]:
        return {name: len(getattr(self, name)) + self.replayed_rows(name) for name in SCHEMAS}

    def replayed_rows(self, name: str) -> int:
        cols = self.replayed.get(name)
        return sum(len(chunk) for chunk in next(iter(cols.values()))) if cols else 0


def _joined(chunks: list) -> Any:
    """A column's chunks as one list or float array."""
    if chunks and all(isinstance(c, np.ndarray) for c in chunks):
        return np.concatenate(chunks)
    return list(itertools.chain.from_iterable(chunks))


def _is_null(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (
        isinstance(v, np.floating) and np.isnan(v))


#: The Arrow types the tables' columns take, and polars' type for each (`typed_array`).
_VIA_POLARS = {pa.string(): "Utf8", pa.int64(): "Int64", pa.float64(): "Float64", pa.bool_(): "Boolean"}
#: The Arrow type pyarrow's inference gives a column of one Python type (`_manifest_array`).
_INFERRED = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}


def typed_array(values: list[Any], type: pa.DataType) -> pa.Array:
    """`pa.array(values, type=type)` (None → null, NaN kept) by way of polars: pyarrow's conversion of a
    Python list imports pandas on first use (0.15 s, the only reason a cached re-run imported pandas);
    polars' conversion does not. Types outside `_VIA_POLARS` take pyarrow's own path."""
    name = _VIA_POLARS.get(type)
    if name is None:
        return pa.array(values, type=type)
    import polars as pl

    return pl.Series(values=values, dtype=getattr(pl, name), strict=True).to_arrow().cast(type)


def _manifest_array(values: list[Any]) -> pa.Array:
    """One manifest column across arms: Arrow's own inference, or strings when types are mixed."""
    vals = [None if _is_null(v) else (v.item() if isinstance(v, np.generic) else v) for v in values]
    kinds = {type(v) for v in vals if v is not None}
    if not kinds:
        return pa.nulls(len(vals))  # all missing: Arrow's null type, as pa.array infers it
    if len(kinds) == 1:  # one Python type: Arrow infers int64, float64, bool or string (or its own type)
        (kind,) = kinds
        try:
            return typed_array(vals, _INFERRED[kind]) if kind in _INFERRED else pa.array(vals)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, ValueError, TypeError):
            pass  # an int beyond int64 (polars raises its own errors, ValueError and TypeError subclasses)
    if kinds <= {int, float}:
        return typed_array([None if v is None else float(v) for v in vals], pa.float64())
    return typed_array([None if v is None else str(v) for v in vals], pa.string())


def _sort_rows(rows: list[dict[str, Any]], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    def keyfn(r: dict[str, Any]):
        out = []
        for k in keys:
            v = r.get(k)
            out.append((0, 0) if v is None else (1, v))  # nulls first, stable across runs
        return out

    return sorted(rows, key=keyfn)


def _nan_keys(table: pa.Table, keys: tuple[str, ...]) -> bool:
    return any(pa.types.is_floating(table.column(k).type) and pa.compute.any(pa.compute.is_nan(table.column(k))).as_py()
               for k in keys)


def _sort_table(table: pa.Table, rows: list[dict[str, Any]], keys: tuple[str, ...]) -> pa.Table:
    """`_sort_rows` done by Arrow (a stable sort, nulls first, strings by code point): the same order,
    without a Python key per row (a cached re-run of 1,500 images writes 150,000 rows)."""
    if table.num_rows < 2:
        return table
    if _nan_keys(table, keys):  # NaN in a key column: keep Python's order
        order = {id(r): i for i, r in enumerate(rows)}
        return table.take(pa.array([order[id(r)] for r in _sort_rows(rows, keys)], type=pa.int64()))
    try:  # pyarrow >= 25: null placement per key
        idx = pa.compute.sort_indices(table, sort_keys=[(k, "ascending", "at_start") for k in keys])
    except (TypeError, ValueError, pa.ArrowInvalid):
        idx = pa.compute.sort_indices(table, sort_keys=[(k, "ascending") for k in keys], null_placement="at_start")
    return table.take(idx)


def _long_table(name: str, rows: ColumnRows, columns: Mapping[str, list] | None) -> pa.Table:
    """A long table built and sorted by polars: the rows, then the replayed columns (arrival order, as
    `to_arrow` concatenates them), one stable sort by the key columns with nulls first; strings sort by
    code point in both libraries. A NaN in a key column takes `to_arrow`'s path (Python's order)."""
    import polars as pl

    if not _POLARS:
        _polars_types()
    schema = SCHEMAS[name]
    more = ColumnRows(schema)
    if columns and any(columns.values()):
        more.extend_columns({c: _joined(chunks) for c, chunks in columns.items()})
    frame = pl.concat([rows.frame(), more.frame()]) if len(more) else rows.frame()
    keys = list(SORT_KEYS[name])
    if any(frame[k].is_nan().any() for k in keys if k in rows.floats):
        return to_arrow(name, list(itertools.chain(rows, more)))
    if frame.height > 1:
        frame = frame.sort(keys, nulls_last=False, maintain_order=True)
    return frame.to_arrow().cast(schema)


def to_arrow(name: str, rows: list[dict[str, Any]], columns: Mapping[str, list] | None = None) -> pa.Table:
    """Rows (and rows given as `columns`) → an Arrow table with the contract's schema, sorted by its
    key columns (every table's keys are unique, so the order rows arrived in never shows)."""
    schema = SCHEMAS[name]
    if columns and any(columns.values()):
        extra = pa.Table.from_pydict({c: _joined(chunks) for c, chunks in columns.items()}, schema=schema)
        table = pa.concat_tables([pa.Table.from_pylist(rows, schema=schema), extra])
        if not _nan_keys(table, SORT_KEYS[name]):
            return _sort_table(table, rows, SORT_KEYS[name])
        rows = rows + extra.to_pylist()  # NaN in a key column: Python's order needs every row
    if name != "images":  # built and sorted by Arrow (scores and measures: 100 rows per image)
        table = pa.Table.from_arrays([typed_array([r.get(f.name) for r in rows], f.type) for f in schema],
                                     schema=schema)
        return _sort_table(table, rows, SORT_KEYS[name])
    rows = _sort_rows(rows, SORT_KEYS[name])  # one row per image, with the manifest's own columns
    arrays = [typed_array([r.get(f.name) for r in rows], f.type) for f in schema]
    fields = list(schema)
    extra = sorted({k for r in rows for k in r} - set(schema.names))
    for col in extra:
        arr = _manifest_array([r.get(col) for r in rows])
        arrays.append(arr)
        fields.append(pa.field(col, arr.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


#: Value columns whose missing values (NaN in memory) are stored as nulls: SQL's count() and avg() skip a
#: null but count a NaN and return NaN (spec/bundle.md). Readers get NaN back (pandas), so statistics read
#: the same numbers either way.
MISSING_AS_NULL: dict[str, tuple[str, ...]] = {"scores": ("score",), "measures": ("value",)}


def missing_as_null(name: str, table: pa.Table) -> pa.Table:
    """`table` with NaN in its value columns replaced by null (the columns keep their float64 type)."""
    for col in MISSING_AS_NULL.get(name, ()):
        i = table.schema.get_field_index(col)
        arr = table.column(i)
        table = table.set_column(i, table.schema.field(i), pa.compute.if_else(  # pa.nulls, not pa.scalar: no pandas
            pa.compute.is_nan(arr), pa.nulls(len(arr), arr.type), arr))
    return table


def write_tables(tables: Tables, tables_dir: Path) -> dict[str, Path]:
    out = {}
    for name in SCHEMAS:
        path = tables_dir / f"{name}.parquet"
        rows, replayed = getattr(tables, name), tables.replayed.get(name)
        table = (_long_table(name, rows, replayed) if isinstance(rows, ColumnRows)
                 else to_arrow(name, rows, replayed))
        write_parquet(missing_as_null(name, table), path)
        out[name] = path
        del table
        trim()  # each table's build copies go back before the next one is built (memtrim.py)
    return out
