"""results.json["precomputed"]: which file gave which numbers (file name, sha256, names, rows used)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scoreaudit.compiler.coverage import reads_manifest_column
from scoreaudit.compiler.ir import AuditIR

if TYPE_CHECKING:  # this module imports no pandas: the executor calls it on every run (issue 33)
    from scoreaudit.runtime.precomputed.matching import TableSet

# --------------------------------------------------------------------------- provenance


def provenance(tables: TableSet | None, manifest_sources: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """results.json["precomputed"]: one entry per table (and per manifest that holds scores).

    Entry: {"file", "sha256", "provides": "scores" | "measures", "arm" (null: the
    audit block's table), "names": the scorers/measures it gave the audit,
    "by_arm": {arm: those names it gave that arm} (what the report's appendix
    reads: an audit block's table may give a scorer on one arm only),
    "rows": rows in the file, "used": cells the audit read}. `manifest_sources`
    are extra entries built by the caller for manifest-column scores (same keys). `tables` None: the audit
    declares none.
    """
    out = []
    for t in tables.tables if tables is not None else ():
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
    names = [s for s in ir.scorers if reads_manifest_column(ir, s)]
    out: list[dict[str, Any]] = []
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
