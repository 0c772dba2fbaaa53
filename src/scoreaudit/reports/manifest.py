"""The bundle's manifest: the sha256 of every file, written after the run, checked by `verify`.

`verify` recomputes numbers from the runtime tables, but a bundle also holds
files no statistic reads (an unused table, run.log, the environment block,
the reports). manifest.json commits to every byte: a changed, deleted or
added file is a named mismatch. `scoreaudit report` updates only the entries
of the reports it rewrites, so re-rendering never launders an edit elsewhere.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable

MANIFEST = "manifest.json"


def _sha(path: Path) -> str:
    from scoreaudit.safeio import read_regular

    return hashlib.sha256(read_regular(path)).hexdigest()


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


def write_manifest(bundle: Path, only: Iterable[str] | None = None) -> Path:
    """Write manifest.json: every file's sha256; with `only`, update just those entries of an existing one."""
    from scoreaudit.safeio import write_atomic

    bundle = Path(bundle)
    path = bundle / MANIFEST
    files: dict[str, str] = {}
    if only is not None and path.is_file():
        try:
            files = dict(json.loads(path.read_text(encoding="utf-8")).get("files") or {})
        except (OSError, ValueError, AttributeError, TypeError):  # not a manifest: only the report entries
            files = {}
        names = list(only)
    else:
        names = bundle_files(bundle)
    for rel in names:
        p = bundle / rel
        if p.is_file():
            files[rel] = _sha(p)
        else:
            files.pop(rel, None)
    doc = {"algorithm": "sha256", "files": dict(sorted(files.items()))}
    return write_atomic(path, json.dumps(doc, indent=2) + "\n")


def check_manifest(bundle: Path) -> list[str]:
    """Every file that differs from manifest.json: changed, missing, or added after the run."""
    bundle = Path(bundle)
    path = bundle / MANIFEST
    if not path.is_file():
        return [f"{MANIFEST} is missing: the bundle's files cannot be checked byte for byte "
                "(bundles written by `scoreaudit run` have one)"]
    try:
        files = json.loads(path.read_text(encoding="utf-8"))["files"]
        assert isinstance(files, dict)
    except (OSError, ValueError, KeyError, TypeError, AssertionError):
        return [f"{MANIFEST} is not a valid manifest"]
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
