"""One bundle as the explorer holds it: results, IR, tables and thumbnails read once, contained, and its verification.

Everything is read through `safeio.read_regular(..., root=bundle)`, so a file swapped for a link after
the bundle was opened is refused at the descriptor, and `ReportContext.load` has already refused a
bundle with links out of it or hard-linked files. Tables are found by their fixed names under
`tables/` (spec/bundle.md), never by a name from a request.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

#: the tables the explorer reads (spec/bundle.md); a bundle without one gets an empty frame
TABLES = ("images", "scores", "measures", "regions", "exclusions", "contrasts")
#: what a served file's suffix is served as; anything else is offered as a download of plain bytes
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".png": "image/png", ".jpg": "image/jpeg",
                 ".jpeg": "image/jpeg", ".pdf": "application/pdf", ".json": "application/json",
                 ".csv": "text/plain; charset=utf-8", ".log": "text/plain; charset=utf-8",
                 ".audit": "text/plain; charset=utf-8", ".md": "text/plain; charset=utf-8",
                 ".tex": "text/plain; charset=utf-8", ".txt": "text/plain; charset=utf-8"}


_ONE_AT_A_TIME = threading.Lock()


class Verification:
    """`scoreaudit verify` of one bundle, run once in a background thread; pages show its state."""

    def __init__(self, path: Path, run: bool = True) -> None:
        self.path = path
        self.state = "pending" if run else "not run"  # pending | ok | failed | incomplete | error | not run
        self.mismatches: list[str] = []
        self.unchecked: list[str] = []
        self._done = threading.Event()
        if run:
            threading.Thread(target=self._run, name=f"verify {path.name}", daemon=True).start()
        else:
            self._done.set()

    def _run(self) -> None:
        from scoreaudit.reports.context import BundleError
        from scoreaudit.reports.verify import verify_bundle

        try:
            with _ONE_AT_A_TIME:  # verify re-runs the statistics: bundles take turns (shared plugin state, CPU)
                mismatches, unchecked = verify_bundle(self.path)
        except BundleError as e:
            self.state, self.mismatches = "error", [str(e)]
        except Exception as e:  # noqa: BLE001 - verify is a check, never the reason the explorer dies
            self.state, self.mismatches = "error", [f"verify could not run: {type(e).__name__}: {e}"]
        else:
            self.mismatches, self.unchecked = list(mismatches), list(unchecked)
            self.state = "failed" if mismatches else ("incomplete" if unchecked else "ok")
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def as_json(self) -> dict:
        return {"state": self.state, "mismatches": self.mismatches[:50], "n_mismatches": len(self.mismatches),
                "unchecked": self.unchecked}


@dataclass
class Thumb:
    """One thumbnail the bundle holds: an image at one dose of one operator (thumbnails.json: region outlined;
    mover_thumbnails.json: the report's most-moving images, original and extreme dose)."""
    arm: str
    image_id: str
    operator: str
    dose: float
    region: str | None
    jpeg: bytes


@dataclass
class Bundle:
    key: str
    path: Path
    results: dict = field(default_factory=dict)
    ir: dict = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # manifest.json: relative path -> sha256
    thumbs: list[Thumb] = field(default_factory=list)
    error: str | None = None  # the bundle could not be opened at all
    verification: Verification | None = None

    @property
    def title(self) -> str:
        return str(self.results.get("title") or self.path.name)

    @property
    def cells(self) -> list[dict]:
        return [c for c in self.results.get("cells") or [] if isinstance(c, dict)]

    def cell(self, cell_id: str) -> dict | None:
        return next((c for c in self.cells if c.get("id") == cell_id), None)

    def table(self, name: str) -> pd.DataFrame:
        return self.tables.get(name, pd.DataFrame())

    def image_row(self, arm: str, image_id: str) -> dict | None:
        t = self.table("images")
        if t.empty or "arm" not in t or "image_id" not in t:
            return None
        hit = t[(t["arm"] == arm) & (t["image_id"] == image_id)]
        return None if hit.empty else hit.iloc[0].to_dict()

    def thumbs_of(self, arm: str, image_id: str) -> list[tuple[int, Thumb]]:
        return [(i, t) for i, t in enumerate(self.thumbs) if t.arm == arm and t.image_id == image_id]

    def thumbs_for(self, arm: str, image_id: str, operator: str | None) -> list[tuple[int, Thumb]]:
        """An image's thumbnails under `operator` (and its original), by dose; no operator: none."""
        hits = [(i, t) for i, t in self.thumbs_of(arm, image_id) if operator and t.operator in (operator, "original")]
        return sorted(hits, key=lambda it: (it[1].operator != "original", it[1].dose))

    def read_file(self, name: str) -> bytes | None:
        """The bytes of a file the manifest lists under exactly `name`, when they still match its sha256.

        `name` is only ever compared with the manifest's keys: the path opened is the bundle's own entry,
        opened with the bundle as root (a link swapped in is refused at the descriptor)."""
        from scoreaudit.safeio import read_regular

        if name not in self.files:
            return None
        rel = Path(name)
        if rel.is_absolute() or ".." in rel.parts:
            return None
        try:
            data = read_regular(self.path / rel, root=self.path)
        except OSError:
            return None
        return data if hashlib.sha256(data).hexdigest() == self.files[name] else None


def _read_table(path: Path, name: str) -> pd.DataFrame:
    from scoreaudit.safeio import read_regular

    p = path / "tables" / f"{name}.parquet"
    if not p.exists():
        return pd.DataFrame()
    return pd.read_parquet(io.BytesIO(read_regular(p, root=path)))


def _thumbs(raw: Any) -> list[Thumb]:
    """thumbnails.json's {operator: {arm, image_id, region, doses: [{dose, jpeg}]}} as a flat list."""
    out: list[Thumb] = []
    if not isinstance(raw, dict):
        return out
    for op, entry in sorted(raw.items()):
        if not isinstance(entry, dict) or not isinstance(entry.get("doses"), list):
            continue
        for d in entry["doses"]:
            try:
                jpeg = base64.b64decode(str(d["jpeg"]), validate=True)
                dose = float(d["dose"])
            except (KeyError, TypeError, ValueError, binascii.Error):
                continue
            if jpeg[:3] != b"\xff\xd8\xff":  # only JPEG bytes are ever served as image/jpeg
                continue
            out.append(Thumb(str(entry.get("arm")), str(entry.get("image_id")), str(op), dose,
                             entry.get("region") if isinstance(entry.get("region"), str) else None, jpeg))
    return out


def _mover_thumbs(raw: Any, images: pd.DataFrame) -> list[Thumb]:
    """mover_thumbnails.json (the report's movers, runtime/movers.py): {images: {key: base64 JPEG}} with keys
    `ARM/ID` (the original) and `ARM/ID/OPERATOR/DOSE` (the variant); keys are matched against the images
    table's (arm, id), so an id holding `/` is still read right."""
    out: list[Thumb] = []
    stored = raw.get("images") if isinstance(raw, dict) else None
    if not isinstance(stored, dict) or images.empty or not {"arm", "image_id"} <= set(images.columns):
        return out
    known = {f"{a}/{i}": (str(a), str(i)) for a, i in zip(images["arm"], images["image_id"])}
    for key, text in sorted(stored.items()):
        if key in known:
            (arm, iid), op, dose = known[key], "original", 0.0
        else:
            parts = str(key).rsplit("/", 2)
            if len(parts) != 3 or parts[0] not in known:
                continue
            try:
                dose = float(parts[2])
            except ValueError:
                continue
            (arm, iid), op = known[parts[0]], parts[1]
        try:
            jpeg = base64.b64decode(str(text), validate=True)
        except (binascii.Error, ValueError):
            continue
        if jpeg[:3] == b"\xff\xd8\xff":
            out.append(Thumb(arm, iid, op, dose, None, jpeg))
    return out


def open_bundle(path: str | Path, key: str, verify: bool = True) -> Bundle:
    """Read one bundle (never raises for a bad one: `error` says why it cannot be shown)."""
    from scoreaudit.reports.context import BundleError, ReportContext, load_json

    path = Path(path)
    b = Bundle(key=key, path=path)
    try:
        ctx = ReportContext.load(path)
        b.results, b.ir = ctx.results, ctx.ir
        b.thumbs = _thumbs(ctx.thumbnails)
        manifest = load_json(path / "manifest.json") if (path / "manifest.json").exists() else {}
        files = manifest.get("files") if isinstance(manifest, dict) else None
        b.files = {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}
        b.tables = {name: _read_table(path, name) for name in TABLES}
        movers = path / "mover_thumbnails.json"
        if movers.exists():
            b.thumbs += _mover_thumbs(load_json(movers), b.tables["images"])
    except BundleError as e:
        b.error = str(e)
    except (OSError, ValueError) as e:  # an unreadable table: shown as a bundle that cannot be opened
        b.error = f"cannot read {path}: {type(e).__name__}: {e}"
    b.verification = Verification(path, run=verify and b.error is None)
    return b
