"""Analyse only what changed: a re-run whose statistics' inputs are unchanged reuses results.json.

The statistics of a cached re-run read the same tables and write the same results: half a second of
work, and another half to import scipy and statsmodels, most of what a re-run with nothing changed
costs once the pipeline is cached (issue 33). This module is light on purpose (no numpy, no pandas):
`run` asks it first and imports the statistics engine only on a miss.

The key (`KEY_VERSION` names the algorithm) is the sha256 of
- every file of the bundle as the pipeline leaves it (before `analyse` writes anything), names
  included, except run.log, manifest.json, the reports, the records and run.json, of which only the
  fields the statistics read count (`RUN_FIELDS`);
- the tool's code (every file of the scoreaudit package), the Python version, the platform and the
  versions of the packages results.json names (`provenance.PACKAGES`): all of them are in results.json.

`stats.json` records the key and the sha256 of every file `analyse` wrote. A re-run copies those files
from the bundle it replaces when the key matches and every file still has its recorded hash (a bundle
whose results were edited by hand is analysed again). The record is written last: a crash between
the files and the record leaves no record, and the next run analyses afresh.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from scoreaudit import outputrecords
from scoreaudit.safeio import sha256_file

RECORD = "stats.json"
KEY_VERSION = 1
#: The run.json fields the statistics read (provenance.environment and lock_info, engine.analyse).
RUN_FIELDS = ("command", "device", "first_score_at", "git", "precomputed", "scorers")
#: Bundle files that are not inputs of the statistics (or change on every run: run.json, hashed in part).
SKIPPED = frozenset({"run.log", "manifest.json", "report.html", "report.pdf", "render.json", RECORD, "run.json",
                     "results.json", "mover_thumbnails.json", "reuse.json"})


def _environment() -> str:
    import platform
    import sys

    from scoreaudit.stats.provenance import package_versions

    return json.dumps({"python": sys.version.split()[0], "platform": platform.platform(),
                       "packages": package_versions()}, sort_keys=True)


def inputs_key(bundle: Path) -> str:
    """sha256 of what the statistics of `bundle` are computed from (module docstring)."""
    bundle = Path(bundle)
    from scoreaudit.keys import source_version

    h = hashlib.sha256(f"scoreaudit stats key v{KEY_VERSION}\0{source_version()}\0{_environment()}\0".encode())
    outputrecords.hash_bundle(h, bundle, SKIPPED, RUN_FIELDS)
    return h.hexdigest()


def _outputs(results: dict) -> list[str]:
    """The bundle files `analyse` writes: results.json and every table it names."""
    tables = results.get("tables") if isinstance(results, dict) else None
    names = [v for v in (tables or {}).values() if isinstance(v, str)]
    return ["results.json", *sorted(set(names))]


def write_record(bundle: Path, key: str, results: dict) -> None:
    """Record `key` and the hash of every file `analyse` wrote (call right after it)."""
    from scoreaudit.safeio import write_atomic

    bundle = Path(bundle)
    files = {rel: sha256_file(bundle / rel) for rel in _outputs(results) if (bundle / rel).is_file()}
    write_atomic(bundle / RECORD, json.dumps({"key_version": KEY_VERSION, "key": key, "files": files},
                                             indent=1, sort_keys=True))


def adopt(previous: Path | None, bundle: Path, key: str) -> dict | None:
    """Copy the previous bundle's statistics into `bundle` when they were computed from inputs with `key`;
    the results (as `analyse` returns them), or None: analyse again."""
    if previous is None or not Path(previous).is_dir() or Path(previous).resolve() == Path(bundle).resolve():
        return None
    from scoreaudit.safeio import UnsafePath, read_regular, write_atomic
    from scoreaudit.stats.provenance import read_json

    previous, bundle = Path(previous), Path(bundle)
    try:
        rec = read_json(previous / RECORD)
    except (OSError, ValueError, UnsafePath):
        return None
    files = rec.get("files") if isinstance(rec, dict) else None
    if rec.get("key") != key or not isinstance(files, dict) or "results.json" not in files:
        return None
    data = {}
    for rel, sha in files.items():
        if not isinstance(rel, str) or ".." in Path(rel).parts or Path(rel).is_absolute():
            return None
        try:
            blob = read_regular(previous / rel, root=previous)
        except (OSError, UnsafePath):
            return None
        if hashlib.sha256(blob).hexdigest() != sha:
            return None
        data[rel] = blob
    try:
        results = json.loads(data["results.json"])
    except ValueError:
        return None
    if not isinstance(results, dict) or sorted(files) != sorted(_outputs(results)):
        return None
    for rel, blob in data.items():
        (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(bundle / rel, blob)
    write_atomic(bundle / RECORD, json.dumps(rec, indent=1, sort_keys=True))
    return {**results, "bundle": str(bundle)}


__all__ = ["KEY_VERSION", "RECORD", "RUN_FIELDS", "adopt", "inputs_key", "write_record"]
