"""Reuse a stage's output file from the bundle a re-run replaces when what it is made from is unchanged.

The report's thumbnails (thumbnails.json: one image at every dose; mover_thumbnails.json: the images
that move each cell most) decode images and apply operators again on every run: a third of a second
of a cached re-run at 1,500 images (issue 33). Their inputs are known: the audit's declarations but
its hypotheses (`ir.json` without them), the tables that name the images and their content hashes,
the cells shown (for the movers), the spec's folder and the tool's code. A stage passes the parts of
its key; `reuse.json` in the bundle records, per file, its key (version `KEY_VERSION`) and sha256.
A re-run copies the file from the bundle it replaces when the key matches and the file still has
its recorded hash; else the stage makes it and records the new key. The file is written before
its record, so a crash leaves a record that does not vouch for it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from scoreaudit.safeio import sha256_file

RECORD = "reuse.json"
KEY_VERSION = 1
#: ir.json fields no thumbnail depends on (the spec's folder is a key part of its own).
NOT_DECLARATIONS = frozenset({"hypotheses", "source_hash", "source_path"})


def _read_json(path: Path) -> dict:
    from scoreaudit.safeio import UnsafePath, loads_bounded, read_regular

    try:
        doc = loads_bounded(read_regular(path).decode("utf-8"))
    except (OSError, ValueError, UnsafePath):
        return {}
    return doc if isinstance(doc, dict) else {}


def declarations(bundle: Path) -> str:
    """The bundle's ir.json without its hypotheses (nor the spec text's hash and path, which any edit moves),
    canonical: what a thumbnail depends on of the audit."""
    ir = _read_json(Path(bundle) / "ir.json")
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


def _read(bundle: Path) -> dict:
    path = Path(bundle) / RECORD
    return _read_json(path) if path.is_file() and not path.is_symlink() else {}


def record(bundle: Path, name: str, key: str) -> None:
    """Record that bundle/name (in place now) was made from inputs with `key`."""
    from scoreaudit.safeio import write_atomic

    bundle = Path(bundle)
    rec = {n: e for n, e in _read(bundle).items() if isinstance(e, dict) and n != name}
    rec[name] = {"key": key, "sha256": sha256_file(bundle / name)}
    write_atomic(bundle / RECORD, json.dumps(rec, indent=1, sort_keys=True))


def forget(bundle: Path, name: str) -> None:
    """Drop bundle/name's entry (the stage wrote no file this time)."""
    from scoreaudit.safeio import write_atomic

    rec = _read(bundle)
    if name in rec:
        rec.pop(name)
        write_atomic(Path(bundle) / RECORD, json.dumps(rec, indent=1, sort_keys=True))


def adopt(previous: Path | None, bundle: Path, name: str, key: str) -> bool:
    """Copy previous/name into `bundle` (and record it) when it was made from inputs with `key`."""
    if previous is None or not Path(previous).is_dir() or Path(previous).resolve() == Path(bundle).resolve():
        return False
    from scoreaudit.safeio import UnsafePath, read_regular, write_atomic

    entry = _read(Path(previous)).get(name)
    if not isinstance(entry, dict) or entry.get("key") != key:
        return False
    try:
        blob = read_regular(Path(previous) / name, root=previous)
    except (OSError, UnsafePath):
        return False
    if hashlib.sha256(blob).hexdigest() != entry.get("sha256"):
        return False
    write_atomic(Path(bundle) / name, blob)
    record(bundle, name, key)
    return True


__all__ = ["KEY_VERSION", "RECORD", "adopt", "declarations", "file_hashes", "forget", "record", "stage_key"]
