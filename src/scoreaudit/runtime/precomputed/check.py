"""Everything `scoreaudit check` says about an audit's precomputed inputs, in one call."""

from __future__ import annotations

from pathlib import Path

from scoreaudit.compiler.coverage import uses_precomputed
from scoreaudit.compiler.ir import AuditIR
from scoreaudit.diagnostics import Diagnostic
from scoreaudit.runtime.precomputed.matching import TableSet, load_tables
from scoreaudit.runtime.precomputed.rows import imageless_rows
from scoreaudit.runtime.tablefile import (
    TableError,
    read_records,
)

# --------------------------------------------------------------------------- the check, in one call


def manifest_ids(ir: AuditIR, spec_dir: str | Path, *, root: str | Path | None = None) -> dict[str, list[str]]:
    """Each arm's image ids, read without decoding (pairs: `ID:preferred`, `ID:other`).

    Arms whose manifest cannot be read are left out (the run reports them,
    E07xx); an `images: false` arm is read by `imageless_rows`, others by the
    manifest loader (rows whose file is missing are not images of the arm).
    """
    from scoreaudit.runtime.manifests import load_manifest

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
