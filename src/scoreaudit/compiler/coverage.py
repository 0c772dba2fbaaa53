"""What the hypotheses read, and which of it precomputed tables leave out (spec/precomputed.md).

A scorer is *table-provided* on an arm when the arm's or the audit block's
scores table has rows for that scorer name (whatever the scorer's plugin: the
table wins, the plugin is not run there); `precomputed()` without arguments
means "only from a table". Likewise a measure or covariate is table-provided
on an arm when a measures table has rows for its name. A table-provided
(arm, name) must hold every cell the audit reads, because the runtime will
not compute the rest: `missing_cells` lists the ones it lacks and
`coverage_diagnostics` turns them into errors that name each cell.

What a cell reads comes from its statistic's registry entry (`reads` in
scoreaudit.plugins.statistics, interpreted by compiler/reads.py): e.g. the
operator at every dose, its placebo, the measures under it, a selection's
operator and measure, or what a nested statistic reads (on each arm the cell
names); statistics that declare nothing read the `original` image.
Validations read their measure under their operator on every images arm; a
cell about an attribute axis (measure, operator) reads the builtin `leakage`
under that operator (the auditability verdict). An operator's identity dose
and the `original` image are the same picture: either row covers the other.

Pure functions of the IR, the manifests' image ids and the tables' key
columns: no file access, so `scoreaudit check` and tests call them directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from scoreaudit.compiler.doses import dose_key
from scoreaudit.compiler.ir import ORIGINAL, AuditIR, CellIR
from scoreaudit.diagnostics import Diagnostic, did_you_mean
from scoreaudit.registry import reads_data, reads_tables_only

LIMIT = 10  # missing cells named one by one before a summary
LEAKAGE = "leakage"


class MissingCell(NamedTuple):
    """A cell the audit reads that a table-provided (arm, name) lacks; `name` is the scorer or measure."""

    arm: str
    image_id: str
    operator: str
    dose: float
    name: str


class ProvidedTables(Protocol):
    """What coverage reads of the precomputed tables (runtime.precomputed.TableSet is one).

    `scores` and `measures`: DataFrames with at least the columns arm,
    image_id, operator, dose, name, file (one row per key present; a row
    whose value was excluded still counts as present).
    """

    @property
    def scores(self) -> Any: ...

    @property
    def measures(self) -> Any: ...


# ---------------------------------------------------------------- what a statistic reads

# Each statistic's registry entry says what it reads (compiler/reads.py interprets it).
from scoreaudit.compiler.reads import Reads, reads  # noqa: E402,F401 - Reads re-exported


def _doses(ir: AuditIR, operator: str) -> tuple[float, ...]:
    if operator == ORIGINAL:
        return (0.0,)
    op = ir.operators.get(operator)
    return tuple(float(d) for d in op.doses) if op is not None else ()


def cell_arms(cell: CellIR) -> tuple[str, ...]:
    return cell.arms or ((cell.arm,) if cell.arm else ())


Needs = dict[tuple[str, str], dict[tuple[str, float], list[str]]]  # (arm, name) → (operator, dose) → why


def _add(needs: Needs, arm: str, name: str, ir: AuditIR, operator: str, why: str) -> None:
    for d in _doses(ir, operator):
        needs.setdefault((arm, name), {}).setdefault((operator, d), [])
        if why not in needs[(arm, name)][(operator, d)]:
            needs[(arm, name)][(operator, d)].append(why)


def score_needs(ir: AuditIR) -> Needs:
    """(arm, scorer) → (operator, dose) → ids of the cells that read it."""
    needs: Needs = {}
    for cell in ir.cells():
        for arm, scorer, stat in cell.parts():
            for op in reads(stat, ir).operators:
                _add(needs, arm, scorer, ir, op, cell.id)
    return needs


def measure_needs(ir: AuditIR) -> Needs:
    """(arm, measure) → (operator, dose) → what reads it (cell ids, `validate m under o`, verdicts)."""
    needs: Needs = {}
    for cell in ir.cells():
        for arm, _, stat in cell.parts():
            for op, name in reads(stat, ir).measures:
                _add(needs, arm, name, ir, op, cell.id)
        for arm in cell_arms(cell):
            if cell.axis is not None and ir.arms.get(arm) is not None and ir.arms[arm].source == "images":
                _add(needs, arm, LEAKAGE, ir, cell.axis[1], f"the verdict of axis {cell.axis[0]} × {cell.axis[1]}")
    for v in ir.validations:
        for arm, a in ir.arms.items():
            if a.source == "images":
                _add(needs, arm, v.measure, ir, v.operator, f"validate {v.measure} under {v.operator}")
    return needs


# ---------------------------------------------------------------- what the tables give


def _frame(tables: ProvidedTables, kind: str):
    return getattr(tables, kind)


def provided(tables: ProvidedTables | None) -> dict[str, set[tuple[str, str]]]:
    """{"scores": {(arm, scorer)}, "measures": {(arm, measure)}} that the tables provide (any row)."""
    out: dict[str, set[tuple[str, str]]] = {"scores": set(), "measures": set()}
    if tables is None:
        return out
    for kind in out:
        df = _frame(tables, kind)
        if df is not None and len(df):
            out[kind] = set(zip(df["arm"], df["name"]))
    return out


def _files(tables: ProvidedTables, kind: str, arm: str, name: str) -> list[str]:
    df = _frame(tables, kind)
    if df is None or not len(df) or "file" not in df:
        return []
    sel = df[(df["arm"] == arm) & (df["name"] == name)]
    return sorted({str(f) for f in sel["file"] if f is not None})


def missing_cells(ir: AuditIR, manifests: Mapping[str, Sequence[str]], tables: ProvidedTables | None,
                  kind: str = "scores") -> list[MissingCell]:
    """Cells the audit reads that table-provided (arm, name)s lack, sorted as in spec/bundle.md.

    `manifests` maps an arm to its image ids (pairs: `PAIR:preferred` and
    `PAIR:other`); arms absent from it are not checked. `kind` is "scores"
    (name = scorer) or "measures" (name = measure or covariate).
    """
    if tables is None:
        return []
    needs = score_needs(ir) if kind == "scores" else measure_needs(ir)
    given = provided(tables)[kind]
    df = _frame(tables, kind)
    identities = sorted((name, dose_key(op.identity)) for name, op in ir.operators.items())
    out: list[MissingCell] = []

    def has(present: set, image_id: str, operator: str, dose: float) -> bool:
        if (image_id, operator, dose_key(dose)) in present:
            return True
        if operator == ORIGINAL:
            return any((image_id, o, d) in present for o, d in identities)
        op = ir.operators.get(operator)
        return op is not None and dose_key(op.identity) == dose_key(dose) and (image_id, ORIGINAL, 0.0) in present

    for (arm, name), need in sorted(needs.items()):
        if (arm, name) not in given or arm not in manifests:
            continue
        sel = df[(df["arm"] == arm) & (df["name"] == name)]
        present = set(zip(sel["image_id"], sel["operator"], (dose_key(d) for d in sel["dose"])))
        for image_id in manifests[arm]:
            for (operator, dose) in sorted(need):
                if not has(present, image_id, operator, dose):
                    out.append(MissingCell(arm, str(image_id), operator, float(dose), name))
    return sorted(out, key=lambda c: (c.arm, c.image_id, c.operator, c.dose, c.name))


# ---------------------------------------------------------------- diagnostics


def dose_text(d: float) -> str:
    """5.0 → "5", 0.25 → "0.25" (the shortest text that reads back as the same float)."""
    d = float(d)
    return str(int(d)) if d.is_integer() and abs(d) < 1e15 else repr(d)


KIND_WORDS = {"scores": ("score", "scorer"), "measures": ("value", "measure")}


def format_missing(missing: Sequence[MissingCell], tables: ProvidedTables, ir: AuditIR, kind: str = "scores",
                   limit: int = LIMIT) -> list[Diagnostic]:
    """E0802 errors: the first `limit` missing cells one by one, then one summary with the count."""
    if not missing:
        return []
    noun, thing = KIND_WORDS[kind]
    needs = score_needs(ir) if kind == "scores" else measure_needs(ir)
    out = []
    for c in missing[:limit]:
        files = _files(tables, kind, c.arm, c.name)
        shown = " and ".join(files) or "(none)"
        why = needs.get((c.arm, c.name), {}).get((c.operator, c.dose), [])
        notes = [f"image {c.image_id} is in arm '{c.arm}'; needed by {', '.join(why[:3])}"
                 f"{f' and {len(why) - 3} more' if len(why) > 3 else ''}"] if why else []
        out.append(Diagnostic(
            "E0802", "error",
            f"{kind} table {shown} has no {noun} for image {c.image_id}, operator {c.operator}, "
            f"dose {dose_text(c.dose)}, {thing} {c.name}",
            path=files[0] if files else None,
            help=f"add a row (id {c.image_id}, operator {c.operator}, dose {dose_text(c.dose)}, {thing} {c.name}, "
                 f"{noun} ...) to {shown}, or remove the claims that need it: the audit does not compute "
                 f"what a table provides",
            notes=tuple(notes)))
    rest = missing[limit:]
    if rest:
        groups: dict[tuple[str, str], list[MissingCell]] = {}
        for c in rest:
            groups.setdefault((c.arm, c.name), []).append(c)
        notes = []
        for (arm, name), cs in sorted(groups.items()):
            ids = list(dict.fromkeys(c.image_id for c in cs))
            notes.append(f"arm '{arm}', {thing} {name}: {len(cs)} cell{'s' if len(cs) != 1 else ''} "
                         f"(images {', '.join(ids[:5])}{f' and {len(ids) - 5} more' if len(ids) > 5 else ''})")
        files = sorted({f for c in rest for f in _files(tables, kind, c.arm, c.name)})
        which = f"{kind} table {files[0]} lacks" if len(files) == 1 else \
            f"{kind} tables {' and '.join(files)} lack"
        out.append(Diagnostic(
            "E0802", "error",
            f"{which} {len(rest)} more cell{'s' if len(rest) != 1 else ''} that the audit reads "
            f"({len(missing)} in all)",
            path=files[0] if files else None,
            help="complete the table (every image of the arm at every dose the claims read), or remove the claims "
                 "that need the missing cells",
            notes=tuple(notes)))
    return out


def is_table_only(ir: AuditIR, scorer: str) -> bool:
    """A data-reading scorer (`precomputed()`) with no column arguments: scores only from a table."""
    call = ir.scorers[scorer].call
    return reads_tables_only(call.plugin, call.params)


def is_precomputed(ir: AuditIR, scorer: str) -> bool:
    return reads_data(ir.scorers[scorer].call.plugin)


def reads_manifest_column(ir: AuditIR, scorer: str) -> bool:
    """A data-reading scorer given a column (`precomputed(column:|preferred:|other:)`): its scores are read
    from the manifest's rows."""
    return is_precomputed(ir, scorer) and not is_table_only(ir, scorer)


