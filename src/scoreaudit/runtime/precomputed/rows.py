"""Precomputed numbers as the bundle's rows: what the executor appends to scores.parquet / measures.parquet.

From long tables (`precomputed_scores`, `precomputed_measures`, spec/bundle.md's
layout and sort order) and from manifest columns for arms without image files
(`manifest_scores`, `imageless_rows`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from scoreaudit.compiler.coverage import ProvidedTables, reads_manifest_column
from scoreaudit.compiler.doses import dose_key, dose_keys
from scoreaudit.compiler.ir import ORIGINAL, AuditIR
from scoreaudit.diagnostics import Diagnostic
from scoreaudit.runtime.images import Exclusion
from scoreaudit.runtime.precomputed.reading import BUILTIN_MEASURES, SIDES, text_isin
from scoreaudit.runtime.tablefile import (
    TEXT,
    Records,
    _text,
)

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
            .with_columns(key=pl.Series(dose_keys(df.loc[text_isin(df["name"], names_fill), "dose"]))))
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
        df = df[text_isin(df["image_id"], image_ids)]
    declared = set(ir.scorers) if kind == "scores" else set(ir.measures) | set(BUILTIN_MEASURES)
    df = df[text_isin(df["name"], declared)]
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
    from scoreaudit.compiler.demand import demand_of
    from scoreaudit.plugins.base import ScoreItem, ScoreUnavailableForItem
    from scoreaudit.plugins.scorers.precomputed import Precomputed

    arm_ir = ir.arms[arm]
    need = demand_of(ir)  # only the scorers (and operators) the plan reads on this arm
    skip = set(skip)
    records = list(records)
    recs, excl = [], []
    for scorer in ir.scorers:
        if not reads_manifest_column(ir, scorer) or (arm, scorer) in skip:
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

    The model for the loader (runtime/manifests.py) to follow for arms without
    files: ids from the `id` column (or the row number when the manifest has
    none), clusters from `cluster` (else the pair id), no paths read. Missing
    or duplicate ids are E0708/E0703 errors, as for manifests with images.
    """
    p = ir.arms[arm].call.params
    id_col, cluster_col = p.get("id", "id"), ir.arms[arm].cluster or p.get("cluster")
    have_id = id_col in records.columns
    out: list = []
    diags: list = []
    first: dict = {}
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
