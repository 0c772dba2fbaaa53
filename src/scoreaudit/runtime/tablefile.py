"""Reading a table file (CSV, TSV, parquet, JSON lines, a JSON list of records) as rows.

Shared by manifests (`runtime.manifests`) and precomputed score/measure tables
(`runtime.precomputed`): both report problems with file and row number, so
both read rows with their numbers (1-based; the header is row 0).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from scoreaudit.safeio import UnsafePath, inside as _safe_inside, read_regular

if TYPE_CHECKING:
    import pandas as pd


def __getattr__(name: str) -> Any:
    """`TEXT`: this pandas' default text dtype (str on pandas 3, object before), made on first use, so that
    reading manifests (polars) imports no pandas: a cached re-run never makes a pandas frame (issue 33)."""
    if name == "TEXT":
        return _text_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@lru_cache(maxsize=1)
def _text_dtype() -> Any:
    import pandas as pd

    return pd.Series(["x"]).dtype


def _text(value: Any) -> tuple[str | None, str | None]:
    """(text, problem): a key cell as text; None text for a missing cell."""
    if value is None:
        return None, None
    if isinstance(value, (bool, list, dict)):
        return None, f"is not a text value ({json.dumps(value)})"
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return None, None
        if float(value).is_integer():
            value = int(value)
    text = str(value).strip()
    return (text or None), None




class TableError(Exception):
    """A file cannot be read as a table; `message` and `help` are what a user reads."""

    def __init__(self, message: str, help: str) -> None:
        super().__init__(message)
        self.message = message
        self.help = help


@dataclass(frozen=True)
class Records:
    """A file's rows as stored: (row number, {column: raw value}), columns in first-seen order."""

    columns: tuple[str, ...]
    rows: tuple[tuple[int, dict[str, Any]], ...]
    sha256: str
    format: str  # csv | tsv | parquet | jsonl | json


