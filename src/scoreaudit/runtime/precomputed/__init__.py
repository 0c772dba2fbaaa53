"""Precomputed results: long tables of scores and measures computed elsewhere (spec/precomputed.md).

A user who already has numbers (last month's cluster job, their own
pipeline, human ratings) points an arm or the audit at a long table; the
audit reads those numbers instead of computing them, and says so in
`results.json["precomputed"]` (file name and sha256).

Entry points (the facade and the executor call these; see spec/precomputed.md), one job per module:
`reading` (one table), `matching` (every table of an audit against its manifests),
`rows` (the bundle's rows, from tables and from manifest columns), `provenance`
(results.json["precomputed"]) and `check` (what `scoreaudit check` says). The
names below are re-exported here for callers that want the whole layer.

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
"""

from importlib import import_module
from typing import Any

# Bound now, not on first use: `provenance` is also a submodule's name, which importing that submodule
# would otherwise leave here in place of the function (the module imports no pandas).
from scoreaudit.runtime.precomputed.provenance import manifest_provenance, provenance

#: Where each re-exported name lives. The names are loaded on first use (PEP 562), not when the package is
#: imported: the executor reads `provenance` on every run, and a run without tables must not pay for
#: `reading`, `matching` and `rows`, which import pandas (a cached re-run, issue 33).
_EXPORTS = {
    **dict.fromkeys(("ProvidedTables", "declared_tables", "dose_text", "provided", "uses_precomputed"),
                    "scoreaudit.compiler.coverage"),
    **dict.fromkeys(("check_precomputed", "manifest_ids"), "scoreaudit.runtime.precomputed.check"),
    **dict.fromkeys(("TableSet", "combine", "load_tables"), "scoreaudit.runtime.precomputed.matching"),
    **dict.fromkeys(("KINDS", "Kind", "LongTable", "empty_frame", "layout", "number", "read_long_table"),
                    "scoreaudit.runtime.precomputed.reading"),
    **dict.fromkeys(("ManifestRow", "imageless_rows", "manifest_scores", "precomputed_measures", "precomputed_scores"),
                    "scoreaudit.runtime.precomputed.rows"),
    **dict.fromkeys(("Records", "TableError", "read_frame", "read_records"), "scoreaudit.runtime.tablefile"),
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


__all__ = ["KINDS", "Kind", "LongTable", "ManifestRow", "ProvidedTables", "Records", "TableError", "TableSet",
           "check_precomputed", "combine", "declared_tables", "dose_text", "empty_frame", "imageless_rows", "layout",
           "load_tables", "manifest_ids", "manifest_provenance", "manifest_scores", "number", "precomputed_measures",
           "precomputed_scores", "provenance", "provided", "read_frame", "read_long_table", "read_records",
           "uses_precomputed"]
