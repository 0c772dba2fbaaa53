"""The bundle's parquet tables (spec/bundle.md): real column types, written byte-identically.

The runtime's tables have fixed schemas (`SCHEMAS`); the statistics' tables
(cells, curves, ...) have the columns their rows carry. Either way every
column gets a real type, also when all its values are missing or the table
has no rows, so polars, pandas and duckdb read a number column as numbers:
`COLUMN_TYPES` types the columns that can be empty, the others are typed by
what they hold (all missing: text). A dict column becomes a struct (`params`:
a statistic's arguments; a field whose values mix kinds is JSON text), a list
of scalars a list column (`arms`). `detail` and `checks` stay JSON text: their
fields differ from one statistic to the next, so a struct would be a wide,
mostly empty union. Parquet settings are fixed and schema metadata dropped,
so two runs give identical bytes.
"""

from __future__ import annotations

import json
import math
import numbers
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

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
_TEXT = ("id", "hypothesis", "scorer", "arm", "statistic", "inner", "claim_text", "test", "outcome", "method",
         "undefined", "axis", "family", "sentence", "operator", "placebo_of", "placebo", "selection", "measure",
         "cell", "source", "target", "class", "q_family", "by", "stratum", "cluster", "image_id", "stage",
         "reason", "name", "role", "region", "detail", "checks")
#: Types of columns that may be all missing in a bundle (so they still read as what they are).
COLUMN_TYPES: dict[str, pa.DataType] = {
    **{c: pa.float64() for c in _FLOAT}, **{c: pa.int64() for c in _INT}, **{c: pa.bool_() for c in _BOOL},
    **{c: pa.string() for c in _TEXT}, "arms": pa.list_(pa.string()),
}
#: Columns kept as JSON text (see the module docstring).
JSON_COLUMNS = ("detail", "checks")
#: The cells table's columns, for an audit with no cells (a table with no rows keeps its columns).
CELL_COLUMNS = ("id", "hypothesis", "claim", "scorer", "arm", "arms", "statistic", "params", "inner",
                "claim_text", "test", "estimate", "ci_low", "ci_high", "ci_level", "p", "q", "outcome", "method",
                "se", "undefined", "axis", "detail", "family", "sentence")


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _json(v: Any) -> str:
    return json.dumps(v, sort_keys=True, allow_nan=False, default=str)


def _struct(values: Sequence[Any]) -> pa.Array:
    """Dicts → a struct column: one field per key (sorted); a field of mixed or nested values is JSON text."""
    keys = sorted({k for v in values if isinstance(v, dict) for k in v})
    fields, columns = [], []
    for k in keys:
        col = [v.get(k) if isinstance(v, dict) else None for v in values]
        kinds = {_scalar_kind(x) for x in col if x is not None}
        if kinds and (kinds <= {"int", "float"} or kinds in ({"str"}, {"bool"})):
            kind = "float" if kinds <= {"int", "float"} else kinds.pop()
            arr = pa.array([None if x is None else (float(x) if kind == "float" else x) for x in col],
                           type=_ARROW[kind])
        elif not kinds:
            arr = pa.array([None] * len(col), type=pa.string())
        else:
            arr = pa.array([None if x is None else _json(x) for x in col], type=pa.string())
        fields.append(pa.field(k, arr.type))
        columns.append(arr)
    if not keys:
        return pa.array([None] * len(values), type=pa.struct([]))
    mask = pa.array([not isinstance(v, dict) for v in values])
    return pa.StructArray.from_arrays(columns, fields=fields, mask=mask)


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


def _column(name: str, values: Sequence[Any]) -> pa.Array:
    typ = COLUMN_TYPES.get(name)
    if name in JSON_COLUMNS:
        return pa.array([None if _missing(v) else (v if isinstance(v, str) else _json(v)) for v in values],
                        type=pa.string())
    if typ is not None:
        return _typed(typ, values)
    return _inferred(values)


def _typed(typ: pa.DataType, values: Sequence[Any]) -> pa.Array:
    """Values as a column of a known type (missing values null; a float column keeps NaN)."""
    if pa.types.is_floating(typ):
        return pa.array([None if v is None else float(v) for v in values], type=typ)
    if pa.types.is_integer(typ):
        return pa.array([None if _missing(v) else int(v) for v in values], type=typ)
    if pa.types.is_boolean(typ):
        return pa.array([None if _missing(v) else bool(v) for v in values], type=typ)
    if pa.types.is_string(typ):
        return pa.array([None if _missing(v) else _text(v) for v in values], type=typ)
    return pa.array([None if _missing(v) else [_text(x) for x in v] for v in values], type=typ)


def _inferred(values: Sequence[Any]) -> pa.Array:
    """Values as a column typed by what they hold (all missing: text)."""
    present = [v for v in values if not _missing(v)]
    if not present:
        return pa.array([None] * len(values), type=pa.string())
    if all(isinstance(v, dict) for v in present):
        return _struct(values)
    kinds = {_scalar_kind(v) for v in present}
    if kinds <= {"int", "float"} and kinds:
        kind = "int" if kinds == {"int"} and not any(isinstance(v, float) for v in values) else "float"
        conv = int if kind == "int" else float
        return pa.array([None if v is None else conv(v) for v in values], type=_ARROW[kind])
    if kinds == {"str"}:
        return pa.array([None if _missing(v) else v for v in values], type=pa.string())
    if kinds == {"bool"}:
        return pa.array([None if _missing(v) else bool(v) for v in values], type=pa.bool_())
    if all(isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v) for v in present):
        return pa.array([None if _missing(v) else list(v) for v in values], type=pa.list_(pa.string()))
    return pa.array([None if _missing(v) else _text(v) for v in values], type=pa.string())


def rows_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str] | None = None,
               schema: pa.Schema | None = None) -> pa.Table:
    """Rows (dicts) → an Arrow table with real types; `schema` fixes them, else `COLUMN_TYPES` and the values.

    Columns keep their first-seen order (or `columns`, used as is when there are no rows).
    """
    rows = list(rows)
    if schema is not None:
        return pa.Table.from_arrays([_typed(f.type, [r.get(f.name) for r in rows]) for f in schema],
                                    schema=schema)
    names = list(dict.fromkeys(k for r in rows for k in r)) or list(columns or ())
    arrays = [_column(n, [r.get(n) for r in rows]) for n in names]
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
