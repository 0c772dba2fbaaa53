"""Records of bundle files made from known inputs: `{name: {"key": ..., "sha256": ...}}`, one JSON file.

Two stages keep such a record: the report (render.json: report.html, report.pdf; reports/render_cache.py)
and the runtime's thumbnails (reuse.json; runtime/reuse.py). Each computes the key of what a file is made
from; a file whose entry holds that key and whose bytes still have the recorded sha256 need not be made
again, and a re-run copies it from the bundle it replaces (read once, hashed once, read only inside that
bundle). A stage writes a file before its entry, so a crash never leaves an entry vouching for a file it
did not finish. The statistics' record (stats.json) vouches for several files under one key and is kept
by stats/results_cache.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from scoreaudit.safeio import loads_bounded, read_regular, sha256_file, write_atomic


def read_object(path: Path) -> dict:
    """A bundle's JSON object file ({} when it is missing, not a regular file, unreadable or not an object)."""
    try:
        doc = loads_bounded(read_regular(path).decode("utf-8"))
    except (OSError, ValueError):  # UnsafePath is an OSError; JSONTooDeep a ValueError
        return {}
    return doc if isinstance(doc, dict) else {}


def hash_bundle(h, bundle: Path, skipped: frozenset[str], run_fields: tuple[str, ...]) -> None:
    """Feed `h` (a hashlib object) what a stage reads of a bundle: every file's name and sha256 but the
    `skipped` ones, links and dot files, then the `run_fields` of run.json (hashed whole when it is not an
    object), whose other fields change on every run. The inputs part of the statistics' and the report's keys."""
    bundle = Path(bundle)
    for p in sorted(bundle.rglob("*")):
        rel = p.relative_to(bundle).as_posix()
        if not p.is_file() or p.is_symlink() or rel in skipped or p.name.startswith("."):
            continue
        h.update(rel.encode() + b"\0" + sha256_file(p).encode() + b"\0")
    run_json = bundle / "run.json"
    if run_json.is_file() and not run_json.is_symlink():
        try:
            run = loads_bounded(read_regular(run_json).decode("utf-8"))
        except (OSError, ValueError):
            run = {}
        used = {k: run.get(k) for k in run_fields} if isinstance(run, dict) else run
        h.update(json.dumps(used, sort_keys=True, default=str).encode())


def read(bundle: Path, record: str) -> dict[str, dict]:
    """The record's entries."""
    return {n: e for n, e in read_object(Path(bundle) / record).items() if isinstance(e, dict)}


def write(bundle: Path, record: str, entries: dict[str, dict]) -> None:
    write_atomic(Path(bundle) / record, json.dumps(entries, indent=1, sort_keys=True))


def entry(bundle: Path, name: str, key: str, sha256: str | None = None) -> dict:
    """The entry of bundle/name, in place now (`sha256`: its hash when the caller already has it)."""
    return {"key": key, "sha256": sha256 or sha256_file(Path(bundle) / name)}


def current(bundle: Path, record: str, name: str, key: str) -> bool:
    """Whether bundle/name was made from inputs with `key` and is unchanged since."""
    e = read(bundle, record).get(name)
    path = Path(bundle) / name
    return (e is not None and e.get("key") == key and path.is_file() and not path.is_symlink()
            and e.get("sha256") == sha256_file(path))


def adopt(previous: Path | None, bundle: Path, record: str, name: str, key: str) -> str | None:
    """Copy previous/name into `bundle` when the previous bundle's record vouches for it under `key`;
    its sha256, or None (nothing copied: make it)."""
    if previous is None or not Path(previous).is_dir() or Path(previous).resolve() == Path(bundle).resolve():
        return None
    e = read(previous, record).get(name)
    if e is None or e.get("key") != key:
        return None
    try:
        blob = read_regular(Path(previous) / name, root=previous)
    except OSError:  # UnsafePath too: a link or a non-regular file is never copied
        return None
    sha = hashlib.sha256(blob).hexdigest()
    if sha != e.get("sha256"):
        return None
    write_atomic(Path(bundle) / name, blob)
    return sha


__all__ = ["adopt", "current", "entry", "hash_bundle", "read", "read_object", "write"]
