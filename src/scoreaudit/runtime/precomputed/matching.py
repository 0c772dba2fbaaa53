"""Every precomputed table of an audit merged, and matched against its manifests and declarations.

Duplicates across files are exclusions; ids not in the manifest are W0801,
undeclared arms, scorers, measures, operators or doses W0802. The joins are
vectorized (bench/tables.py measures them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from scoreaudit.compiler.coverage import declared_tables, dose_text
from scoreaudit.compiler.doses import dose_keys
from scoreaudit.compiler.ir import ORIGINAL, AuditIR
from scoreaudit.diagnostics import Diagnostic, did_you_mean
from scoreaudit.runtime.images import Exclusion
from scoreaudit.runtime.precomputed.reading import (
    BUILTIN_MEASURES,
    KINDS,
    ROW_EXAMPLES,
    LongTable,
    _subject,
    empty_frame,
    read_long_table,
    text_isin,
)

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

    def matched(self, ir: AuditIR, manifests: Mapping[str, Sequence[str]]) -> TableSet:
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
                stray = before.loc[(before["arm"] == arm) & ~text_isin(before["image_id"], ids), "image_id"]
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
        mask = (df["arm"] == arm).to_numpy() & ~text_isin(df["image_id"], idset) & keep
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
    mask = ~text_isin(df["name"], declared) & keep
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