def _cells_by_arm_scorer(ir: AuditIR) -> dict[tuple[str, str], list[str]]:
    out: dict[tuple[str, str], list[str]] = {}
    for cell in ir.cells():
        for arm in cell_arms(cell):
            out.setdefault((arm, cell.scorer), []).append(cell.id)
    return out


def source_diagnostics(ir: AuditIR, tables: ProvidedTables | None) -> list[Diagnostic]:
    """E0804 (table-only scorer without rows on an arm it is used on), E0805 (imageless arm, pixel scorer)."""
    given = provided(tables)["scores"]
    df = _frame(tables, "scores") if tables is not None else None
    out = []
    for (arm, scorer), cells in sorted(_cells_by_arm_scorer(ir).items()):
        if arm not in ir.arms or scorer not in ir.scorers or (arm, scorer) in given:
            continue
        if is_table_only(ir, scorer):
            there = sorted({n for a, n in given if a == arm})
            guess = did_you_mean(scorer, there)
            notes = [f"scores tables give arm '{arm}' the scorers: {', '.join(there)}" if there else
                     f"no scores table gives arm '{arm}' any rows"]
            if df is not None and len(df):
                notes.append(f"tables read: {', '.join(sorted(set(df['file'].dropna())))}")
            out.append(Diagnostic(
                "E0804", "error",
                f"scorer '{scorer}' = precomputed() takes its scores from a table, but no scores table has rows "
                f"for scorer '{scorer}' on arm '{arm}' (needed by {', '.join(cells[:3])}"
                f"{f' and {len(cells) - 3} more' if len(cells) > 3 else ''})",
                help=(f"did you mean '{guess}'? The table's scorer column must hold the scorer's name"
                      if guess else
                      f"add `scores: \"PATH\"` to arm '{arm}' (or to the audit block, with an `arm` column) with rows "
                      f"whose scorer is '{scorer}', or read a manifest column: `precomputed(column: COL)`"),
                notes=tuple(notes)))
            continue
        a = ir.arms[arm]
        if a.source == "pairs" and a.call.params.get("images") is False and not is_precomputed(ir, scorer):
            plugin = ir.scorers[scorer].call.plugin
            out.append(Diagnostic(
                "E0805", "error",
                f"arm '{arm}' has no image files (`images: false`), but scorer '{scorer}' ({plugin}) needs the "
                f"images to score them (needed by {', '.join(cells[:3])}"
                f"{f' and {len(cells) - 3} more' if len(cells) > 3 else ''})",
                help=f"give scorer '{scorer}' precomputed scores for arm '{arm}' (a scores table, or "
                     "`precomputed(preferred: COL_A, other: COL_B)`), list only precomputed scorers in the claims "
                     f"on '{arm}' (`for s1, s2`), or give the pairs image paths and drop `images: false`"))
    return out


