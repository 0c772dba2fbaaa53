"""One precomputed long table read and validated (spec/precomputed.md).

Structural problems (missing file, unreadable, missing column, a path outside
the project) are error diagnostics E0801/E0803/E0806; per-row value problems are
`Exclusion`s whose cell stays present with value NaN. CSV/TSV and parquet tables
are validated a column at a time with polars (`_clean_rows`); only rows with
something to say go through the row-by-row `_Reader`, which words every problem.
Row numbers are 1-based: the data row of a CSV (header = row 0), the record's
position in a JSON list, the line of a JSON-lines file, the row of a parquet file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoreaudit.compiler.coverage import dose_text
from scoreaudit.compiler.doses import dose_key, dose_keys
from scoreaudit.compiler.ir import ORIGINAL
from scoreaudit.diagnostics import Diagnostic, did_you_mean
from scoreaudit.runtime.images import Exclusion
from scoreaudit.runtime.tablefile import (
    COLUMNAR,
    FORMATS,
    TEXT,
    Columns,
    TableError,
    _text,
    inside as _inside,
    read_columns,
    read_records,
)

SIDES = ("preferred", "other")
BUILTIN_MEASURES = ("leakage",)  # measures the runtime writes for every (image, operator, dose)
ROW_EXAMPLES = 5  # rows named in full in a W0801/W0802 message before "and N more"



# --------------------------------------------------------------------------- table kinds


@dataclass(frozen=True)
class Kind:
    """What one kind of long table holds: its name and value columns and their accepted spellings."""

    kind: str  # "scores" | "measures"
    name: tuple[str, ...]  # accepted names of the name column, preferred first
    value: tuple[str, ...]
    stage: str  # exclusion stage
    noun: str  # "score" | "value": what a row's number is called in messages
    thing: str  # "scorer" | "measure": what the name column names


ID_COLUMNS = ("id", "image_id")  # image_id: a results bundle's own tables read back unchanged
KINDS: dict[str, Kind] = {
    "scores": Kind("scores", ("scorer",), ("score",), "score", "score", "scorer"),
    "measures": Kind("measures", ("measure", "name"), ("value",), "measure", "value", "measure"),
}
FRAME_COLUMNS = ("arm", "image_id", "operator", "dose", "name", "value", "file", "row")


# --------------------------------------------------------------------------- cell parsing


def number(value: Any) -> tuple[float | None, str | None]:
    """(value, problem): a numeric cell as a finite float, or the reason it is not one."""
    if value is None:
        return None, "is missing"
    if isinstance(value, (bool, np.bool_)):
        return None, f"is not a number ({str(value).lower()})"
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None, "is missing"
        try:
            x = float(text)
        except ValueError:
            return None, f"is not a number ({value!r})"
    elif isinstance(value, (int, float, np.integer, np.floating)):
        x = float(value)
    else:
        shown = json.dumps(value) if isinstance(value, (list, dict)) else repr(value)
        return None, f"is not a number ({shown})"
    if math.isnan(x):
        return None, "is NaN"
    if math.isinf(x):
        return None, f"is infinite ({'+' if x > 0 else '-'}inf)"
    return x, None


def _rows_text(rows: Sequence[int]) -> str:
    rows = sorted(rows)
    if len(rows) == 1:
        return f"row {rows[0]}"
    return "rows " + ", ".join(str(r) for r in rows[:-1]) + f" and {rows[-1]}"


def _subject(kind: Kind, name: str, operator: str, dose: float) -> str:
    if operator == ORIGINAL:
        return f"{kind.thing} {name}, original image"
    return f"{kind.thing} {name}, operator {operator}, dose {dose_text(dose)}"


# --------------------------------------------------------------------------- one table


@dataclass(frozen=True)
class Unused:
    """Rows a table holds that the audit cannot use, grouped by why (W0801/W0802)."""

    why: str  # what a user reads: "arm 'x' is not declared"
    rows: tuple[int, ...]
    help: str


@dataclass(frozen=True)
class LongTable:
    """One scores or measures table: its usable cells, what was excluded, and what is wrong.

    `frame` has one row per key (arm, image_id, operator, dose, name) with
    columns FRAME_COLUMNS; `value` is NaN where the row was excluded (the
    reason is in `exclusions`). `arm` is the arm that declared the table (None:
    the audit block's table).
    """

    kind: str
    path: str  # as shown to users (as written in the spec)
    sha256: str | None
    arm: str | None
    frame: pd.DataFrame
    exclusions: tuple[Exclusion, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    unused: tuple[Unused, ...] = ()
    n_rows: int = 0

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


def empty_frame() -> pd.DataFrame:
    return pd.DataFrame({"arm": pd.Series(dtype=TEXT), "image_id": pd.Series(dtype=TEXT),
                         "operator": pd.Series(dtype=TEXT), "dose": pd.Series(dtype=float),
                         "name": pd.Series(dtype=TEXT), "value": pd.Series(dtype=float),
                         "file": pd.Series(dtype=TEXT), "row": pd.Series(dtype="int64")})


def _find(available: Sequence[str], names: Sequence[str]) -> str | None:
    for n in names:
        if n in available:
            return n
    return None


@dataclass
class _Reader:
    """State while validating one table's rows."""

    kind: Kind
    shown: str
    arm: str | None
    arms: Sequence[str] | None
    exclusions: list[Exclusion] = field(default_factory=list)
    unused: dict[tuple[str, str], list[int]] = field(default_factory=dict)
    keyed: dict[tuple, list[tuple[int, float | None, float]]] = field(default_factory=dict)  # (row, value, dose)

    def exclude(self, arm: str, image_id: str | None, row: int, what: str, where: str | None = None) -> None:
        where = where or f"row {row}"
        self.exclusions.append(Exclusion(arm, image_id, row, self.kind.stage, f"{self.shown} {where}: {what}"))

    def skip(self, why: str, help: str, row: int) -> None:
        self.unused.setdefault((why, help), []).append(row)

    def row_arm(self, raw: Mapping[str, Any], col: str | None, row: int) -> str | None:
        given, problem = _text(raw.get(col)) if col else (None, None)
        if problem:
            self.skip(f"the arm {problem}", "write the arm's name", row)
            return None
        if self.arm is not None:  # the arm's own table: rows of other arms are not its own
            if given is not None and given != self.arm:
                self.skip(f"their arm '{given}' is not '{self.arm}', the arm that declares this table",
                          "move them to that arm's table or to the audit block's `scores:`/`measures:` table",
                          row)
                return None
            return self.arm
        if given is None:
            self.skip("they have no arm", "fill in the `arm` column", row)
            return None
        if self.arms is not None and given not in self.arms:
            guess = did_you_mean(given, self.arms)
            self.skip(f"arm '{given}' is not declared in the audit",
                      f"did you mean '{guess}'?" if guess else f"the audit's arms are: {', '.join(self.arms)}", row)
            return None
        return given

    def add(self, no: int, raw: Mapping[str, Any], cols: Mapping[str, str | None]) -> None:
        k = self.kind
        arm = self.row_arm(raw, cols["arm"], no)
        if arm is None:
            return
        base, problem = _text(raw.get(cols["id"]))
        if base is None:
            self.exclude(arm, None, no, f"the image id {problem or 'is missing'}; fill it in or remove the row")
            return
        image_id = base
        if cols["side"]:
            side, problem = _text(raw.get(cols["side"]))
            if problem or (side is not None and side not in SIDES):
                self.exclude(arm, base, no, f"side {problem or repr(side)} is not 'preferred' or 'other'; "
                                            "fix it or remove the row")
                return
            if side is not None:
                image_id = f"{base}:{side}"
        name, problem = _text(raw.get(cols["name"]))
        if name is None:
            self.exclude(arm, image_id, no, f"the {k.thing} name {problem or 'is missing'}; "
                                            "fill it in or remove the row")
            return
        operator, problem = _text(raw.get(cols["operator"])) if cols["operator"] else (None, None)
        if problem:
            self.exclude(arm, image_id, no, f"the operator {problem}; fix it or remove the row")
            return
        operator = operator or ORIGINAL  # no operator: the unaltered image
        raw_dose = raw.get(cols["dose"]) if cols["dose"] else None
        if operator == ORIGINAL:
            dose, problem = number(raw_dose)
            if problem == "is missing":
                dose, problem = 0.0, None
            if problem or dose != 0.0:
                self.exclude(arm, image_id, no, f"the original image has dose 0 (or none), but the dose "
                                                f"{problem or 'is ' + dose_text(dose)} ({k.thing} {name}); "
                                                "fix the operator or the dose")
                return
        else:
            dose, problem = number(raw_dose)
            if problem:
                self.exclude(arm, image_id, no, f"the dose {problem} ({k.thing} {name}, operator {operator}); "
                                                "fill in the dose the operator was applied at")
                return
        value, problem = number(raw.get(cols["value"]))
        if problem:
            self.exclude(arm, image_id, no, f"the {k.noun} {problem} for {_subject(k, name, operator, dose)}; "
                                            f"fix the value or remove the row (the image is left out "
                                            f"wherever this {k.noun} is needed)")
        self.keyed.setdefault((arm, image_id, operator, dose_key(dose), name), []).append(
            (no, value, float(dose)))

    def frame(self, clean=None) -> pd.DataFrame:
        """One row per key (first row's value; NaN and an exclusion when several rows give it).

        `clean` (polars, from `_clean_rows`) holds further rows, already checked, that
        join the rows `add` keyed; keys keep the order of their first row.
        """
        import polars as pl

        keyed = pl.DataFrame(
            [(no, a, i, o, name, v, d) for (a, i, o, _, name), hits in self.keyed.items() for no, v, d in hits],
            schema={"row": pl.Int64, "arm": pl.String, "image_id": pl.String, "operator": pl.String,
                    "name": pl.String, "value": pl.Float64, "dose": pl.Float64}, orient="row")
        rows = keyed if clean is None else pl.concat([keyed, clean.select(keyed.columns)])
        if not len(rows):
            return empty_frame()
        rows = rows.with_columns(_key=pl.Series(dose_keys(rows["dose"].to_numpy())))
        groups = (rows.sort("row")
                  .group_by(["arm", "image_id", "operator", "_key", "name"], maintain_order=True)
                  .agg(pl.col("row"), pl.col("value").first(), pl.col("dose").first(), n=pl.len()))
        for g in groups.filter(pl.col("n") > 1).iter_rows(named=True):
            self.exclude(g["arm"], g["image_id"], g["row"][0],
                         f"duplicate key: each gives the {self.kind.noun} of image {g['image_id']} for "
                         f"{_subject(self.kind, g['name'], g['operator'], g['dose'])}; none of them is used: "
                         "keep one row", where=_rows_text(g["row"]))
        out = groups.select(
            "arm", "image_id", "operator", "dose", "name",
            value=pl.when(pl.col("n") > 1).then(None).otherwise(pl.col("value")).fill_null(float("nan")),
            file=pl.lit(self.shown), row=pl.col("row").list.first())
        return _as_frame(out.to_pandas())


def _as_frame(df: pd.DataFrame) -> pd.DataFrame:
    if not len(df):
        return empty_frame()
    return df[list(FRAME_COLUMNS)].astype({"arm": TEXT, "image_id": TEXT, "operator": TEXT, "name": TEXT,
                                           "file": TEXT, "dose": float, "value": float, "row": "int64"})


def _missing_column(kind: Kind, shown: str, role: str, names: Sequence[str], available: Sequence[str],
                    extra: str = "") -> Diagnostic:
    guess = None
    for n in names:
        guess = did_you_mean(n, available)
        if guess:
            break
    spelled = " or ".join(f"'{n}'" for n in names)
    return Diagnostic(
        "E0803", "error", f"{kind.kind} table {shown} has no {spelled} column ({role})",
        path=shown,
        help=(f"did you mean '{guess}'? Rename the column to '{names[0]}'" if guess else
              f"add a '{names[0]}' column") + extra,
        notes=(f"the table's columns are: {', '.join(available) or '(none)'}",
               f"a {kind.kind} table has columns {layout(kind)}"))


def _near_miss(name: str, columns: Sequence[str]) -> str | None:
    """A column that is almost certainly `name` misspelled (`operater`, `Operator`, `operators`).

    Stricter than did-you-mean (ratio ≥ 0.75, case folded), because an optional column's near-miss is
    reported as an error even though the table has no column of that name.
    """
    import difflib

    best, score = None, 0.0
    for c in columns:
        r = difflib.SequenceMatcher(None, name, str(c).strip().lower()).ratio()
        if r > score:
            best, score = c, r
    return best if score >= 0.75 else None


def layout(kind: Kind) -> str:
    return f"id, operator, dose, {kind.name[0]}, {kind.value[0]} (+ optional arm, side)"


def read_long_table(path: str | Path, kind: str, *, spec_dir: str | Path = ".", arm: str | None = None,
                    arms: Sequence[str] | None = None, root: str | Path | None = None) -> LongTable:
    """Read and validate one table (see the module docstring). Never raises for user errors.

    `path` is as written in the spec (relative to `spec_dir`); `arm` is the
    arm that declares the table (None: the audit block's, which needs an `arm`
    column); `arms` are the audit's arm names (rows naming others are
    reported unused); `root` is the folder the file must stay inside (None: no
    restriction).
    """
    k = KINDS[kind]
    shown = Path(path).as_posix()
    full = Path(spec_dir) / path
    where = f"arm '{arm}'" if arm else "the audit block"

    def fail(code: str, message: str, help: str, sha: str | None = None, n: int = 0, notes=()) -> LongTable:
        return LongTable(kind, shown, sha, arm, empty_frame(),
                         diagnostics=(Diagnostic(code, "error", message, path=shown, help=help, notes=tuple(notes)),),
                         n_rows=n)

    if not _inside(full, Path(root) if root is not None else None):
        return fail("E0806", f"{kind} table {shown} ({where}) is outside the project folder",
                    "keep precomputed tables inside the spec's folder")
    try:
        rec = read_columns(full, shown, root) if FORMATS.get(full.suffix.lower()) in COLUMNAR \
            else read_records(full, shown, root)  # the opened file itself contained
    except TableError as exc:
        return fail("E0801", f"cannot use {kind} table of {where}: {exc.message}", exc.help)
    cols = {"id": _find(rec.columns, ID_COLUMNS), "name": _find(rec.columns, k.name),
            "value": _find(rec.columns, k.value), "arm": _find(rec.columns, ("arm",)),
            "operator": _find(rec.columns, ("operator",)), "dose": _find(rec.columns, ("dose",)),
            "side": _find(rec.columns, ("side",))}
    n_rows = len(rec.frame) if isinstance(rec, Columns) else len(rec.rows)
    diags = []
    for key, role, names in (("id", "the image id", ID_COLUMNS), ("name", f"the {k.thing} name", k.name),
                             ("value", f"the {k.noun}", k.value)):
        if cols[key] is None:
            diags.append(_missing_column(k, shown, role, names, rec.columns))
    if arm is None and cols["arm"] is None:
        diags.append(_missing_column(k, shown, "the arm of each row", ("arm",), rec.columns,
                                     f", or declare the table on its arm: `images(..., {kind}: \"{shown}\")`"))
    if cols["operator"] is None:  # optional, so a misspelling would silently read every row as an original
        used = {c for c in cols.values() if c is not None}
        near = _near_miss("operator", [c for c in rec.columns if c not in used])
        if near is not None:
            diags.append(Diagnostic(
                "E0803", "error", f"{k.kind} table {shown} has no 'operator' column (the operator of each row)",
                path=shown,
                help=f"did you mean '{near}'? Rename the column to 'operator' (without it every row is read "
                     f"as a {k.noun} of the unaltered image)",
                notes=(f"the table's columns are: {', '.join(rec.columns)}",
                       f"a {k.kind} table has columns {layout(k)}")))
    if cols["operator"] is not None and cols["dose"] is None:
        ops = (rec.frame[cols["operator"]].to_list() if isinstance(rec, Columns)
               else [r.get(cols["operator"]) for _, r in rec.rows])
        altered = [no for no, op in enumerate(ops, start=1) if (_text(op)[0] or ORIGINAL) != ORIGINAL]
        if altered:
            diags.append(_missing_column(k, shown, f"the operator's dose; {_rows_text(altered[:3])}"
                                         f"{' and more' if len(altered) > 3 else ''} name an operator",
                                         ("dose",), rec.columns))
    if diags:
        return LongTable(kind, shown, rec.sha256, arm, empty_frame(), diagnostics=tuple(diags), n_rows=n_rows)
    reader = _Reader(k, shown, arm, arms)
    if isinstance(rec, Columns):
        clean, slow = _clean_rows(rec.frame, cols, arm, arms)
        for no in slow:
            reader.add(no, rec.row(no), cols)
    else:
        clean = None
        for no, raw in rec.rows:
            reader.add(no, raw, cols)
    frame = reader.frame(clean)
    unused = tuple(Unused(why, tuple(rows), help) for (why, help), rows in reader.unused.items())
    return LongTable(kind, shown, rec.sha256, arm, frame, tuple(reader.exclusions), (), unused, n_rows)


#: Cell text that `str.strip()` leaves alone (Python's and Unicode's whitespace, and \x1c-\x1f, at neither end).
_BARE = r"^[^\s\x1c-\x1f](?:.*[^\s\x1c-\x1f])?$"
#: Number text that Python's `float()` and polars read alike (anything else goes the row-by-row way).
_PLAIN_NUMBER = r"^-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?$"


def _clean_rows(frame, cols: Mapping[str, str | None], arm: str | None, arms: Sequence[str] | None):
    """The rows `_Reader.add` would accept without a word, validated a column at a time (polars).

    Returns (a polars frame of those rows with the keyed columns, the row numbers of all
    others). The others go through `_Reader.add`, which words every problem; so this only
    has to be sure of what it accepts: text with no whitespace to strip, numbers in the
    plain notation both readers parse alike, finite values, known arms and sides.
    """
    import polars as pl

    def text(col: str | None):
        """(text or null, cell is plain): key cells as `_text` reads them."""
        if col is None:
            return pl.lit(None, dtype=pl.String), pl.lit(True)
        c, dtype = pl.col(col), frame.schema[col]
        if dtype == pl.String:
            return (pl.when(c == "").then(None).otherwise(c),
                    c.is_null() | (c == "") | c.str.contains(_BARE))
        if dtype.is_integer():
            return c.cast(pl.String), pl.lit(True)
        if dtype == pl.Null:
            return pl.lit(None, dtype=pl.String), pl.lit(True)
        return pl.lit(None, dtype=pl.String), pl.lit(False)

    def number(col: str | None):
        """(value, cell is a plain finite number, cell is missing)."""
        if col is None:
            return pl.lit(None, dtype=pl.Float64), pl.lit(False), pl.lit(True)
        c, dtype = pl.col(col), frame.schema[col]
        if dtype == pl.String:
            x = c.str.strip_chars().cast(pl.Float64, strict=False)
            return x, c.str.contains(_PLAIN_NUMBER).fill_null(False) & x.is_finite(), c.is_null() | (c == "")
        if dtype.is_numeric():
            x = c.cast(pl.Float64)
            return x, x.is_finite().fill_null(False), c.is_null()
        if dtype == pl.Null:
            return pl.lit(None, dtype=pl.Float64), pl.lit(False), pl.lit(True)
        return pl.lit(None, dtype=pl.Float64), pl.lit(False), c.is_null()

    (arm_t, arm_ok), (id_t, id_ok) = text(cols["arm"]), text(cols["id"])
    (side_t, side_ok), (name_t, name_ok) = text(cols["side"]), text(cols["name"])
    op_t, op_ok = text(cols["operator"])
    dose_x, dose_ok, dose_missing = number(cols["dose"])
    value_x, value_ok, _ = number(cols["value"])
    if arm is not None:  # the arm's own table: no arm, or this one
        arm_expr, arm_good = pl.lit(arm), arm_t.is_null() | (arm_t == arm)
    else:
        arm_expr = arm_t
        arm_good = arm_t.is_not_null() & (arm_t.is_in(list(arms)) if arms is not None else pl.lit(True))
    operator = op_t.fill_null(ORIGINAL)
    original = operator == ORIGINAL
    dose = pl.when(original & dose_missing).then(0.0).otherwise(dose_x)
    good = (arm_ok & id_ok & side_ok & name_ok & op_ok & arm_good & id_t.is_not_null() & name_t.is_not_null()
            & (side_t.is_null() | side_t.is_in(list(SIDES))) & value_ok
            & pl.when(original).then(dose_missing | (dose_ok & (dose_x == 0.0))).otherwise(dose_ok))
    image_id = pl.when(side_t.is_null()).then(id_t).otherwise(pl.concat_str([id_t, pl.lit(":"), side_t]))
    checked = frame.select(
        row=pl.int_range(1, pl.len() + 1, dtype=pl.Int64), good=good.fill_null(False),
        arm=arm_expr.cast(pl.String), image_id=image_id, operator=operator, dose=dose.cast(pl.Float64),
        name=name_t, value=value_x)
    clean = checked.filter(pl.col("good")).drop("good")
    slow = checked.filter(~pl.col("good"))["row"].to_list()
    return clean, slow


def text_isin(column: pd.Series, values: Iterable[str]) -> np.ndarray:
    """`column.isin(values)` for a text column, as a boolean array (polars: pandas' text `isin` is
    slow for large sets)."""
    import polars as pl

    return pl.Series(column.to_numpy(object), dtype=pl.String, strict=False).is_in(
        pl.Series(list(values), dtype=pl.String, strict=False).implode()).fill_null(False).to_numpy()
