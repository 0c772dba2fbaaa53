"""Render only what changed: report.html and report.pdf keyed by a hash of everything they are made from.

A re-run with nothing changed (or `scoreaudit report` on an unchanged bundle) would lay out the same
HTML and the same PDF again: seconds to tens of seconds, most of a cached re-run (issue 33). The key
of a report file is the sha256 of
- every file of the bundle except the ones no report reads and that change on every run (run.log,
  manifest.json, the reports themselves, this record, the statistics' record stats.json, and run.json, of which only the fields the
  report shows count: `RUN_FIELDS`), names included, so a new file a section starts to read
  invalidates the key without anyone listing it here;
- the report code: every file of the `scoreaudit.reports` package (templates, styles, sections) and
  the tool's version; for the PDF also WeasyPrint's version.

`render.json` in the bundle records each report file's key and its sha256. A report is reused only
when its key matches and the file on disk still has that sha256 (a hand-edited report is rendered
again). Files are written atomically and the record last, so a crash leaves a record that no longer
matches and the next render starts afresh. `run` renders into a fresh staging folder: the previous
bundle's files are copied in (never hard-linked: a bundle holds no hard links) when their keys match.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from scoreaudit import outputrecords

RECORD = "render.json"
#: Bundle files that no report section reads and that differ between two runs of the same audit.
SKIPPED = frozenset({"run.log", "manifest.json", "report.html", "report.pdf", RECORD, "run.json", "stats.json",
                     "reuse.json"})
#: The run.json fields the report shows (sections/appendix.py: device; sections/run_warnings.py: warnings).
RUN_FIELDS = ("device", "warnings")
REPORTS = ("report.html", "report.pdf")


@lru_cache(maxsize=1)
def code_version() -> str:
    """sha256 over the report package's files (names and bytes) and the tool's version: one per process."""
    from scoreaudit.keys import source_version
    from scoreaudit.stats.provenance import package_versions

    return hashlib.sha256(f"{source_version('reports')}\0{package_versions().get('scoreaudit', '')}".encode()).hexdigest()


def _weasyprint_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("weasyprint")
    except metadata.PackageNotFoundError:
        return ""


def inputs_key(bundle: Path) -> str:
    """sha256 of what a report of `bundle` is made from (module docstring)."""
    bundle = Path(bundle)
    h = hashlib.sha256(code_version().encode())
    outputrecords.hash_bundle(h, bundle, SKIPPED, RUN_FIELDS)
    return h.hexdigest()


def file_keys(bundle: Path) -> dict[str, str]:
    """The key of each report file (the PDF's includes WeasyPrint's version)."""
    base = inputs_key(bundle)
    return {"report.html": base,
            "report.pdf": hashlib.sha256(f"{base}\0weasyprint {_weasyprint_version()}".encode()).hexdigest()}


def current(bundle: Path, name: str, key: str) -> bool:
    """Whether bundle/name was rendered from inputs with `key` and is unchanged since."""
    return outputrecords.current(bundle, RECORD, name, key)


def adopt(source: Path | None, bundle: Path, name: str, key: str) -> bool:
    """Copy source/name into `bundle` when it is current for `key` there (a previous bundle); True if copied."""
    return outputrecords.adopt(source, bundle, RECORD, name, key) is not None


def write_record(bundle: Path, keys: dict[str, str], names: list[str]) -> None:
    """Record `names`' keys and hashes (after the files are in place), keeping other entries still current."""
    bundle = Path(bundle)
    rec = {n: e for n, e in outputrecords.read(bundle, RECORD).items()
           if n in REPORTS and n not in names and (bundle / n).is_file()}
    for n in names:
        rec[n] = outputrecords.entry(bundle, n, keys[n])
    outputrecords.write(bundle, RECORD, rec)


__all__ = ["RECORD", "adopt", "current", "file_keys", "inputs_key", "write_record"]
