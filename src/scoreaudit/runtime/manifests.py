"""Arms' manifests: read and checked before any scoring, pixels not decoded (runtime/images.py decodes).

Entry point (the executor calls it):

- `load_manifest(arm, spec_dir, *, columns=(), on_error="skip", root=None) -> ManifestResult`
  reads an `images(...)` or `pairs(...)` arm's manifest (CSV, TSV, parquet,
  JSON lines or a JSON list of records; for `images` without a manifest, the
  folder's image files, id = file stem) and
  checks everything that can be checked without decoding pixels: the manifest
  exists and is not empty, every needed column exists (id, path, cluster,
  strata, factors, prompt, and the `columns` the caller adds: mask columns,
  rating columns, `column(prompt)` scorer arguments), ids are unique, every
  file exists, lies inside `root` (the project folder; None lifts the
  restriction), and its header is a readable image within the pixel limit.
  Problems with the manifest itself are error `Diagnostic`s (E07xx, with the
  manifest's path, the column, the columns that exist and a did-you-mean);
  problems with one row become `Exclusion`s (stage "manifest"), or error
  diagnostics when the arm's policy is `on_error: fail`.
  A `pairs(..., images: false)` arm has no files: each row is two records
  `ID:preferred` / `ID:other` with `path=None` (clustered by the pair), no
  path column is needed and nothing is opened (spec/precomputed.md).
Manifests are read into one polars frame (runtime/manifest_frame.py) and
checked a column at a time: missing and repeated ids, missing paths; each
path costs one `lstat` (its folder is resolved once), links and odd paths
go through `Path.resolve`. Only the records and the messages are built row
by row, in row order, so messages come out as a row-by-row check words them.

Row numbers are 1-based data rows (the header is row 0); messages say "row 3".
For a folder listing, row is the 1-based position in the sorted file list.

Diagnostic codes: E0701 manifest or folder not found / unreadable, E0702
missing column, E0703 duplicate id, E0704 image file not found, E0705 empty
manifest, E0706 image header unreadable or refused (on_error: fail), E0707 path
outside the project folder, E0708 empty id or path value.
"""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from scoreaudit.datafiles import folder_images
from scoreaudit.diagnostics import Diagnostic, did_you_mean
from scoreaudit.runtime.images import Exclusion, ImageRecord, too_big
from scoreaudit.runtime.manifest_frame import key_column, read_manifest
from scoreaudit.runtime.tablefile import inside as _inside
from scoreaudit.safeio import UnsafePath, file_problem, open_regular


@dataclass(frozen=True)
class ManifestResult:
    """What `load_manifest` found: usable records, excluded rows, and errors.

    `base_dir` is the folder relative paths in the manifest resolve against
    (pass it as `RegionContext.base_dir`). When `ok` is False nothing of this
    arm may be scored.
    """

    arm: str
    source: str  # "images" | "pairs"
    manifest: str | None  # display path of the manifest (None: folder listing)
    base_dir: Path
    columns: tuple[str, ...]
    records: tuple[ImageRecord, ...]
    exclusions: tuple[Exclusion, ...]
    diagnostics: tuple[Diagnostic, ...]
    max_pixels: int
    on_error: str
    probed: Mapping[str, tuple[int, int]] = field(default_factory=dict)  # path -> (size, mtime_ns) whose header passed

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)


# --------------------------------------------------------------------------- manifests


def _display(path: Path, spec_dir: Path) -> str:
    try:
        return path.resolve().relative_to(spec_dir.resolve()).as_posix()
    except ValueError:
        return str(path)


def imageless(arm) -> bool:
    """A `pairs(..., images: false)` arm: its pairs have no image files (scores come precomputed)."""
    return arm.source == "pairs" and arm.call.params.get("images") is False


@dataclass
class _Collector:
    """Collects diagnostics and exclusions for one arm."""

    arm: str
    manifest: str | None
    on_error: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    exclusions: list[Exclusion] = field(default_factory=list)

    def error(self, code: str, message: str, help: str | None = None,
              notes: Sequence[str] = ()) -> None:
        self.diagnostics.append(Diagnostic(code, "error", message, path=self.manifest,
                                           help=help, notes=tuple(notes)))

    def row_problem(self, code: str, image_id: str | None, row: int | None, reason: str,
                    help: str) -> None:
        """A problem with one row: an exclusion (skip) or an error (fail)."""
        if self.on_error == "fail":
            self.error(code, f"arm '{self.arm}': {reason}", help=help)
        else:
            self.exclusions.append(Exclusion(self.arm, image_id, row, "manifest", reason))


