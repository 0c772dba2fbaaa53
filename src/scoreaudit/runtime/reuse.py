"""Reuse a stage's output file from the bundle a re-run replaces when what it is made from is unchanged.

The report's thumbnails (thumbnails.json: one image at every dose; mover_thumbnails.json: the images
that move each cell most) decode images and apply operators again on every run: a third of a second
of a cached re-run at 1,500 images (issue 33). Their inputs are known: the audit's declarations but
its hypotheses (`ir.json` without them), the tables that name the images and their content hashes,
the cells shown (for the movers), the spec's folder and the tool's code. A stage passes the parts of
its key (version `KEY_VERSION`); `reuse.json` in the bundle records, per file, its key and sha256
(outputrecords.py, the report's render.json alike). A re-run copies the file from the bundle it
replaces when the key matches and the file still has its recorded hash; else the stage makes it
and records the new key.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from scoreaudit import outputrecords
from scoreaudit.safeio import sha256_file

RECORD = "reuse.json"
KEY_VERSION = 1
#: ir.json fields no thumbnail depends on (the spec's folder is a key part of its own).
NOT_DECLARATIONS = frozenset({"hypotheses", "source_hash", "source_path"})


def declarations(bundle: Path) -> str:
    """The bundle's ir.json without its hypotheses (nor the spec text's hash and path, which any edit moves),
    canonical: what a thumbnail depends on of the audit."""
    ir = outputrecords.read_object(Path(bundle) / "ir.json")
    return json.dumps({k: v for k, v in ir.items() if k not in NOT_DECLARATIONS}, sort_keys=True, default=str)


def file_hashes(bundle: Path, names: list[str]) -> str:
    """`name sha256` of each bundle file (missing: `-`), one per line."""
    lines = []
    for name in names:
        p = Path(bundle) / name
        lines.append(f"{name} {sha256_file(p) if p.is_file() and not p.is_symlink() else '-'}")
    return "\n".join(lines)


def stage_key(*parts: str) -> str:
    """sha256 of the key version, the tool's source and the stage's parts."""
    from scoreaudit.keys import source_version

    h = hashlib.sha256(f"scoreaudit reuse key v{KEY_VERSION}\0{source_version()}\0".encode())
    for part in parts:
        h.update(part.encode("utf-8") + b"\0")
    return h.hexdigest()


def record(bundle: Path, name: str, key: str, sha256: str | None = None) -> None:
    """Record that bundle/name (in place now) was made from inputs with `key`."""
    entries = {n: e for n, e in outputrecords.read(bundle, RECORD).items() if n != name}
    entries[name] = outputrecords.entry(bundle, name, key, sha256)
    outputrecords.write(bundle, RECORD, entries)


def forget(bundle: Path, name: str) -> None:
    """Drop bundle/name's entry (the stage wrote no file this time)."""
    entries = outputrecords.read(bundle, RECORD)
    if entries.pop(name, None) is not None:
        outputrecords.write(bundle, RECORD, entries)


def adopt(previous: Path | None, bundle: Path, name: str, key: str) -> bool:
    """Copy previous/name into `bundle` (and record it) when it was made from inputs with `key`."""
    sha = outputrecords.adopt(previous, bundle, RECORD, name, key)
    if sha is not None:
        record(bundle, name, key, sha)
    return sha is not None


__all__ = ["KEY_VERSION", "RECORD", "adopt", "declarations", "file_hashes", "forget", "record", "stage_key"]
