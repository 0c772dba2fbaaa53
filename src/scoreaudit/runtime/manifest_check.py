"""`scoreaudit check` reads the manifests that exist: every missing or misspelled column, before any run.

A manifest or image folder outside the spec's folder is E0707 here as in `run`, before anything of
it is opened or listed.

The same column rules as the run (`images.load_manifest`, fed by
`columns.required_columns`), so a misspelled column fails `check`, not an hour
into `run`. Manifests or folders that do not exist yet are skipped (data may
arrive later; `run` reports them; so are image files). Row problems that
stop the run (an arm without rows, E0705; under `on_error: fail` a row
without an id or path, E0708) stop `check` too: the same loader with the
same policy. Each problem points at the arm's
declaration in the spec (its span travels in the IR: nothing here reads the spec's text). A manifest with no `id` column gets W0620: ids then
come from file stems (images) or row numbers (pairs), which change when the
data is renamed or reordered.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from scoreaudit.diagnostics import Diagnostic


def outside_paths(arm, spec_dir: Path, root: Path | None) -> list[Diagnostic]:
    """E0707 for an arm's manifest or image folder outside `root` (links followed), whether or not it
    exists yet: the same rule as `images.load_manifest`, without opening or listing anything."""
    from scoreaudit.safeio import inside

    if root is None:
        return []
    p = dict(arm.call.params)
    out = []
    for what, key in (("manifest", "manifest"), ("image folder", "folder")):
        rel = p.get(key)
        if isinstance(rel, str) and rel and not inside(spec_dir / rel, root):
            out.append(Diagnostic("E0707", "error", f"{what} '{rel}' of arm '{arm.name}' is outside the spec's folder",
                                  help="move the data under the spec's folder, or run with --allow-outside"))
    return out


def check_manifests(ir, spec_path: str | Path, root: Path | None) -> list[Diagnostic]:
    """Column diagnostics (and W0620) for every arm whose manifest exists."""
    from scoreaudit.runtime.columns import required_columns

    spec_path = Path(spec_path)
    spec_dir = spec_path.resolve().parent
    out: list[Diagnostic] = []
    for name, arm in ir.arms.items():
        p = dict(arm.call.params)
        manifest = p.get("manifest")
        if arm.source in ("images", "pairs"):
            outside = outside_paths(arm, spec_dir, root)
            if outside:  # what `run` refuses with E0707, refused here too (and nothing of it is opened)
                out += [replace(d, span=arm.span, path=str(spec_path)) for d in outside]
                continue
        if arm.source not in ("images", "pairs") or not manifest:
            continue
        if not (spec_dir / manifest).is_file():
            continue
        # only now: the loader brings polars, pandas and pyarrow, which a spec whose manifests do not
        # exist yet (the light path of `check` and the language server) never needs
        from scoreaudit.runtime.manifests import load_manifest

        # the run's loader with the run's policy: a manifest without rows stops the run (E0705), and under
        # `on_error: fail` so does a row without an id or path (E0708); image files may arrive after the
        # check, so what their absence causes (E0704, an arm whose every row lacks its file) stays the run's,
        # and headers are not read (E0706 stays the run's too)
        result = load_manifest(arm, spec_dir, columns=required_columns(ir, arm), on_error=ir.settings.on_error,
                               root=root, probe=False)
        span = arm.span
        for d in result.diagnostics:
            if d.is_error and d.code != "E0704" and not (d.code == "E0705" and result.exclusions):
                out.append(replace(d, span=span, path=str(spec_path)))
        id_col = p.get("id") or "id"
        if result.columns and id_col not in result.columns and not any(d.code == "E0702" for d in result.diagnostics):
            stem = "row numbers" if arm.source == "pairs" else "the image files' names (without extension)"
            out.append(Diagnostic(
                "W0620", "warning",
                f"manifest '{result.manifest or manifest}' of arm '{name}' has no '{id_col}' column: "
                f"{stem} are used as image ids",
                span=span, path=str(spec_path),
                help=f"add an '{id_col}' column (stable ids survive renaming and reordering), "
                     "or name an existing column with `id: column_name`",
                notes=(f"the manifest's columns are: {', '.join(result.columns)}",)))
    return out