def _needed_columns(arm, extra: Sequence[str]) -> list[tuple[str, str]]:
    """(column, why) pairs the manifest must have, in a stable order."""
    p = arm.call.params
    needed: list[tuple[str, str]] = []
    if imageless(arm):
        pass  # `preferred`/`other` only name the two sides: no path columns
    elif arm.source == "pairs":
        needed += [(p["preferred"], "preferred"), (p["other"], "other")]
    else:
        needed.append((p.get("path", "path"), "path"))
    if arm.cluster or p.get("cluster"):
        needed.append((arm.cluster or p["cluster"], "cluster"))
    strata = arm.strata or p.get("strata") or ()
    needed += [(s, "strata") for s in ([strata] if isinstance(strata, str) else strata)]
    needed += [(f, "factors") for f in (arm.factors or p.get("factors") or ())]
    if p.get("prompt"):
        needed.append((p["prompt"], "prompt"))
    needed += [(c, "a column the spec refers to") for c in extra]
    seen: set[str] = set()
    out = []
    for col, why in needed:
        if col not in seen:
            seen.add(col)
            out.append((col, why))
    return out


def _check_columns(col: _Collector, arm, available: Sequence[str], needed) -> bool:
    ok = True
    for column, why in needed:
        if column in available:
            continue
        ok = False
        guess = did_you_mean(column, available)
        where = (f"manifest '{col.manifest}'" if arm.call.params.get("manifest") else
                 f"the listing of folder '{col.manifest}' (an arm without a manifest has only id and path)")
        col.error(
            "E0702",
            f"column '{column}' not found in {where} (arm '{arm.name}', {why})",
            help=f"did you mean '{guess}'?" if guess else
            "add the column to the manifest, or name an existing column in the spec",
            notes=(f"the manifest's columns are: {', '.join(available) or '(none)'}",),
        )
    return ok


def _probe(path: Path, max_pixels: int) -> str | None:
    """Read only the header: None when the file looks like a usable image, else a reason."""
    problem = file_problem(path)
    if problem is not None:
        return f"the file {problem}"
    return _probe_header(path, max_pixels)


def _probe_header(path: Path, max_pixels: int, root: Path | None = None) -> str | None:
    """`_probe` of a file already known to be a regular file (opened contained in `root`)."""
    from PIL import Image, UnidentifiedImageError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            fd = open_regular(path, root)
        except UnsafePath as exc:
            return f"the path {exc.what}"
        except OSError as exc:
            return f"cannot read the file ({exc.strerror or exc})"
        try:
            with os.fdopen(fd, "rb") as fh, Image.open(fh) as img:
                width, height = img.size
        except Image.DecompressionBombError as exc:
            return f"refused as a possible decompression bomb: {exc}"
        except UnidentifiedImageError:
            return "not a readable image file (unknown or corrupt format)"
        except OSError as exc:
            return f"cannot read the file ({exc})"
    if width * height > max_pixels:
        return too_big(width, height, max_pixels)
    return None


