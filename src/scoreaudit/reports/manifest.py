"""The bundle's manifest: the sha256 of every file, written after the run, checked by `verify`.

`verify` recomputes numbers from the runtime tables, but a bundle also holds
files no statistic reads (an unused table, run.log, the environment block,
the reports). manifest.json commits to every byte: a changed, deleted or
added file is a named mismatch. `scoreaudit report` updates only the entries
of the reports it rewrites, so re-rendering never launders an edit elsewhere:
it never hashes a file it did not write itself, and when the bundle has no
valid manifest (deleted, replaced by a FIFO, edited into something else) it
writes none, so `verify` keeps saying the manifest is missing.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

MANIFEST = "manifest.json"


def _sha(path: Path) -> str:
    """sha256 of a regular file, read in blocks (run.log grows with the images: never held whole)."""
    from scoreaudit.safeio import open_regular

    h = hashlib.sha256()
    with os.fdopen(open_regular(path), "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def bundle_files(bundle: Path) -> list[str]:
    """Bundle-relative paths of every regular file except the manifest and temporary files."""
    out = []
    for dirpath, dirnames, filenames in os.walk(bundle, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(bundle).as_posix()
            if rel == MANIFEST or name.startswith(".") or p.is_symlink() or not p.is_file():
                continue
            out.append(rel)
    return sorted(out)


def read_manifest(path: Path) -> dict[str, str] | None:
    """The `files` of a manifest.json, or None when it is absent, not a regular file or not a manifest."""
    import re

    from scoreaudit.safeio import loads_bounded, read_regular

    try:
        doc = loads_bounded(read_regular(path).decode("utf-8"))
        files = doc["files"]
    except (OSError, ValueError, KeyError, TypeError):  # JSONTooDeep and UnicodeDecodeError are ValueErrors
        return None
    sha = re.compile(r"[0-9a-f]{64}")
    if doc.get("algorithm", "sha256") != "sha256" or not isinstance(files, dict) or \
            not all(isinstance(k, str) and isinstance(v, str) and sha.fullmatch(v) for k, v in files.items()):
        return None  # not what `run` writes: nothing of it is kept or vouched for
    return dict(files)


def write_manifest(bundle: Path, only: Iterable[str] | None = None) -> Path | None:
    """Write manifest.json: every file's sha256 (after a run, by the run itself).

    With `only` (a re-render: the reports it just wrote), update just those entries of the existing
    manifest; without a valid one, write nothing and return None: hashing the rest would vouch for
    files the re-render did not write (an edited results.json or run.log would then verify).
    """
    from scoreaudit.safeio import write_atomic

    bundle = Path(bundle)
    path = bundle / MANIFEST
    if only is not None:
        existing = read_manifest(path)
        if existing is None:
            return None
        files, names = existing, list(only)
    else:
        files, names = {}, bundle_files(bundle)
    for rel in names:
        p = bundle / rel
        if p.is_file() and not p.is_symlink():
            files[rel] = _sha(p)
        else:
            files.pop(rel, None)
    doc = {"algorithm": "sha256", "files": dict(sorted(files.items()))}
    return write_atomic(path, json.dumps(doc, indent=2) + "\n")


def check_manifest(bundle: Path) -> list[str]:
    """Every file that differs from manifest.json: changed, missing, or added after the run."""
    bundle = Path(bundle)
    path = bundle / MANIFEST
    if not os.path.lexists(path):
        return [f"{MANIFEST} is missing: the bundle's files cannot be checked byte for byte "
                "(bundles written by `scoreaudit run` have one)"]
    files = read_manifest(path)
    if files is None:
        return [f"{MANIFEST} is not a valid manifest (not a regular file, or not what `scoreaudit run` writes)"]
    out = []
    present = set(bundle_files(bundle))
    for rel, sha in sorted(files.items()):
        if rel not in present:
            out.append(f"{rel}: listed in {MANIFEST} but missing from the bundle")
        elif _sha(bundle / rel) != sha:
            out.append(f"{rel}: changed since the run (its sha256 is not the one {MANIFEST} records)")
    for rel in sorted(present - set(files)):
        out.append(f"{rel}: not in {MANIFEST} (added after the run)")
    return out
