"""The bundle's parquet tables (spec/bundle.md, spec/tables.md): real column types, written byte-identically.

The runtime's tables have fixed schemas (`SCHEMAS`); the statistics' tables
(cells, curves, ...) have the columns their rows carry. Either way every
column gets a real type, also when all its values are missing or the table
has no rows, so polars, pandas and duckdb read a number column as numbers:
`COLUMN_TYPES` (and `TABLE_TYPES`, per table) types the columns that can be
empty, the others are typed by what they hold (all missing: text). Nothing is
JSON inside a string: a dict becomes a struct (one field per key, nested
dicts nested structs: `params`, `detail`), a list a list column (`arms`,
`axis`, `where`, `checks` a list of structs), a cell's `test` the struct of
`TestIR`. Only a field whose values mix kinds (a number in one row, a text in
another) is text, each value written as text. Missing values, NaN included,
are null. Parquet settings are fixed and schema metadata dropped, so two
runs give identical bytes. `TABLE_DOCS` describes every table's columns, with
units; spec/tables.md is generated from it (`python -m scoreaudit.bundleschema`).
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMAS: dict[str, pa.Schema] = {
    "images": pa.schema([("arm", pa.string()), ("image_id", pa.string()), ("row", pa.int64()),
                         ("cluster", pa.string()), ("content_hash", pa.string()),
                         ("width", pa.int64()), ("height", pa.int64()),
                         ("side", pa.string()), ("pair_id", pa.string())]),
    "scores": pa.schema([("arm", pa.string()), ("image_id", pa.string()), ("operator", pa.string()),
                         ("dose", pa.float64()), ("scorer", pa.string()), ("score", pa.float64())]),
    "measures": pa.schema([("arm", pa.string()), ("image_id", pa.string()), ("operator", pa.string()),
                           ("dose", pa.float64()), ("name", pa.string()), ("role", pa.string()),
                           ("value", pa.float64())]),
    "regions": pa.schema([("arm", pa.string()), ("image_id", pa.string()), ("region", pa.string()),
                          ("coverage", pa.float64())]),
    "exclusions": pa.schema([("arm", pa.string()), ("image_id", pa.string()), ("row", pa.int64()),
                             ("stage", pa.string()), ("reason", pa.string())]),
}
#: `tables/probe.parquet`, written only by audits with optimisation probes (runtime/probe.py, stats/probes.py):
#: one row per (probe, prompt, seed, iteration, measure, label); the scorer's own score is measure `score`.
PROBE_SCHEMA = pa.schema([("probe", pa.string()), ("scorer", pa.string()), ("prompt", pa.string()),
                          ("cluster", pa.string()), ("seed", pa.int64()), ("iteration", pa.int64()),
                          ("measure", pa.string()), ("label", pa.string()), ("value", pa.float64())])

#: `tables/probe_prompts.parquet`, beside probe.parquet: each probe prompt's attributes (a template's factor
#: levels, a prompts table's other columns), one row per (probe, cluster, column); what `where` selects by.
PROBE_PROMPTS_SCHEMA = pa.schema([("probe", pa.string()), ("cluster", pa.string()), ("prompt", pa.string()),
                                  ("column", pa.string()), ("value", pa.string())])

_FLOAT = ("estimate", "ci_low", "ci_high", "ci_level", "p", "q", "se", "mean", "dose", "value", "score",
          "coverage", "fi", "asymmetry", "asym_ci_low", "asym_ci_high", "asym_p", "ratio", "fi_operator",
          "fi_placebo", "net", "p_greater_0", "p_less_0", "argmax_drift", "argmax_ci_low", "argmax_ci_high",
          "random_drift", "random_ci_low", "random_ci_high", "theta_source", "theta_target", "p_source",
          "p_target", "p_difference", "difference", "difference_ci_low", "difference_ci_high", "q_source",
          "q_target", "ci_source_low", "ci_source_high", "ci_target_low", "ci_target_high", "pooled",
          "omnibus_p", "r2", "monotonic", "slope", "beta")
_INT = ("claim", "n_clusters", "n", "n_groups", "n_images", "row", "width", "height")
_BOOL = ("passed", "overlaps_pooled")
_TEXT = ("id", "hypothesis", "scorer", "arm", "statistic", "inner", "claim_text", "outcome", "method",
         "undefined", "family", "sentence", "operator", "placebo_of", "placebo", "selection", "measure",
         "cell", "source", "target", "class", "q_family", "by", "stratum", "cluster", "image_id", "stage",
         "reason", "name", "role", "region")
#: Types of columns that may be all missing in a bundle (so they still read as what they are).
COLUMN_TYPES: dict[str, pa.DataType] = {
    **{c: pa.float64() for c in _FLOAT}, **{c: pa.int64() for c in _INT}, **{c: pa.bool_() for c in _BOOL},
    **{c: pa.string() for c in _TEXT}, "arms": pa.list_(pa.string()),
}
#: A cell's `test`: compiler.ir.TestIR's fields (how the estimate is judged).
TEST_TYPE = pa.struct([("kind", pa.string()), ("threshold", pa.float64()), ("low", pa.float64()),
                       ("high", pa.float64()), ("strict", pa.bool_()), ("text", pa.string())])
#: One check of a `validate` line (validity.checks).
CHECK_TYPE = pa.struct([("statistic", pa.string()), ("op", pa.string()), ("threshold", pa.float64()),
                        ("value", pa.float64()), ("held", pa.bool_())])
#: Per-table column types, over COLUMN_TYPES (a name that means different things in different tables).
TABLE_TYPES: dict[str, dict[str, pa.DataType]] = {
    "cells": {"test": TEST_TYPE, "axis": pa.list_(pa.string()), "where": pa.list_(pa.list_(pa.string()))},
    "validity": {"checks": pa.list_(CHECK_TYPE)},
}
#: The cells table's columns, for an audit with no cells (a table with no rows keeps its columns).
CELL_COLUMNS = ("id", "hypothesis", "claim", "scorer", "arm", "arms", "statistic", "params", "inner",
                "claim_text", "test", "estimate", "ci_low", "ci_high", "ci_level", "p", "q", "outcome", "method",
                "se", "undefined", "axis", "detail", "family", "sentence")


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _json(v: Any) -> str:
    return json.dumps(v, sort_keys=True, allow_nan=False, default=str)


def _nested(values: Sequence[Any]) -> pa.Array:
    """Values typed by what they hold, nested: dicts → a struct (keys sorted), lists → a list, scalars their kind.

    A field whose values mix kinds is text (each value as text); all missing: text."""
    present = [v for v in values if not _missing(v)]
    if not present:
        return pa.nulls(len(values), pa.string())
    if all(isinstance(v, Mapping) for v in present):
        keys = sorted({str(k) for v in present for k in v})
        if not keys:  # parquet stores no struct without fields
            return pa.nulls(len(values), pa.string())
        children = [_nested([v.get(k) if isinstance(v, Mapping) else None for v in values]) for k in keys]
        return pa.StructArray.from_arrays(children, fields=[pa.field(k, c.type) for k, c in zip(keys, children)],
                                          mask=pa.array([not isinstance(v, Mapping) for v in values]))
    if all(isinstance(v, (list, tuple)) for v in present):
        flat = [x for v in values if isinstance(v, (list, tuple)) for x in v]
        offsets, n = [0], 0
        for v in values:
            n += len(v) if isinstance(v, (list, tuple)) else 0
            offsets.append(n)
        inner = _nested(flat) if flat else pa.nulls(0, pa.string())
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), inner,
                                        mask=pa.array([not isinstance(v, (list, tuple)) for v in values]))
    kinds = {_scalar_kind(v) for v in present}
    if None not in kinds and (kinds <= {"int", "float"} or len(kinds) == 1):
        kind = ("int" if kinds == {"int"} else "float") if kinds <= {"int", "float"} else kinds.pop()
        conv = {"int": int, "float": float, "bool": bool, "str": str}[kind]
        return pa.array([None if _missing(v) else conv(v) for v in values], type=_ARROW[kind])
    return pa.array([None if _missing(v) else _text(v) for v in values], type=pa.string())


def _scalar_kind(v: Any) -> str | None:
    if isinstance(v, bool) or type(v).__name__ == "bool_":  # numpy's bool is no `bool`
        return "bool"
    if isinstance(v, numbers.Integral):
        return "int"
    if isinstance(v, numbers.Real):
        return "float"
    if isinstance(v, str):
        return "str"
    return None


_ARROW = {"bool": pa.bool_(), "int": pa.int64(), "float": pa.float64(), "str": pa.string()}


def _text(v: Any) -> str:
    return v if isinstance(v, str) else _json(v) if isinstance(v, (dict, list, tuple)) else str(v)


def _column(name: str, values: Sequence[Any], types: Mapping[str, pa.DataType] | None = None) -> pa.Array:
    typ = (types or {}).get(name) or COLUMN_TYPES.get(name)
    if typ is not None:
        return _typed(typ, values)
    return _nested(values)


def _typed(typ: pa.DataType, values: Sequence[Any]) -> pa.Array:
    """Values as a column of a known type (missing values and NaN null)."""
    if pa.types.is_floating(typ):
        return pa.array([None if _missing(v) else float(v) for v in values], type=typ)
    if pa.types.is_integer(typ):
        return pa.array([None if _missing(v) else int(v) for v in values], type=typ)
    if pa.types.is_boolean(typ):
        return pa.array([None if _missing(v) else bool(v) for v in values], type=typ)
    if pa.types.is_string(typ):
        return pa.array([None if _missing(v) else _text(v) for v in values], type=typ)
    return pa.array([_shaped(typ, v) for v in values], type=typ)


def _shaped(typ: pa.DataType, v: Any) -> Any:
    """A value (dict, list, scalar) as nested Python values of `typ`: a struct takes its fields only."""
    if _missing(v):
        return None
    if pa.types.is_struct(typ):
        return {f.name: _shaped(f.type, v.get(f.name)) for f in typ} if isinstance(v, Mapping) else None
    if pa.types.is_list(typ):
        return [_shaped(typ.value_type, x) for x in v]
    if pa.types.is_floating(typ):
        return float(v)
    if pa.types.is_integer(typ):
        return int(v)
    if pa.types.is_boolean(typ):
        return bool(v)
    return _text(v)


def rows_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None,
               schema: pa.Schema | None = None, table: str | None = None) -> pa.Table:
    """Rows (dicts) → an Arrow table with real types; `schema` fixes them, else `TABLE_TYPES[table]`,
    `COLUMN_TYPES` and the values.

    Columns keep their first-seen order (or `columns`, used as is when there are no rows).
    """
    rows = list(rows)
    if schema is not None:
        return pa.Table.from_arrays([_typed(f.type, [r.get(f.name) for r in rows]) for f in schema],
                                    schema=schema)
    names = list(dict.fromkeys(k for r in rows for k in r)) or list(columns or ())
    types = TABLE_TYPES.get(table or "", {})
    arrays = [_column(n, [r.get(n) for r in rows], types) for n in names]
    return pa.Table.from_arrays(arrays, names=names)


def write_parquet(table: pa.Table, path: Path) -> None:
    """Fixed settings and no metadata; written to a temporary file, then renamed into place."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    tmp = Path(name)  # beside the target, then renamed over it: a link at `path` is replaced, not followed
    try:
        pq.write_table(table.replace_schema_metadata(None), tmp, compression="zstd", compression_level=3,
                       use_dictionary=True, write_statistics=True, version="2.6",
                       data_page_version="1.0", store_schema=False)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