class _Locator:
    """Where a manifest's image paths lead: (path, display path, inside root, file problem), per path.

    One `realpath` per folder and one `lstat` per file: a path whose last part
    is not a link resolves to its resolved folder plus its name, which is what
    `Path.resolve()` gives, at a fraction of the system calls (a manifest of
    100,000 images used to resolve every path four times). Links, `..` as the
    last part and anything unusual take the slow road (`Path.resolve`,
    `safeio.file_problem`), so containment is checked exactly as everywhere else.
    """

    def __init__(self, base_dir: Path, spec_dir: Path, root: Path | None):
        self.base_dir = base_dir
        self.base = os.fspath(base_dir)
        self.spec_dir = spec_dir
        self.spec = os.path.realpath(spec_dir)
        self.root = root
        self.root_res = os.path.realpath(root) if root is not None else None
        self.dirs: dict[str, str] = {}

    @staticmethod
    def _under(resolved: str, folder: str) -> str | None:
        """`resolved` relative to `folder` (both resolved), or None when it is not below it."""
        if resolved == folder:
            return "."
        prefix = folder if folder.endswith(os.sep) else folder + os.sep
        return resolved[len(prefix):] if resolved.startswith(prefix) else None

    def locate(self, rel: str) -> tuple[Path, str, bool, str | None, os.stat_result | None]:
        """(path, display path, inside the root, file problem, the file's own stat when it is not a link)."""
        joined = os.path.join(self.base, rel)
        head, name = os.path.split(joined)
        missing = False
        try:
            st = os.lstat(joined) if name not in ("", ".", "..") else None
        except FileNotFoundError:
            st, missing = None, True
        except (OSError, ValueError):
            st = None
        path = Path(joined)  # what `base_dir / rel` gives
        if (st is None and not missing) or (st is not None and stat.S_ISLNK(st.st_mode)):
            return path, _display(path, self.spec_dir), _inside(path, self.root), file_problem(path), None
        rdir = self.dirs.get(head)
        if rdir is None:
            rdir = self.dirs[head] = os.path.realpath(head)
        resolved = os.path.join(rdir, name)
        rel_shown = self._under(resolved, self.spec)
        shown = rel_shown.replace(os.sep, "/") if rel_shown is not None else str(path)
        inside = self.root_res is None or self._under(resolved, self.root_res) is not None
        if st is None:  # missing
            return path, shown, inside, "not found", None
        return path, shown, inside, None if stat.S_ISREG(st.st_mode) else file_problem(path), st


def inside_all(base_dir: Path, rels: Sequence[str], root: Path | None) -> list[bool]:
    """For each path relative to `base_dir`: whether it resolves under `root` (`safeio.inside`, with
    one `realpath` per folder; links take the slow road)."""
    where = _Locator(Path(base_dir), Path(base_dir), root)
    return [where.locate(rel)[2] for rel in rels]


def _first_rows(row_nos: Sequence[int], ids: Sequence[str | None]) -> list[int | None]:
    """For every row, the first row with the same (non-missing) id: whole columns, in polars."""
    import polars as pl

    if not row_nos:
        return []
    frame = pl.DataFrame({"row": list(row_nos), "id": list(ids)}, schema={"row": pl.Int64, "id": pl.String})
    first = frame.select(pl.when(pl.col("id").is_not_null()).then(pl.col("row").min().over("id")))
    return first.to_series().to_list()


def _base_ids(arm, frame, row_nos: Sequence[int], have_id: bool, id_col: str, path_col: str) -> list[str | None]:
    """The id of every row: the id column, else the file stem (images) or the row number (pairs)."""
    if have_id:
        return key_column(frame, id_col)
    if arm.source == "images":
        return [Path(p or "").stem for p in key_column(frame, path_col)]
    return [str(r) for r in row_nos]


