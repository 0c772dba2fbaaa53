"""What counts as an image file and how many records a manifest holds: one answer for plan and run.

The planner (`compiler/plan.py`) counts an arm's images before anything runs
and the runtime (`runtime/manifests.py`) lists the same folder to read them; both
ask this module, so the count `scoreaudit plan` prints is the number the run
reads (a suffix listed in one place only once made a `.gif` count 0 in the
plan and 1 in the run).

Standard library only at import time (pyarrow is imported when a parquet
manifest is counted), so the compiler can use it without the runtime's weight.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

#: File suffixes (lower case) an image folder's files are read by; anything else in the folder is ignored.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff", ".gif")


def is_image_file(path: Path) -> bool:
    """Whether a folder entry is read as an image: a file (not a folder) with an image suffix, any case."""
    return path.suffix.lower() in IMAGE_SUFFIXES and path.is_file()


def folder_images(folder: Path) -> list[Path]:
    """The image files directly in `folder`, sorted by path (the run's order; its ids are their stems)."""
    return sorted(f for f in folder.iterdir() if is_image_file(f))


def manifest_rows(path: Path) -> int | None:
    """Records in a manifest file by its format: a JSON list counts its items, JSON lines its
    non-blank lines, CSV/TSV its rows after the header, parquet its metadata (never text lines)."""
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    if suffix in (".jsonl", ".ndjson"):
        with path.open(encoding="utf-8-sig") as fh:
            return sum(1 for line in fh if line.strip())
    if suffix == ".json":
        text = path.read_text(encoding="utf-8-sig")
        try:
            doc = json.loads(text)
        except json.JSONDecodeError:  # several values: one record per line
            return sum(1 for line in text.splitlines() if line.strip())
        return len(doc) if isinstance(doc, list) else None
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh, delimiter="\t" if suffix == ".tsv" else ",")
        return max(0, sum(1 for row in reader if row) - 1)
