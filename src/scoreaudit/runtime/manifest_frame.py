"""A manifest file (CSV, TSV, parquet, JSON lines, a JSON list of records) as one polars frame.

`runtime.manifests.load_manifest` validates whole columns of this frame and
builds records from it; nothing here walks rows in Python except JSON
records, whose values may mix types within a column.

Cell values keep the meaning manifests have always had (a manifest row is
part of every memo key and of images.parquet, so a reader change must not
change them): key columns (id, paths, cluster) are text as written, so id
`007` stays `007`; in the other columns of a CSV/TSV the usual missing
markers (`""`, `NA`, `null`, `nan`, ...) are missing, a column of integers
is integers (floats when one is missing), then floats, then booleans
(`True`/`false`...), else text; NaN is missing; JSON values keep their JSON
types, a column of integers with a missing value becoming floats as in
other formats.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from scoreaudit.runtime.tablefile import TableError, _text as json_key, delimited_frame, read_records
from scoreaudit.safeio import read_regular

JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
# what a CSV cell means by "no value" (the markers spreadsheet and dataframe tools write)
MISSING = ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
           "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")
TRUE, FALSE = ("True", "TRUE", "true"), ("False", "FALSE", "false")
INTEGERS = (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64)


def read_manifest(path: Path, text_columns: Sequence[str], root: Path | None = None) -> pl.DataFrame:
    """The file as a frame (columns named as text, in file order); raises ValueError/TableError for a
    malformed file (the caller words it as E0701)."""
    suffix = path.suffix.lower()
    if suffix in JSON_SUFFIXES:
        try:
            rec = read_records(path, root=root)  # `root`: the opened file itself contained
        except TableError as exc:  # the message names the file and the line
            raise ValueError(f"{exc.message} ({exc.help})") from None
        return _from_records(list(rec.columns), [r for _, r in rec.rows], text_columns)
    data = read_regular(path, root=root)  # never a FIFO or device: those would block the run
    if suffix in (".parquet", ".pq"):
        frame = pl.read_parquet(io.BytesIO(data))
        frame = frame.rename({c: str(c) for c in frame.columns})
        return frame.with_columns([_no_nan(frame[c]) for c in frame.columns
                                   if frame[c].dtype in (pl.Float32, pl.Float64) or _nullable_int(frame[c])])
    sep = "\t" if suffix == ".tsv" else ","
    frame = delimited_frame(data, sep).with_columns(pl.all().replace(list(MISSING), None))
    text = set(text_columns)
    return frame.with_columns([_typed(frame[c]) for c in frame.columns if c not in text])


def _nullable_int(s: pl.Series) -> bool:
    return s.dtype in INTEGERS and s.null_count() > 0


def _no_nan(s: pl.Series) -> pl.Series:
    """Floats with NaN as missing; integers with a missing value as floats."""
    if s.dtype in INTEGERS:
        s = s.cast(pl.Float64)
    return s.fill_nan(None)


def _typed(s: pl.Series) -> pl.Series:
    """A CSV text column → integers, floats, booleans or text (see the module docstring)."""
    values = s.drop_nulls()
    if not len(values):
        return s
    values = values.str.strip_chars()
    as_int = values.cast(pl.Int64, strict=False)
    if as_int.null_count() == 0:
        s = s.str.strip_chars()
        return s.cast(pl.Int64) if s.null_count() == 0 else s.cast(pl.Float64)
    as_float = values.cast(pl.Float64, strict=False)
    if as_float.null_count() == 0:
        return _no_nan(s.str.strip_chars().cast(pl.Float64))
    if values.is_in(TRUE + FALSE).all():
        return s.is_in(TRUE).alias(s.name)
    return s


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _from_records(columns: list[str], rows: list[dict], text_columns: Sequence[str]) -> pl.DataFrame:
    """JSON records → a frame: key columns as text, numbers as numbers, anything mixed as objects."""
    text = set(text_columns)
    series = []
    for c in columns:
        vals = [r.get(c) for r in rows]
        vals = [None if isinstance(v, float) and math.isnan(v) else v for v in vals]
        present = [v for v in vals if v is not None]
        if c in text:
            s = pl.Series(c, [json_key(v)[0] for v in vals], dtype=pl.String)
        elif present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            s = pl.Series(c, vals, dtype=pl.Int64 if len(present) == len(vals) else pl.Float64, strict=False)
        elif present and all(_number(v) for v in present):
            s = pl.Series(c, [None if v is None else float(v) for v in vals], dtype=pl.Float64)
        elif present and len(present) == len(vals) and all(isinstance(v, bool) for v in present):
            s = pl.Series(c, vals, dtype=pl.Boolean)
        elif present and all(isinstance(v, str) for v in present):
            s = pl.Series(c, vals, dtype=pl.String)
        else:  # mixed kinds, lists, objects, or nothing: the values as read
            s = pl.Series(c, vals, dtype=pl.Object)
        series.append(s)
    return pl.DataFrame(series, height=len(rows)) if series else pl.DataFrame(height=len(rows))


def key_text(value: Any) -> str | None:
    """A key cell (id, path, cluster, prompt) as stripped text; None when missing or blank."""
    if value is None:
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer():
            value = int(value)
    text = str(value).strip()
    return text or None


def key_column(frame: pl.DataFrame, column: str | None) -> list[str | None]:
    """A column as key texts (`key_text` of every cell), whole-column for text columns."""
    if column is None or column not in frame.columns:
        return [None] * frame.height
    s = frame[column]
    if s.dtype == pl.String:
        s = s.str.strip_chars()
        return s.set(s == "", None).to_list() if len(s) else []
    return [key_text(v) for v in s.to_list()]