def _records_from_frame(col: _Collector, arm, frame, values: Sequence[Mapping[str, Any]],
                        row_nos: Sequence[int], base_dir: Path, spec_dir: Path, root: Path | None,
                        max_pixels: int, probe: bool, known: Mapping[str, Sequence[int]],
                        probed: dict[str, tuple[int, int]]) -> list[ImageRecord]:
    """Manifest rows → records (both sides for pairs), with id/file checks.

    The columns are checked whole (missing ids, repeated ids, missing paths, in
    polars); the loop visits rows in order only to word each problem (same
    messages, same order as a row-by-row check) and to build the records.
    """
    p = arm.call.params
    id_col = p.get("id", "id")
    cluster_col = arm.cluster or p.get("cluster")
    prompt_col = p.get("prompt")
    sides = ((p["preferred"], "preferred"), (p["other"], "other")) if arm.source == "pairs" else \
        ((p.get("path", "path"), None),)
    have_id = bool(row_nos) and id_col in frame.columns
    base_ids = _base_ids(arm, frame, row_nos, have_id, id_col, sides[0][0])
    first = _first_rows(row_nos, base_ids)
    clusters = key_column(frame, cluster_col) if cluster_col else [None] * len(row_nos)
    prompts = key_column(frame, prompt_col) if prompt_col else [None] * len(row_nos)
    paths = [key_column(frame, path_col) for path_col, _ in sides]
    where = _Locator(base_dir, spec_dir, root)
    records: list[ImageRecord] = []
    for i, row_no in enumerate(row_nos):
        base_id = base_ids[i]
        if base_id is None:
            col.row_problem("E0708", None, row_no, f"row {row_no} has no value in id column '{id_col}'",
                            help="give every row a unique id")
            continue
        if first[i] != row_no:
            col.error("E0703",
                      f"duplicate image id '{base_id}' in manifest '{col.manifest}': row {first[i]} and row {row_no}",
                      help="ids must be unique within an arm; rename or remove one of the rows")
            continue
        cluster = clusters[i]
        row_records: list[ImageRecord] = []
        for (path_col, side), rels in zip(sides, paths):
            image_id = f"{base_id}:{side}" if side else base_id
            rel = rels[i]
            if rel is None:
                col.row_problem("E0708", image_id, row_no,
                                f"row {row_no} (id '{base_id}') has no value in column '{path_col}'",
                                help="give every row an image path, or remove the row")
                continue
            path, shown, inside, problem, st = where.locate(rel)
            if not inside:
                col.row_problem("E0707", image_id, row_no,
                                f"image path in row {row_no} leaves the project folder: {shown}",
                                help="keep images inside the spec's folder, or run with --allow-outside")
                continue
            if problem is not None and problem != "not found":
                col.row_problem("E0704", image_id, row_no, f"image file {problem} (row {row_no}, {shown})",
                                help="name an image file in the manifest; folders, pipes and devices are "
                                     "never read")
                continue
            if problem is not None:
                col.row_problem("E0704", image_id, row_no, f"image file not found (row {row_no}, {shown})",
                                help="fix the path in the manifest (paths are relative to "
                                     f"'{_display(base_dir, spec_dir)}') or remove the row")
                continue
            if probe:
                seen = (st.st_size, st.st_mtime_ns) if st is not None else None
                if seen is None or tuple(known.get(str(path), ())) != seen:  # this very file passed before
                    reason = _probe_header(path, max_pixels, root)
                    if reason is not None:
                        col.row_problem("E0706", image_id, row_no, f"{reason} (row {row_no}, {shown})",
                                        help="replace the file, or remove the row")
                        continue
                if seen is not None:
                    probed[str(path)] = seen
            row_records.append(ImageRecord(
                arm=arm.name, image_id=image_id, row=row_no, path=path, display_path=shown,
                cluster=cluster if cluster is not None else base_id, prompt=prompts[i], side=side,
                pair_id=base_id if side else None, columns=values[i],
                root=os.fspath(root) if root is not None else None))
        if len(row_records) == len(sides):
            records.extend(row_records)
        else:  # half a pair cannot be compared: drop the surviving side too, saying why
            for rec in row_records:
                col.row_problem("E0704", rec.image_id, row_no,
                                f"pair '{base_id}' (row {row_no}) is incomplete: its other image was excluded",
                                help="fix the other image of the pair, or remove the row")
    return records


def _imageless_records(col: _Collector, arm, frame, values: Sequence[Mapping[str, Any]],
                       row_nos: Sequence[int], shown: str | None) -> list[ImageRecord]:
    """Rows of a `pairs(..., images: false)` manifest → two records per pair, no file read.

    Same ids and checks as `runtime.precomputed.rows.imageless_rows` (what `scoreaudit check`
    reads): ids from the id column (the row number without one), a missing id is E0708,
    a repeated id E0703; the cluster is the `cluster` column, else the pair.
    """
    id_col, base_ids, first, clusters, prompts = _row_keys(arm, frame, row_nos)
    records: list[ImageRecord] = []
    for i, row_no in enumerate(row_nos):
        base_id = base_ids[i]
        if base_id is None:
            col.error("E0708", f"arm '{arm.name}': row {row_no} has no value in id column '{id_col}'",
                      help="give every row a unique id")
            continue
        if first[i] != row_no:
            col.error("E0703",
                      f"duplicate pair id '{base_id}' in manifest '{col.manifest}': row {first[i]} and row {row_no}",
                      help="ids must be unique within an arm; rename or remove one of the rows")
            continue
        cluster = clusters[i] or base_id
        for side in ("preferred", "other"):
            records.append(ImageRecord(
                arm=arm.name, image_id=f"{base_id}:{side}", row=row_no, path=None,
                display_path=f"{shown} row {row_no}", cluster=cluster, prompt=prompts[i], side=side,
                pair_id=base_id, columns=values[i]))
    return records


