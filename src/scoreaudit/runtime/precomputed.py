"""Precomputed results: long tables of scores and measures computed elsewhere (spec/precomputed.md).

A user who already has numbers (last month's cluster job, their own
pipeline, human ratings) points an arm or the audit at a long table; the
audit reads those numbers instead of computing them, and says so in
`results.json["precomputed"]` (file name and sha256).

Entry points (the facade and the executor call these; see spec/precomputed.md):

- `read_records(path) -> Records`: a CSV/TSV, parquet, JSON-lines or JSON-list
  file as raw rows (values exactly as stored), with the file's sha256. Also
  what a JSON manifest is read with (`read_frame`).
- `read_long_table(path, kind, spec_dir=..., arm=None, arms=None, root=None) -> LongTable`:
  one scores or measures table, validated: structural problems (missing file,
  unreadable, missing column, path outside the project) are error
  `Diagnostic`s E0801/E0803/E0806; per-row value problems (missing value, NaN,
  ±inf, not a number, duplicate key, bad dose or side) are `Exclusion`s of
  stage "score"/"measure", and the row's cell stays present with value NaN so
  the statistics leave the image out where it is needed (never silently).
- `load_tables(ir, spec_dir, root=None) -> TableSet`: every table the audit
  block and the arms declare, merged (duplicates across files are exclusions
  too); `TableSet.matched(ir, manifests)` keeps the rows the audit can use and
  reports the others (ids not in the manifest W0801; undeclared arms,
  scorers, measures, operators or doses W0802).
- `precomputed_scores(ir, arm, image_ids, tables)` and
  `precomputed_measures(...)`: the rows the executor appends to
  scores.parquet / measures.parquet (spec/bundle.md layout and sort order);
  `provided(tables)` says which (arm, scorer) and (arm, measure) it must not
  compute.
- `manifest_scores(ir, arm, records)`: scores of `precomputed(column: ...)` /
  `precomputed(preferred: ..., other: ...)` scorers straight from manifest
  rows, for arms without image files (`pairs(..., images: false)`).
- `provenance(tables, manifests=...)`: the entries of results.json["precomputed"].

Row numbers are 1-based: the data row of a CSV (header = row 0), the record's
position in a JSON list, the line of a JSON-lines file, the row of a parquet file.

Large tables: CSV/TSV and parquet tables are validated a column at a time with
polars (`_clean_rows`); only rows with something to say go through the
row-by-row `_Reader`, which words every problem. Joins with the manifest and
the audit's declarations are vectorized too (bench/tables.py measures both ways).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from scoreaudit.compiler.coverage import (  # noqa: F401  (re-exported)
    ProvidedTables, declared_tables, dose_text, provided, uses_precomputed)
from scoreaudit.compiler.doses import dose_key, dose_keys, is_dose
from scoreaudit.compiler.ir import ORIGINAL, AuditIR
from scoreaudit.diagnostics import Diagnostic, did_you_mean
from scoreaudit.registry import reads_data, reads_tables_only
from scoreaudit.runtime.tablefile import inside as _inside
from scoreaudit.runtime.images import Exclusion
from scoreaudit.runtime.tablefile import (COLUMNAR, FORMATS, TEXT, Columns, Records, TableError, _text,  # noqa: F401
                                          read_columns, read_frame, read_records)

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
    keyed: dict[tuple, list[tuple[int, float | None]]] = field(default_factory=dict)

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


# --------------------------------------------------------------------------- every table of an audit


@dataclass(frozen=True)
class TableSet:
    """Every precomputed table of an audit, merged per kind (see `ProvidedTables` in compiler/coverage.py).

    `scores` and `measures` have columns FRAME_COLUMNS, one row per key
    across all files (a key given by two files is excluded, value NaN).
    """

    tables: tuple[LongTable, ...]
    scores: pd.DataFrame
    measures: pd.DataFrame
    exclusions: tuple[Exclusion, ...]
    diagnostics: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    def frame(self, kind: str) -> pd.DataFrame:
        return self.scores if kind == "scores" else self.measures

    def matched(self, ir: AuditIR, manifests: Mapping[str, Sequence[str]]) -> "TableSet":
        """Only the rows this audit uses; the rest reported (W0801 ids, W0802 names/doses).

        `manifests` maps an arm to its image ids (pairs: `PAIR:preferred`,
        `PAIR:other`); an arm missing from it keeps all its rows unchecked.
        Doses are snapped to the operator's declared dose (so 0.30000000000000004
        and 0.3 are one dose).
        """
        diags = list(self.diagnostics)
        frames = {}
        reported: set[tuple[str, str]] = set()  # (arm, image_id) already named by a W0801
        for kind in KINDS:
            before = self.frame(kind)
            df, report = _match(ir, kind, before, manifests)
            frames[kind] = df
            diags += report
            for arm, ids in manifests.items():
                stray = before.loc[(before["arm"] == arm) & ~_isin(before["image_id"], ids), "image_id"]
                reported |= {(arm, i) for i in stray.unique()}
        # An exclusion is about an image of the audit: one naming an id the manifest does not have
        # is reported with the W0801 rows instead (as a note when no W0801 names that id yet).
        keep, stray = [], {}
        for e in self.exclusions:
            if e.image_id is not None and e.arm in manifests and e.image_id not in set(manifests[e.arm]):
                if (e.arm, e.image_id) not in reported:
                    stray.setdefault(e.arm, []).append(e)
                continue
            keep.append(e)
        for arm, es in stray.items():
            diags.append(Diagnostic(
                "W0801", "warning", f"{len(es)} table row{'s' if len(es) != 1 else ''} with problems name image ids "
                f"not in the manifest of arm '{arm}'; not used", path=None,
                help="use the manifest's ids, or remove the rows",
                notes=tuple(e.reason for e in es[:ROW_EXAMPLES]) +
                ((f"... and {len(es) - ROW_EXAMPLES} more",) if len(es) > ROW_EXAMPLES else ())))
        return replace(self, scores=frames["scores"], measures=frames["measures"], exclusions=tuple(keep),
                       diagnostics=tuple(diags))


def _isin(column: pd.Series, values: Iterable[str]) -> np.ndarray:
    """`column.isin(values)` for a text column, as a boolean array (polars: pandas' text `isin` is
    slow for large sets)."""
    import polars as pl

    return pl.Series(column.to_numpy(object), dtype=pl.String, strict=False).is_in(
        pl.Series(list(values), dtype=pl.String, strict=False).implode()).fill_null(False).to_numpy()


def _group_rows(df: pd.DataFrame) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for f, r in zip(df["file"], df["row"]):
        out.setdefault(f, []).append(int(r))
    return out


def _n_rows(rows: Sequence[int]) -> str:
    return f"{len(rows)} row{'s' if len(rows) != 1 else ''}"


def _examples(rows: Sequence[int]) -> str:
    """"row 4" / "rows 4, 9, 12" / "rows 1, 2, 3, 4, 5 and 7 more"."""
    rows = sorted(rows)
    shown = ", ".join(str(r) for r in rows[:ROW_EXAMPLES])
    more = f" and {len(rows) - ROW_EXAMPLES} more" if len(rows) > ROW_EXAMPLES else ""
    return f"row{'s' if len(rows) != 1 else ''} {shown}{more}"


def _warn(code: str, df: pd.DataFrame, why: str, help: str) -> list[Diagnostic]:
    out = []
    for f, rows in _group_rows(df).items():
        out.append(Diagnostic(code, "warning", f"{_n_rows(rows)} of table {f} not used: {why}",
                              path=f, help=help, notes=(_examples(rows),)))
    return out


def _match(ir: AuditIR, kind: str, df: pd.DataFrame, manifests: Mapping[str, Sequence[str]]):
    k = KINDS[kind]
    report: list[Diagnostic] = []
    if not len(df):
        return df, report
    keep = np.ones(len(df), bool)
    # ids the manifest does not have
    for arm, ids in manifests.items():
        idset = set(ids)
        mask = (df["arm"] == arm).to_numpy() & ~_isin(df["image_id"], idset) & keep
        if mask.any():
            bad = df[mask]
            sample = list(dict.fromkeys(bad["image_id"]))[:ROW_EXAMPLES]
            guesses = [f"'{i}' (did you mean '{g}'?)" if (g := did_you_mean(i, idset)) else f"'{i}'" for i in sample]
            more = len(set(bad["image_id"])) - len(sample)
            report += _warn("W0801", bad, f"image id{'s' if len(sample) > 1 else ''} "
                            f"{', '.join(guesses)}{f' and {more} more' if more > 0 else ''} "
                            f"{'are' if len(sample) > 1 else 'is'} not in the manifest of arm '{arm}'",
                            "use the manifest's ids (pairs: PAIR_ID with a `side` column, or PAIR_ID:preferred / "
                            "PAIR_ID:other), or remove the rows")
            keep &= ~mask
    # names the audit does not declare
    declared = set(ir.scorers) if kind == "scores" else set(ir.measures) | set(BUILTIN_MEASURES)
    mask = ~_isin(df["name"], declared) & keep
    if mask.any():
        names = sorted(set(df.loc[mask, "name"]))
        report += _warn("W0802", df[mask], f"{k.thing}{'s' if len(names) > 1 else ''} {', '.join(names)} "
                        f"{'are' if len(names) > 1 else 'is'} not declared in the audit",
                        f"declare the {k.thing} (e.g. `{'scorer' if kind == 'scores' else 'measure'} "
                        f"{names[0]} = ...`) to use these rows, or leave them: they are ignored")
        keep &= ~mask
    # operators and doses (snapped to the declared dose: 0.30000000000000004 is 0.3)
    dose = df["dose"].to_numpy(float).copy()
    arm_col, op_col = df["arm"].to_numpy(object), df["operator"].to_numpy(object)
    why = np.full(len(df), None, dtype=object)
    altered = keep & (op_col != ORIGINAL)
    pairs_arms = [a for a, arm_ir in ir.arms.items() if arm_ir.source == "pairs"]
    on_pairs = altered & np.isin(arm_col, pairs_arms)
    for a in dict.fromkeys(arm_col[on_pairs]):
        why[on_pairs & (arm_col == a)] = f"pairs arm '{a}' has no operators"
    altered &= ~on_pairs
    undeclared = altered & ~np.isin(op_col, list(ir.operators))
    for op in dict.fromkeys(op_col[undeclared]):
        guess = did_you_mean(op, ir.operators)
        why[undeclared & (op_col == op)] = (f"operator '{op}' is not declared"
                                            + (f" (did you mean '{guess}'?)" if guess else ""))
    keys = dose_keys(dose)
    for name, op in ir.operators.items():
        rows = np.flatnonzero(altered & (op_col == name))
        if not len(rows):
            continue
        declared = np.asarray(op.doses, float)
        snap = dict(zip(dose_keys(declared).tolist(), declared.tolist()))
        hit = np.isin(keys[rows], list(snap))
        dose[rows[hit]] = [snap[k] for k in keys[rows[hit]].tolist()]
        its = ", ".join(dose_text(d) for d in declared)
        for i in rows[~hit]:
            why[i] = f"operator '{name}' has no dose {dose_text(dose[i])} (its doses: {its})"
    bad = np.flatnonzero(why != None)  # noqa: E711  (elementwise)
    op_bad: dict[str, list[int]] = {}
    for i in bad:  # grouped by reason, in the order of the reasons' first rows
        op_bad.setdefault(why[i], []).append(int(i))
    for why, idx in op_bad.items():
        report += _warn("W0802", df.iloc[idx], why, "fix the operator or dose, or leave the rows: they are ignored")
        keep[idx] = False
    out = df.assign(dose=dose)[keep]
    # snapping can merge two keys (5 and 5.0000000001): a duplicate, like any other
    dup = out.duplicated(["arm", "image_id", "operator", "dose", "name"], keep=False)
    if dup.any():
        out = out.copy()
        out.loc[dup, "value"] = np.nan
        out = out.drop_duplicates(["arm", "image_id", "operator", "dose", "name"], keep="first")
    return out.reset_index(drop=True), report


def load_tables(ir: AuditIR, spec_dir: str | Path, *, root: str | Path | None = None) -> TableSet:
    """Read every declared table; merge them per kind; a key in two files is excluded (both named)."""
    tables = [read_long_table(path, kind, spec_dir=spec_dir, arm=arm, arms=list(ir.arms), root=root)
              for kind, path, arm in declared_tables(ir)]
    return combine(tables)


def combine(tables: Sequence[LongTable]) -> TableSet:
    """Merge tables per kind; keys given by more than one file are excluded with every file named."""
    excl = [e for t in tables for e in t.exclusions]
    diags = [d for t in tables for d in t.diagnostics]
    for t in tables:
        for u in t.unused:
            diags.append(Diagnostic("W0802", "warning", f"{_n_rows(u.rows)} of table {t.path} not used: {u.why}",
                                    path=t.path, help=u.help, notes=(_examples(u.rows),)))
    frames = {}
    for kind, k in KINDS.items():
        parts = [t.frame for t in tables if t.kind == kind and len(t.frame)]
        df = pd.concat(parts, ignore_index=True) if parts else empty_frame()
        key = ["arm", "image_id", "operator", "dose", "name"]
        dup = df.assign(_d=dose_keys(df["dose"])).duplicated(key[:3] + ["_d", "name"], keep=False).to_numpy()
        if dup.any():
            df = df.copy()
            for _, g in df[dup].assign(_d=dose_keys(df.loc[dup, "dose"])).groupby(key[:3] + ["_d", "name"], sort=True):
                where = " and ".join(f"{f} row {r}" for f, r in zip(g["file"], g["row"]))
                r0 = g.iloc[0]
                excl.append(Exclusion(r0["arm"], r0["image_id"], int(r0["row"]), k.stage,
                                      f"{where} both give the {k.noun} of image {r0['image_id']} for "
                                      f"{_subject(k, r0['name'], r0['operator'], r0['dose'])}; neither is used: "
                                      "keep it in one table"))
            df.loc[dup, "value"] = np.nan
            df = df.assign(_d=dose_keys(df["dose"])).drop_duplicates(key[:3] + ["_d", "name"]).drop(columns="_d")
        frames[kind] = df.reset_index(drop=True)
    return TableSet(tuple(tables), frames["scores"], frames["measures"], tuple(excl), tuple(diags))


# --------------------------------------------------------------------------- merge helpers for the executor

SCORE_COLUMNS = ("arm", "image_id", "operator", "dose", "scorer", "score")
MEASURE_COLUMNS = ("arm", "image_id", "operator", "dose", "name", "role", "value")


def _fill_identity(ir: AuditIR, df: pd.DataFrame, names_fill: set[str], images_arm: bool) -> pd.DataFrame:
    """Every operator's identity dose equals the original (spec/bundle.md): fill whichever is absent.

    An `original` row is taken from the first operator (by name) whose
    identity row exists; identity rows are copied from the `original` row.
    Rows given for both are kept as given.
    """
    if not images_arm or not ir.operators or not len(df):
        return df
    import polars as pl

    pair = ["image_id", "name"]
    rows = (pl.from_pandas(df[["image_id", "operator", "dose", "name", "value"]])
            .filter(pl.col("name").is_in(sorted(names_fill)))
            .with_columns(key=pl.Series(dose_keys(df.loc[_isin(df["name"], names_fill), "dose"]))))
    if not len(rows):
        return df
    given = rows.filter(pl.col("operator") == ORIGINAL).select(*pair, "value").unique(pair, keep="first")
    identity = {name: rows.filter((pl.col("operator") == name) & (pl.col("key") == dose_key(op.identity)))
                          .select(*pair, "value") for name, op in ir.operators.items()}
    # no original row: the first operator (by name) whose identity row exists gives it
    first = (pl.concat([identity[name].with_columns(rank=pl.lit(i)) for i, name in enumerate(sorted(identity))])
             .sort("rank").unique(pair, keep="first", maintain_order=True).drop("rank"))
    made = first.join(given, on=pair, how="anti")
    original = pl.concat([given, made])
    add = [made.with_columns(operator=pl.lit(ORIGINAL), dose=pl.lit(0.0))]
    for name, op in ir.operators.items():  # identity rows copied from the original
        add.append(original.join(identity[name], on=pair, how="anti")
                   .with_columns(operator=pl.lit(name), dose=pl.lit(float(op.identity))))
    extra = pl.concat(add).select("image_id", "operator", "dose", "name", "value").to_pandas()
    if not len(extra):
        return df
    extra = extra.assign(arm=df["arm"].iat[0], file=None, row=None)
    return pd.concat([df, extra[df.columns]], ignore_index=True)


def _arm_rows(ir: AuditIR, kind: str, arm: str, image_ids: Iterable[str] | None, tables: ProvidedTables):
    df = tables.frame(kind) if hasattr(tables, "frame") else getattr(tables, kind)
    if not len(df):
        return df
    df = df[df["arm"] == arm]
    if image_ids is not None:
        df = df[_isin(df["image_id"], image_ids)]
    declared = set(ir.scorers) if kind == "scores" else set(ir.measures) | set(BUILTIN_MEASURES)
    df = df[_isin(df["name"], declared)]
    ok_op = df["operator"].eq(ORIGINAL)
    arm_ir = ir.arms.get(arm)
    if arm_ir is not None and arm_ir.source == "images":
        for name, op in ir.operators.items():
            sel = df["operator"].eq(name)
            hit = np.isin(dose_keys(df["dose"]), [dose_key(x) for x in op.doses])
            ok_op |= sel & hit
    return df[ok_op.to_numpy()].copy()


def precomputed_scores(ir: AuditIR, arm: str, image_ids: Iterable[str] | None,
                       tables: ProvidedTables) -> pd.DataFrame:
    """The tables' scores of one arm in the scores.parquet layout (columns, dtypes, sort order).

    Only declared scorers and operators at declared doses; `original` and each
    operator's identity dose are filled from each other; an excluded cell is
    a NaN score (its exclusion is in `tables.exclusions`).
    """
    df = _arm_rows(ir, "scores", arm, image_ids, tables)
    arm_ir = ir.arms.get(arm)
    df = _fill_identity(ir, df, set(ir.scorers), arm_ir is not None and arm_ir.source == "images")
    out = pd.DataFrame({"arm": df["arm"].astype(TEXT), "image_id": df["image_id"].astype(TEXT),
                        "operator": df["operator"].astype(TEXT), "dose": df["dose"].astype(float),
                        "scorer": df["name"].astype(TEXT), "score": df["value"].astype(float)},
                       columns=list(SCORE_COLUMNS))
    return out.sort_values(list(SCORE_COLUMNS[:5]), kind="stable").reset_index(drop=True)


def precomputed_measures(ir: AuditIR, arm: str, image_ids: Iterable[str] | None,
                         tables: ProvidedTables) -> pd.DataFrame:
    """The tables' measures/covariates of one arm in the measures.parquet layout (role from the audit)."""
    df = _arm_rows(ir, "measures", arm, image_ids, tables)
    arm_ir = ir.arms.get(arm)
    df = _fill_identity(ir, df, set(ir.measures), arm_ir is not None and arm_ir.source == "images")
    roles = {n: m.role for n, m in ir.measures.items()}
    out = pd.DataFrame({"arm": df["arm"].astype(TEXT), "image_id": df["image_id"].astype(TEXT),
                        "operator": df["operator"].astype(TEXT), "dose": df["dose"].astype(float),
                        "name": df["name"].astype(TEXT),
                        "role": pd.Series([roles.get(n, "builtin") for n in df["name"]], index=df.index, dtype=TEXT),
                        "value": df["value"].astype(float)}, columns=list(MEASURE_COLUMNS))
    return out.sort_values(list(MEASURE_COLUMNS[:6]), kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------- manifest columns, no images


def _is_precomputed_column(ir: AuditIR, scorer: str) -> bool:
    call = ir.scorers[scorer].call
    return reads_data(call.plugin) and not reads_tables_only(call.plugin, call.params)


def manifest_scores(ir: AuditIR, arm: str, records: Iterable[Any],
                    skip: Iterable[tuple[str, str]] = ()) -> tuple[pd.DataFrame, list[Exclusion]]:
    """Scores of `precomputed(column:|preferred:, other:)` scorers read from manifest rows.

    `records` are objects with `image_id`, `row`, `side` and `columns` (the
    manifest row), like `runtime.images.ImageRecord`. Rows for the original
    image, and for an images arm every operator's doses too (the manifest has
    one value per image, so every score change is 0, as when the scorer runs
    in the executor). A bad cell is a NaN score plus an exclusion (stage
    "score"). (arm, scorer) pairs in `skip` (provided by a table) are left out.
    """
    from scoreaudit.plugins.base import ScoreItem, ScoreUnavailableForItem
    from scoreaudit.plugins.scorers.precomputed import Precomputed

    from scoreaudit.compiler.demand import demand_of

    arm_ir = ir.arms[arm]
    need = demand_of(ir)  # only the scorers (and operators) the plan reads on this arm
    skip = set(skip)
    records = list(records)
    recs, excl = [], []
    for scorer in ir.scorers:
        if not _is_precomputed_column(ir, scorer) or (arm, scorer) in skip:
            continue
        if not need.has(("score", arm, scorer, ORIGINAL)):
            continue
        variants = [(ORIGINAL, 0.0)]
        if arm_ir.source == "images":
            variants += [(name, float(d)) for name, op in ir.operators.items() for d in op.doses
                         if need.has(("score", arm, scorer, name))]
        impl = Precomputed(ir.scorers[scorer].call.params)
        items = [ScoreItem(arm=arm, image_id=r.image_id, operator=ORIGINAL, dose=0.0, u=0.0, placebo=False,
                           row=dict(r.columns), measures={}, side=r.side) for r in records]
        try:
            values = impl.score(None, None, items)
        except ScoreUnavailableForItem as exc:
            values = exc.scores
            for k, reason in sorted(exc.reasons.items()):
                r = records[k]
                excl.append(Exclusion(arm, r.image_id, r.row, "score", f"{reason} ({scorer}, row {r.row})"))
        for r, v in zip(records, values):
            for op, d in variants:
                recs.append({"arm": arm, "image_id": r.image_id, "operator": op, "dose": d, "scorer": scorer,
                             "score": float(v)})
    out = pd.DataFrame.from_records(recs, columns=list(SCORE_COLUMNS)) if recs else \
        pd.DataFrame({c: pd.Series(dtype=float if c in ("dose", "score") else TEXT) for c in SCORE_COLUMNS})
    out = out.astype({c: (float if c in ("dose", "score") else TEXT) for c in SCORE_COLUMNS})
    return out.sort_values(list(SCORE_COLUMNS[:5]), kind="stable").reset_index(drop=True), excl


@dataclass(frozen=True)
class ManifestRow:
    """A manifest row as an arm's image (what `manifest_scores` and coverage need), without a file."""

    arm: str
    image_id: str
    row: int
    cluster: str
    side: str | None = None
    pair_id: str | None = None
    columns: Mapping[str, Any] = field(default_factory=dict)


def imageless_rows(ir: AuditIR, arm: str, records: Records) -> tuple[list[ManifestRow], list[Diagnostic]]:
    """Rows of a `pairs(..., images: false)` manifest as two images per pair (`ID:preferred`, `ID:other`).

    The model for the loader (runtime/images.py) to follow for arms without
    files: ids from the `id` column (or the row number when the manifest has
    none), clusters from `cluster` (else the pair id), no paths read. Missing
    or duplicate ids are E0708/E0703 errors, as for manifests with images.
    """
    p = ir.arms[arm].call.params
    id_col, cluster_col = p.get("id", "id"), ir.arms[arm].cluster or p.get("cluster")
    have_id = id_col in records.columns
    out, diags, first = [], [], {}
    for no, raw in records.rows:
        base = _text(raw.get(id_col))[0] if have_id else str(no)
        if base is None:
            diags.append(Diagnostic("E0708", "error", f"arm '{arm}': row {no} has no value in id column '{id_col}'",
                                    help="give every row a unique id"))
            continue
        if base in first:
            diags.append(Diagnostic("E0703", "error", f"duplicate pair id '{base}': row {first[base]} and row {no}",
                                    help="ids must be unique within an arm; rename or remove one of the rows"))
            continue
        first[base] = no
        cluster = (_text(raw.get(cluster_col))[0] if cluster_col else None) or base
        for side in SIDES:
            out.append(ManifestRow(arm, f"{base}:{side}", no, cluster, side, base, dict(raw)))
    return out, diags


# --------------------------------------------------------------------------- provenance


def provenance(tables: TableSet, manifest_sources: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """results.json["precomputed"]: one entry per table (and per manifest that holds scores).

    Entry: {"file", "sha256", "provides": "scores" | "measures", "arm" (null: the
    audit block's table), "names": the scorers/measures it gave the audit,
    "by_arm": {arm: those names it gave that arm} (what the report's appendix
    reads: an audit block's table may give a scorer on one arm only),
    "rows": rows in the file, "used": cells the audit read}. `manifest_sources`
    are extra entries built by the caller for manifest-column scores (same keys).
    """
    out = []
    for t in tables.tables:
        df = tables.frame(t.kind)
        used = df[df["file"] == t.path] if len(df) else df
        by_arm: dict[str, list[str]] = {}
        for arm, name in sorted(set(zip(used["arm"], used["name"]))) if len(used) else ():
            by_arm.setdefault(str(arm), []).append(str(name))
        out.append({"file": t.path, "sha256": t.sha256, "provides": t.kind, "arm": t.arm,
                    "names": sorted(set(used["name"])) if len(used) else [], "by_arm": by_arm,
                    "rows": t.n_rows, "used": int(len(used))})
    out += [dict(m) for m in manifest_sources]
    return sorted(out, key=lambda e: (e["provides"], e["file"], e.get("arm") or ""))


def manifest_provenance(ir: AuditIR, spec_dir: str | Path) -> list[dict[str, Any]]:
    """Entries for manifests whose columns hold scores (`precomputed(column:|preferred:|other:)`)."""
    names = [s for s in ir.scorers if _is_precomputed_column(ir, s)]
    out = []
    if not names:
        return out
    for arm_name, arm in ir.arms.items():
        rel = arm.call.params.get("manifest")
        if not rel:
            continue
        path = Path(spec_dir) / rel
        try:
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            sha = None
        out.append({"file": Path(rel).as_posix(), "sha256": sha, "provides": "scores", "arm": arm_name,
                    "names": sorted(names), "by_arm": {arm_name: sorted(names)}, "source": "manifest columns"})
    return out


# --------------------------------------------------------------------------- the check, in one call


def manifest_ids(ir: AuditIR, spec_dir: str | Path, *, root: str | Path | None = None) -> dict[str, list[str]]:
    """Each arm's image ids, read without decoding (pairs: `ID:preferred`, `ID:other`).

    Arms whose manifest cannot be read are left out (the run reports them,
    E07xx); an `images: false` arm is read by `imageless_rows`, others by the
    manifest loader (rows whose file is missing are not images of the arm).
    """
    from scoreaudit.runtime.images import load_manifest

    out: dict[str, list[str]] = {}
    for name, arm in ir.arms.items():
        if arm.call.params.get("images") is False:
            try:
                rows, diags = imageless_rows(ir, name, read_records(Path(spec_dir) / arm.call.params["manifest"]))
            except TableError:
                continue
            if not any(d.is_error for d in diags):
                out[name] = [r.image_id for r in rows]
            continue
        result = load_manifest(arm, spec_dir, on_error="skip", root=root, probe=False)
        if result.ok:
            out[name] = [r.image_id for r in result.records]
    return out


def check_precomputed(ir: AuditIR, spec_dir: str | Path, *, root: str | Path | None = None,
                      limit: int | None = None) -> tuple[list[Diagnostic], TableSet | None]:
    """Everything `scoreaudit check` says about precomputed inputs: table problems (E0801/E0803/E0806),
    rows not used (W0801/W0802), sources (E0804/E0805) and missing cells (E0802).

    Returns (diagnostics, the matched TableSet or None when the audit uses no
    precomputed input). Exclusions are not diagnostics: the run records them.
    """
    from scoreaudit.compiler.coverage import LIMIT, coverage_diagnostics

    if not uses_precomputed(ir):
        return [], None
    tables = load_tables(ir, spec_dir, root=root)
    ids = manifest_ids(ir, spec_dir, root=root)
    tables = tables.matched(ir, ids)
    diags = list(tables.diagnostics)
    if tables.ok:  # a table that cannot be read provides nothing: its holes would only repeat E0801/E0803
        diags += coverage_diagnostics(ir, ids, tables, LIMIT if limit is None else limit)
    return diags, tables