FORMATS = {".csv": "csv", ".tsv": "tsv", ".parquet": "parquet", ".pq": "parquet",
           ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json"}
FORMAT_HELP = "use CSV (.csv), TSV (.tsv), parquet (.parquet), JSON lines (.jsonl) or a JSON list of records (.json)"


def _columns_of(rows: Iterable[tuple[int, dict]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(k for _, r in rows for k in r))


# lines with nothing but blanks (other than the separator) are not rows
BLANK_LINES = {sep: re.compile(rb"(?:(?<=\n)|^)[" + blank + rb"]*(?:\r?\n|$)")
               for sep, blank in ((",", rb" \t"), ("\t", rb" "))}


def delimited_frame(data: bytes, sep: str) -> pl.DataFrame:
    """A CSV/TSV file's cells exactly as written, read by polars (all text, "" kept, a UTF-8 BOM
    dropped); blank lines are not rows. A quoted cell that spans lines (where a blank line may be part of the cell) is
    read by Python's csv module instead, so no cell is ever changed."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b'"' in data and any(line.count(b'"') % 2 for line in data.splitlines()):
        blank = " \t" if sep == "," else " "
        rows = [r for r in csv.reader(io.StringIO(data.decode("utf-8"), newline=""), delimiter=sep)
                if r and not (len(r) == 1 and r[0] and not r[0].strip(blank))]
        if not rows:
            raise ValueError("No columns to parse from file")
        width = len(rows[0])
        if any(len(r) > width for r in rows[1:]):
            raise ValueError(f"a row has more fields than the header's {width}")
        body = [r + [""] * (width - len(r)) for r in rows[1:]]  # missing trailing fields are empty
        return pl.DataFrame({name: [r[i] for r in body] for i, name in enumerate(rows[0])},
                            schema={name: pl.String for name in rows[0]})
    frame = pl.read_csv(io.BytesIO(BLANK_LINES[sep].sub(b"", data)), separator=sep, infer_schema=False,
                        empty_string_is_null=False, raise_if_empty=False)
    if not frame.columns:
        raise ValueError("No columns to parse from file")
    return frame.fill_null("")  # missing trailing fields are empty


def _read_delimited(data: bytes, sep: str) -> tuple[tuple[str, ...], list[tuple[int, dict]]]:
    frame = delimited_frame(data, sep)
    cols = tuple(frame.columns)
    return cols, [(i, dict(zip(cols, vals))) for i, vals in enumerate(frame.iter_rows(), start=1)]


def _read_parquet(data: bytes) -> tuple[tuple[str, ...], list[tuple[int, dict]]]:
    import io

    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(data))
    cols = tuple(str(c) for c in table.column_names)
    return cols, [(i, {str(k): v for k, v in rec.items()}) for i, rec in enumerate(table.to_pylist(), start=1)]


def _json_value(text: str, where: str) -> Any:
    from scoreaudit.safeio import JSONTooDeep, loads_bounded

    try:
        return loads_bounded(text)
    except JSONTooDeep as exc:
        raise TableError(f"{where}: {exc}", "a manifest or table is a flat list of records") from None
    except json.JSONDecodeError as exc:
        raise TableError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
                         "fix the JSON (a JSON list of records: [{\"id\": ..., ...}, ...], or one "
                         "record per line in a .jsonl file)") from None


def _read_json_lines(text: str, shown: str) -> list[tuple[int, dict]]:
    rows = []
    for no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        rec = _json_value(line, f"{shown} line {no}")
        if not isinstance(rec, dict):
            raise TableError(f"{shown} line {no} is not a JSON object (a record)",
                             "write one object per line: {\"id\": \"img_1\", ...}")
        rows.append((no, rec))
    return rows


def _read_json(text: str, shown: str) -> list[tuple[int, dict]]:
    from scoreaudit.safeio import JSONTooDeep, loads_bounded

    try:
        doc = loads_bounded(text)
    except JSONTooDeep as exc:
        raise TableError(f"{shown}: {exc}", "a manifest or table is a flat list of records") from None
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # several JSON values: one record per line under a .json name
            return _read_json_lines(text, shown)
        raise TableError(f"{shown}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
                         "fix the JSON: a list of records [{\"id\": ..., ...}, ...]") from None
    if not isinstance(doc, list):
        raise TableError(f"{shown} holds a JSON {type(doc).__name__ if not isinstance(doc, dict) else 'object'}, "
                         "not a list of records",
                         "write the records as a JSON list: [{\"id\": \"img_1\", ...}, ...]")
    rows = []
    for no, rec in enumerate(doc, start=1):
        if not isinstance(rec, dict):
            raise TableError(f"{shown} record {no} is not a JSON object", "every list item must be {...}")
        rows.append((no, rec))
    return rows


def _bytes(path: Path, shown: str, root: str | Path | None = None) -> tuple[str, bytes]:
    """(format, contents) of a table file; `TableError` when the format or the file is not usable.
    `root`: the file opened must lie under it (checked on the descriptor: safeio.open_regular)."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise TableError(f"{shown}: unsupported table format '{path.suffix or '(no extension)'}'", FORMAT_HELP)
    try:
        return fmt, read_regular(path, root=root)  # never a FIFO or device: those would block
    except FileNotFoundError:
        raise TableError(f"{shown} not found", "check the path (it is relative to the spec's folder)") from None
    except UnsafePath as exc:
        if exc.what.startswith("leaves"):  # swapped for a link out after the containment check
            raise TableError(f"{shown} {exc.what}", "keep data inside the spec's folder") from None
        raise TableError(f"{shown} is not a regular file (a folder, FIFO or device)",
                         "name a table file; folders, pipes and devices are never read") from None
    except OSError as exc:
        raise TableError(f"cannot read {shown} ({exc.strerror or exc})", "check the file's permissions") from None


@dataclass(frozen=True)
class Columns:
    """A CSV/TSV or parquet file as one polars frame (cells exactly as `read_records` gives them).

    Row n of the file is frame row n - 1. For tables too large to read as
    Python dicts: callers validate whole columns and visit single rows only
    where something is wrong.
    """

    frame: pl.DataFrame
    sha256: str
    format: str

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(self.frame.columns)

    def row(self, no: int) -> dict[str, Any]:
        return self.frame.row(no - 1, named=True)


COLUMNAR = ("csv", "tsv", "parquet")


def read_columns(path: str | Path, shown: str | None = None, root: str | Path | None = None) -> Columns:
    """A CSV/TSV or parquet file as columns, parsed by the same readers as `read_records`.

    Raises `TableError` like `read_records`; JSON formats are not columnar (their values
    may mix types within a column): read those with `read_records`.
    """
    import polars as pl
    import pyarrow.parquet as pq

    path = Path(path)
    shown = shown or str(path)
    fmt, data = _bytes(path, shown, root)
    if fmt not in COLUMNAR:
        raise ValueError(f"{fmt} is not a columnar format")  # a caller's mistake, not the user's
    try:
        if fmt == "parquet":
            frame = pl.from_arrow(pq.read_table(io.BytesIO(data)), rechunk=False)  # the bytes read once, checked
        else:
            frame = delimited_frame(data, "\t" if fmt == "tsv" else ",")
    except Exception as exc:  # noqa: BLE001 - pandas/pyarrow parse errors: the user's file is malformed
        raise TableError(f"cannot read {shown} as {fmt}: {exc}", FORMAT_HELP) from None
    if isinstance(frame, pl.Series):  # pragma: no cover - a table always gives a frame
        frame = frame.to_frame()
    return Columns(frame, hashlib.sha256(data).hexdigest(), fmt)


def read_records(path: str | Path, shown: str | None = None, root: str | Path | None = None) -> Records:
    """Read any supported file as raw rows; raises `TableError` (message + help) when it cannot."""
    path = Path(path)
    shown = shown or str(path)
    fmt, data = _bytes(path, shown, root)
    digest = hashlib.sha256(data).hexdigest()
    try:
        if fmt in ("csv", "tsv"):
            cols, rows = _read_delimited(data, "\t" if fmt == "tsv" else ",")
        elif fmt == "parquet":
            cols, rows = _read_parquet(data)
        else:
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise TableError(f"{shown} is not UTF-8 text ({exc.reason} at byte {exc.start})",
                                 "save the file as UTF-8") from None
            rows = _read_json_lines(text, shown) if fmt == "jsonl" else _read_json(text, shown)
            cols = _columns_of(rows)
    except TableError:
        raise
    except Exception as exc:  # noqa: BLE001 - pandas/pyarrow parse errors: the user's file is malformed
        raise TableError(f"cannot read {shown} as {fmt}: {exc}", FORMAT_HELP) from None
    return Records(tuple(cols), tuple(rows), digest, fmt)


def read_frame(path: str | Path, text_columns: Sequence[str] = ()) -> pd.DataFrame:
    """A JSON-list / JSON-lines file as a DataFrame (a manifest), `text_columns` as strings.

    For the manifest loader: JSON values keep their types (numbers stay
    numbers, null is missing), key columns become text so id 7 and "7" agree.
    """
    rec = read_records(path)
    import pandas as pd

    df = pd.DataFrame([r for _, r in rec.rows], columns=list(rec.columns))
    for c in text_columns:
        if c in df.columns:
            df[c] = pd.Series([_text(v)[0] for v in df[c]], index=df.index, dtype=_text_dtype())
    return df


# The one containment check (scoreaudit.safeio.inside), re-exported for the readers of this layer.
inside = _safe_inside