def _row_keys(arm, frame, row_nos: Sequence[int]):
    """(id column, ids, first row of each id, clusters, prompts) of manifest rows read without files:
    ids from the id column (the row number without one), clusters and prompts from the arm's columns."""
    p = arm.call.params
    id_col = p.get("id", "id")
    cluster_col = arm.cluster or p.get("cluster")
    prompt_col = p.get("prompt")
    have_id = bool(row_nos) and id_col in frame.columns
    ids = key_column(frame, id_col) if have_id else [str(r) for r in row_nos]
    clusters = key_column(frame, cluster_col) if cluster_col else [None] * len(row_nos)
    prompts = key_column(frame, prompt_col) if prompt_col else [None] * len(row_nos)
    return id_col, ids, _first_rows(row_nos, ids), clusters, prompts


def _pixelfree_records(col: _Collector, arm, frame, values: Sequence[Mapping[str, Any]],
                       row_nos: Sequence[int], shown: str | None) -> list[ImageRecord]:
    """Rows of an images manifest whose pixels nothing reads → one record per row, no file looked at.

    Ids as for any images manifest (the id column; the row number without one), a missing id is
    E0708 and a repeated one E0703; the cluster is the cluster column, else the image.
    """
    id_col, ids, first, clusters, prompts = _row_keys(arm, frame, row_nos)
    records: list[ImageRecord] = []
    for i, row_no in enumerate(row_nos):
        iid = ids[i]
        if iid is None:
            col.row_problem("E0708", None, row_no, f"row {row_no} has no value in id column '{id_col}'",
                            help="give every row a unique id")
            continue
        if first[i] != row_no:
            col.error("E0703", f"duplicate image id '{iid}' in manifest '{col.manifest}': "
                      f"row {first[i]} and row {row_no}",
                      help="ids must be unique within an arm; rename or remove one of the rows")
            continue
        records.append(ImageRecord(arm=arm.name, image_id=iid, row=row_no, path=None,
                                   display_path=f"{shown} row {row_no}", cluster=clusters[i] or iid,
                                   prompt=prompts[i], columns=values[i]))
    return records


def _folder_rows(col: _Collector, folder: Path, spec_dir: Path) -> list[tuple[int, dict[str, Any]]]:
    files = folder_images(folder)
    seen: dict[str, str] = {}
    rows = []
    for i, f in enumerate(files, start=1):
        if f.stem in seen:
            col.error("E0703", f"duplicate image id '{f.stem}' in folder '{_display(folder, spec_dir)}': "
                               f"{seen[f.stem]} and {f.name}",
                      help="ids are file stems; rename one of the files or give the arm a manifest")
            continue
        seen[f.stem] = f.name
        rows.append((i, {"id": f.stem, "path": f.name}))
    return rows