def coverage_diagnostics(ir: AuditIR, manifests: Mapping[str, Sequence[str]], tables: ProvidedTables | None,
                         limit: int = LIMIT) -> list[Diagnostic]:
    """Every coverage problem: E0804/E0805 sources, then E0802 missing score and measure cells."""
    out = source_diagnostics(ir, tables)
    if tables is not None:
        for kind in ("scores", "measures"):
            out += format_missing(missing_cells(ir, manifests, tables, kind), tables, ir, kind, limit)
    return out


# ---------------------------------------------------------------- catalogue entries

# (code, title, cause, fix, stage) for compiler/codes.py's CATALOGUE (stage "runtime": the
# check reads files; documented in spec/precomputed.md until merged into spec/diagnostics.md).
PRECOMPUTED_CODES: tuple[tuple[str, str, str, str, str], ...] = (
    ("E0801", "precomputed table unreadable",
     "A `scores:`/`measures:` table does not exist, has an unsupported format, or cannot be parsed "
     "(the message names the file and, for JSON, the line).",
     "Fix the path (relative to the spec's folder) or the file; formats: .csv, .tsv, .parquet, .jsonl, "
     ".json (a list of records).", "runtime"),
    ("E0802", "precomputed table lacks a needed cell",
     "A scorer (or measure) whose values come from a table is read by a claim at an (image, operator, dose) "
     "the table has no row for; the audit never computes what a table provides.",
     "Add the rows the message names, or remove the claims that read them.", "runtime"),
    ("E0803", "precomputed table lacks a column",
     "A table has no id, scorer/measure, score/value column (or no `arm` column in the audit block's table, "
     "or no `dose` column while rows name operators).",
     "Rename the column as the did-you-mean suggests, or add it; see spec/precomputed.md for the layouts.",
     "runtime"),
    ("E0804", "precomputed() scorer without table rows",
     "`precomputed()` without arguments takes its scores from a scores table, but no table gives that "
     "scorer's name rows on an arm a claim uses it on.",
     "Point the arm (or the audit block) at a table with rows for the scorer, or read a manifest column: "
     "`precomputed(column: COL)`.", "runtime"),
    ("E0805", "scorer needs images on an arm without images",
     "A `pairs(..., images: false)` arm has no image files, but a claim uses a scorer on it that must see "
     "pixels.",
     "Give the scorer precomputed scores for the arm, restrict the claim to precomputed scorers, or give "
     "the pairs image paths.", "runtime"),
    ("E0806", "precomputed table outside the project",
     "A `scores:`/`measures:` path leaves the spec's folder.", "Keep the tables under the spec's folder.",
     "runtime"),
    ("W0801", "table ids not in the manifest",
     "Rows of a precomputed table name image ids the arm's manifest does not have; they are not used.",
     "Use the manifest's ids (pairs: the pair id with a `side` column, or PAIR:preferred / PAIR:other).",
     "runtime"),
    ("W0802", "table rows not used",
     "Rows name an arm, scorer, measure, operator or dose the audit does not declare (or another arm than "
     "the one whose table it is); they are listed and ignored.",
     "Declare what they name, fix the names, or leave them (they are ignored).", "runtime"),
)


def iter_codes() -> Iterable[tuple[str, str, str, str, str]]:
    return iter(PRECOMPUTED_CODES)


TABLE_KINDS = ("scores", "measures")


def declared_tables(ir: AuditIR) -> list[tuple[str, str, str | None]]:
    """(kind, path, arm or None) of every table the audit block and the arms name, in spec order."""
    out: list[tuple[str, str, str | None]] = []
    for kind in TABLE_KINDS:
        path = getattr(ir.settings, kind, None)
        if path:
            out.append((kind, path, None))
    for name, arm in ir.arms.items():
        for kind in TABLE_KINDS:
            path = arm.call.params.get(kind)
            if path:
                out.append((kind, path, name))
    return out


def uses_precomputed(ir: AuditIR) -> bool:
    """Whether the audit declares a table, a table-only scorer or an arm without images (else: nothing to check)."""
    return bool(declared_tables(ir)) or any(is_table_only(ir, s) for s in ir.scorers) or any(
        a.call.params.get("images") is False for a in ir.arms.values())