def load_manifest(arm, spec_dir: str | Path, *, columns: Sequence[str] = (), on_error: str = "skip",
                  root: str | Path | None = None, probe: bool = True,
                  known: Mapping[str, Sequence[int]] | None = None, pixels: bool = True) -> ManifestResult:
    """Read and check one arm's manifest (see the module docstring). Never raises for user errors.

    `arm` is a `compiler.ir.ArmIR`; `columns` are further manifest columns the
    spec refers to (mask and rating columns, `column(...)` prompts);
    `on_error` is the audit's setting (the arm's own `on_error` wins); `root`
    is the folder images must stay inside (None: no restriction); `probe`
    reads every file's header to catch unreadable files and decompression
    bombs before any scoring; `known` (path -> [size, mtime_ns], the
    `probed` of an earlier load with the same max_pixels) names files whose
    header already passed, so an unchanged file is not opened again. `pixels` False (an images arm
    whose every score the plan reads from data): rows need no path and no file is looked at.
    """
    spec_dir = Path(spec_dir)
    root_path = Path(root) if root is not None else None
    p = dict(arm.call.params)
    policy = p.get("on_error") or on_error
    max_pixels = int(p.get("max_pixels") or 89_478_485)
    manifest_rel = p.get("manifest")
    manifest_path = spec_dir / manifest_rel if manifest_rel else None
    base_dir = manifest_path.parent if arm.source == "pairs" else spec_dir / p["folder"]
    shown_manifest = _display(manifest_path, spec_dir) if manifest_path else None
    col = _Collector(arm.name, shown_manifest or _display(base_dir, spec_dir), policy)
    probed: dict[str, tuple[int, int]] = {}

    def result(records=(), available=()) -> ManifestResult:
        return ManifestResult(arm.name, arm.source, shown_manifest, base_dir, tuple(available),
                              tuple(records), tuple(col.exclusions), tuple(col.diagnostics),
                              max_pixels, policy, probed)

    for what, path in (("manifest", manifest_path), ("image folder", base_dir)):
        if path is not None and root_path is not None and not _inside(path, root_path):
            col.error("E0707", f"{what} '{_display(path, spec_dir)}' of arm '{arm.name}' is outside the "
                               "spec's folder",
                      help="move the data under the spec's folder, or run with --allow-outside")
            return result()
    if manifest_path is None:
        if not base_dir.is_dir():
            col.error("E0701", f"image folder '{_display(base_dir, spec_dir)}' of arm '{arm.name}' not found",
                      help="check the folder path (it is relative to the spec's folder)")
            return result()
        rows = _folder_rows(col, base_dir, spec_dir)
        available = ("id", "path")
        needed = [(c, w) for c, w in _needed_columns(arm, columns) if c not in ("path",)]
        if needed and not _check_columns(col, arm, available, needed):
            return result(available=available)
        row_nos = [r for r, _ in rows]
        values = [v for _, v in rows]
        frame = pl.DataFrame({"id": [v["id"] for v in values], "path": [v["path"] for v in values]},
                             schema={"id": pl.String, "path": pl.String})
    else:
        problem = file_problem(manifest_path)
        if problem is not None:
            col.error("E0701", f"manifest '{shown_manifest}' of arm '{arm.name}' {problem}",
                      help="check the path (it is relative to the spec's folder)")
            return result()
        text_cols = [p.get("id", "id"), p.get("path", "path"), arm.cluster or p.get("cluster") or ""]
        if not imageless(arm):  # without images, preferred/other name sides, not (text) path columns
            text_cols += [p.get("preferred") or "", p.get("other") or ""]
        try:
            frame = read_manifest(manifest_path, [c for c in text_cols if c], root=root_path)
        except UnsafePath as exc:  # swapped for a link out (or a FIFO) after the checks above: never read
            col.error("E0707" if exc.what.startswith("leaves") else "E0701",
                      f"manifest '{shown_manifest}' of arm '{arm.name}' {exc.what}",
                      help="move the data under the spec's folder, or run with --allow-outside")
            return result()
        except Exception as exc:  # noqa: BLE001 - polars/pyarrow parse errors: the user's file is malformed
            col.error("E0707" if "leaves the project folder" in str(exc) else "E0701",  # a JSON one swapped out
                      f"cannot read manifest '{shown_manifest}': {exc}",
                      help="the manifest must be a CSV/TSV file with a header row, a parquet file, "
                           "JSON lines (.jsonl) or a JSON list of records (.json)")
            return result()
        available = tuple(frame.columns)
        needed = [(c, w) for c, w in _needed_columns(arm, columns) if pixels or w != "path"]
        if not _check_columns(col, arm, available, needed):
            return result(available=available)
        row_nos = list(range(1, frame.height + 1))
        values = frame.to_dicts()
    if not row_nos and not col.diagnostics:
        where = f"manifest '{shown_manifest}'" if shown_manifest else f"folder '{_display(base_dir, spec_dir)}'"
        col.error("E0705", f"{where} of arm '{arm.name}' has no images",
                  help="add at least one row (image) or remove the arm")
        return result(available=available)
    if imageless(arm):
        records = _imageless_records(col, arm, frame, values, row_nos, shown_manifest)
    elif not pixels and manifest_path is not None:
        records = _pixelfree_records(col, arm, frame, values, row_nos, shown_manifest)
    else:
        records = _records_from_frame(col, arm, frame, values, row_nos, base_dir, spec_dir, root_path,
                                      max_pixels, probe, known or {}, probed)
    if not records and not col.diagnostics:
        col.error("E0705", f"arm '{arm.name}' has no usable images: every row was excluded",
                  notes=tuple(f"row {e.row}: {e.reason}" for e in col.exclusions[:5]),
                  help="fix the rows listed above")
    return result(records, available)
