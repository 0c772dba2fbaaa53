"""The crash-safe, content-addressed step cache (one SQLite file per spec folder).

Layout: `entries` maps a step key (scoreaudit/keys.py) to its value; `provenance`
maps a step's slot (what the step is, independent of its inputs) to the key,
plugin version and parameter/input hashes it last had, so a run can say why a
step ran ("new", "parameters changed", "plugin version changed", "input
changed"); `meta` holds the schema version.

Crash safety: WAL journal, and the executor stages a whole batch in memory and
writes it in ONE transaction (`commit`). SQLite's WAL commit is atomic, so a
SIGKILL at any instant leaves every earlier batch intact and loses only the
batch in flight. `synchronous=FULL` fsyncs the WAL at each commit: one fsync
per batch costs milliseconds next to the scoring of a batch, and in exchange a
committed batch also survives an OS crash or power loss (NORMAL would only
protect against process crashes).

Values are never pickled: floats are 8 little-endian bytes, arrays are `.npy`
bytes (loaded with allow_pickle=False, zlib-compressed), everything else is
canonical JSON. Each value carries a checksum (codec `<codec>+sum`: the first
16 bytes are sha256(codec, payload)): a value whose checksum or decoding
fails is reported (`corrupt`), treated as missing and replaced when its step
is recomputed; a database SQLite itself cannot read is one E0720 error
saying to delete the file (it is only a cache). Values written before
checksums existed (plain codecs) are still read. Every reader goes through
`open_rows` (a Ray task's view of the cache too: runtime/ray_tasks.py), and
a memo replay reads only the memo, whose own checksum covers every row it
copies (runtime/memo.py `intact_memos`); `verify` checks any keys' values
without decoding them. Entries are write-once (INSERT OR IGNORE), so `created_at` is
the time a result first existed: `first_score_time` reads it for the
pre-registration check.
"""

from __future__ import annotations

import io
import sqlite3
import struct
import zlib
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from scoreaudit.diagnostics import Diagnostic, DiagnosticError
from scoreaudit.keys import StepKey, canonical_json

SCHEMA_VERSION = "1"
_CHUNK = 500  # SQLite's default limit on bound parameters is 999 (older builds)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
  key TEXT PRIMARY KEY, kind TEXT NOT NULL, codec TEXT NOT NULL,
  value BLOB NOT NULL, created_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS provenance (
  slot TEXT PRIMARY KEY, key TEXT NOT NULL, plugin TEXT NOT NULL, version TEXT NOT NULL,
  params_hash TEXT NOT NULL, input_hash TEXT NOT NULL, updated_at TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
"""


class CacheError(DiagnosticError):
    """The cache file cannot be used (not SQLite, another schema): error E0720 naming the file.

    A DiagnosticError, so the CLI prints it like any input problem (no traceback).
    """

    def __init__(self, path: Path, message: str):
        super().__init__([Diagnostic("E0720", "error", message, path=str(path),
                                     help="delete the file (it is only a cache) or pass another --cache path")])


def cache_files(path: str | Path) -> list[Path]:
    """Every path a cache at `path` writes: the database, SQLite's WAL, shm and journal files, and the
    generated-image and probe stores beside it (their links are checked before a run writes)."""
    path = Path(path)
    return [path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal", ".generated", ".probes"))]


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# ------------------------------------------------------------------ value codecs


_SUM = "+sum"
_SUM_BYTES = 16


def _digest(codec: str, payload: bytes) -> bytes:
    import hashlib

    return hashlib.sha256(codec.encode("ascii") + b"\0" + payload).digest()[:_SUM_BYTES]


def seal(codec: str, payload: bytes) -> tuple[str, bytes]:
    """(codec with checksum, checksum + payload): what the cache stores."""
    return codec + _SUM, _digest(codec, payload) + payload


class CorruptValue(ValueError):
    """A stored value whose checksum or decoding fails."""


def unseal(codec: str, blob: bytes) -> Any:
    """The value a stored (codec, blob) holds; CorruptValue when it was damaged."""
    if codec.endswith(_SUM):
        codec = codec[:-len(_SUM)]
        blob = bytes(blob)
        if len(blob) < _SUM_BYTES or _digest(codec, blob[_SUM_BYTES:]) != blob[:_SUM_BYTES]:
            raise CorruptValue("checksum mismatch")
        blob = blob[_SUM_BYTES:]
    try:
        return decode(codec, blob)
    except Exception as exc:  # noqa: BLE001 - zlib.error, struct.error, JSON, npy header: a damaged legacy value
        raise CorruptValue(f"{type(exc).__name__}: {exc}") from None


def seal_value(value: Any) -> tuple[str, bytes]:
    """(codec, blob) as stored: encoded, with its checksum. Computed once, where the value is made
    (this process, or a Ray task whose entries travel sealed to the driver that writes them)."""
    return seal(*encode(value))


def damage(codec: str, blob: bytes) -> str | None:
    """Why a stored (codec, blob) cannot be trusted, or None. Checks the checksum without decoding
    (cheap enough for every step a memo replay stands for); an unsealed legacy value is decoded."""
    if codec.endswith(_SUM):
        if len(blob) < _SUM_BYTES or _digest(codec[:-len(_SUM)], bytes(blob[_SUM_BYTES:])) != bytes(blob[:_SUM_BYTES]):
            return "checksum mismatch"
        return None
    try:
        unseal(codec, blob)
    except CorruptValue as exc:
        return str(exc)
    return None


def open_rows(rows: Iterable[tuple[str, str, bytes, str]], corrupt: dict[str, str]) -> dict[str, tuple[Any, str]]:
    """key -> (value, created_at) for stored (key, codec, blob, created_at) rows whose checksum holds.

    The one reader of stored values (the cache, and a Ray task's view of it): a damaged value is
    left out (its step runs again and replaces it) and recorded in `corrupt` (key -> why).
    """
    out: dict[str, tuple[Any, str]] = {}
    for key, codec, blob, t in rows:
        try:
            out[key] = (unseal(codec, blob), t)
        except CorruptValue as exc:
            corrupt[key] = str(exc)
    return out


def encode(value: Any) -> tuple[str, bytes]:
    if isinstance(value, (float, np.floating)) and not isinstance(value, bool):
        return "f8", struct.pack("<d", float(value))
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            raise TypeError("object arrays cannot be cached (they would need pickle)")
        buf = io.BytesIO()
        np.save(buf, value, allow_pickle=False)
        return "npy", zlib.compress(buf.getvalue(), 1)
    return "json", canonical_json(value).encode("utf-8")


def decode(codec: str, blob: bytes) -> Any:
    if codec == "f8":
        return struct.unpack("<d", blob)[0]
    if codec == "npy":
        return np.load(io.BytesIO(inflate_npy(blob)), allow_pickle=False)
    if codec == "json":
        import json

        return json.loads(blob.decode("utf-8"), object_hook=_float_hook)
    raise ValueError(f"unknown value codec {codec!r} in the cache (written by a newer scoreaudit?)")


MAX_ARRAY_BYTES = 1 << 29  # 512 MiB: above any cached array (a mask of max_pixels is 11 MiB packed)
_HEADER_BYTES = 1 << 16


def inflate_npy(blob: bytes, cap: int = MAX_ARRAY_BYTES) -> bytes:
    """zlib-inflate a cached `.npy` no further than the size its own header declares (and `cap`).

    A value whose checksum holds can still be hostile (a cache from someone else): a small blob that
    inflates to a GiB would be inflated whole. The header (shape, dtype) comes first; the rest is
    inflated with `max_length` = what that shape needs, and anything beyond it is an error.
    """
    d = zlib.decompressobj()
    head = d.decompress(blob, _HEADER_BYTES)
    buf = io.BytesIO(head)
    try:
        major, _minor = np.lib.format.read_magic(buf)
        shape, _fortran, dtype = (np.lib.format.read_array_header_1_0 if major == 1
                                  else np.lib.format.read_array_header_2_0)(buf)
    except Exception as exc:  # noqa: BLE001 - numpy raises several types for a malformed header
        raise ValueError(f"not an array header ({exc})") from None
    if dtype.hasobject:
        raise ValueError("an object array (it would need pickle)")
    want = buf.tell() + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if want > cap:
        raise ValueError(f"the array header declares {want:,} bytes, more than the {cap:,} a cached value may have")
    data = head
    if len(data) < want:
        data += d.decompress(d.unconsumed_tail, want - len(data))
    if len(data) > want or d.decompress(d.unconsumed_tail, 1):  # the second call only consumes the trailer
        raise ValueError(f"the value inflates beyond the {want:,} bytes its header declares")
    return data


def _float_hook(obj: dict) -> Any:
    if set(obj) == {"__float__"}:
        return float(obj["__float__"])
    return obj


# ------------------------------------------------------------------ the cache


class Cache:
    """Lookups go to the database and to the staged (uncommitted) batch; `commit` writes the batch."""

    def __init__(self, path: str | Path, readonly: bool = False):
        self.path = Path(path)
        self._staged: dict[str, tuple[str, str, bytes, str]] = {}  # key -> (kind, codec, blob, time)
        self._staged_prov: dict[str, tuple] = {}
        self.corrupt: dict[str, str] = {}  # key -> why its stored value was rejected (recomputed, replaced)
        if readonly:  # a reader beside the run's own connection (Ray's cache reader): never writes
            try:
                self._db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=60.0,
                                           check_same_thread=False)
                self._db.execute("SELECT count(*) FROM meta").fetchone()
            except sqlite3.DatabaseError as e:
                raise CacheError(self.path, f"not a usable scoreaudit cache ({e})") from None
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), timeout=60.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE name='schema'").fetchone()
        except sqlite3.DatabaseError as e:
            raise CacheError(self.path, f"not a usable scoreaudit cache ({e})") from None
        if row is None:
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
        elif row[0] != SCHEMA_VERSION:
            raise CacheError(self.path, f"cache schema {row[0]} is not {SCHEMA_VERSION} "
                                        "(written by another scoreaudit version)")

    def _query(self, q: str, args: Iterable[Any] = ()) -> list:
        """One read; a database SQLite cannot read is E0720 (delete the cache), never a traceback."""
        try:
            return self._db.execute(q, list(args)).fetchall()
        except sqlite3.DatabaseError as e:
            raise CacheError(self.path, f"the cache database is damaged ({e})") from None

    # -- reads

    def lookup(self, keys: Iterable[str]) -> dict[str, tuple[Any, str]]:
        """key -> (value, created_at) for every key present (staged or committed)."""
        out: dict[str, tuple[Any, str]] = {}
        todo = []
        for k in dict.fromkeys(keys):
            if k in self._staged:
                _, codec, blob, t = self._staged[k]
                out[k] = (unseal(codec, blob), t)
            else:
                todo.append(k)
        out.update(open_rows(self.rows(todo), self.corrupt))
        return out

    def rows(self, keys: Iterable[str]) -> list[tuple[str, str, bytes, str]]:
        """The stored (key, codec, blob, created_at) of the committed keys, checksums unchecked
        (`open_rows` checks them; a Ray task gets these from the driver's reader)."""
        keys = list(dict.fromkeys(keys))
        out = []
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i:i + _CHUNK]
            q = f"SELECT key, codec, value, created_at FROM entries WHERE key IN ({','.join('?' * len(chunk))})"
            out += self._query(q, chunk)
        return out

    def verify(self, keys: Iterable[str]) -> set[str]:
        """The keys among these whose stored value fails its checksum (recorded in `corrupt`).

        For values a caller does not read but stands for: a memo replay returns rows copied from the
        steps' values, so it checks those steps' values are still intact (runtime/memo.py)."""
        bad = set()
        for key, codec, blob, _t in self.rows(k for k in keys if k not in self._staged):
            why = damage(codec, blob)
            if why is not None:
                self.corrupt[key] = why
                bad.add(key)
        return bad

    def provenance(self, slots: Iterable[str]) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        slots = list(dict.fromkeys(slots))
        for i in range(0, len(slots), _CHUNK):
            chunk = slots[i:i + _CHUNK]
            q = ("SELECT slot, key, plugin, version, params_hash, input_hash FROM provenance "
                 f"WHERE slot IN ({','.join('?' * len(chunk))})")
            for slot, key, plugin, version, ph, ih in self._query(q, chunk):
                out[slot] = {"key": key, "plugin": plugin, "version": version,
                             "params_hash": ph, "input_hash": ih}
        return out

    def reasons(self, steps: Iterable[StepKey]) -> dict[str, str]:
        """Why each (uncached) step must run, from what its slot last held."""
        steps = list(steps)
        prov = self.provenance(s.slot for s in steps)
        out = {}
        for s in steps:
            p = self._staged_prov.get(s.slot)
            p = {"plugin": p[1], "version": p[2], "params_hash": p[3], "input_hash": p[4]} if p else prov.get(s.slot)
            out[s.slot] = explain(s, p)
        return out

    # -- writes

    def stage(self, step: StepKey, value: Any) -> None:
        """Add a computed value to the batch in flight (visible to `lookup`, durable after `commit`)."""
        if step.key not in self._staged:
            self._staged[step.key] = (step.kind, *seal_value(value), utc_now())
        self.note(step)

    def stage_sealed(self, step: StepKey, codec: str, blob: bytes) -> None:
        """Stage a value sealed elsewhere (a Ray task): its checksum is checked before it is written,
        so what reaches the file is what was computed; a damaged one is simply not stored (its step
        runs again next time)."""
        if step.key not in self._staged and damage(codec, blob) is None:
            self._staged[step.key] = (step.kind, codec, bytes(blob), utc_now())
        self.note(step)

    def note(self, step: StepKey) -> None:
        """Record the slot's current key (also for cached steps whose slot pointed elsewhere)."""
        self._staged_prov[step.slot] = (step.key, step.plugin, step.version, step.params_hash,
                                        step.input_hash)

    @property
    def staged(self) -> int:
        return len(self._staged)

    def commit(self) -> None:
        """Write the staged batch in one transaction (all or nothing)."""
        if not self._staged and not self._staged_prov:
            return
        now = utc_now()
        db = self._db
        rows = [(k, kind, codec, blob, t) for k, (kind, codec, blob, t) in self._staged.items()]
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("INSERT OR IGNORE INTO entries VALUES (?,?,?,?,?)",
                               [r for r in rows if r[0] not in self.corrupt])
                # a damaged value is the one case an entry is rewritten: with the recomputed value
                db.executemany("INSERT OR REPLACE INTO entries VALUES (?,?,?,?,?)",
                               [r for r in rows if r[0] in self.corrupt])
                db.executemany("INSERT OR REPLACE INTO provenance VALUES (?,?,?,?,?,?,?)",
                               [(slot, *vals, now) for slot, vals in self._staged_prov.items()])
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as e:
            raise CacheError(self.path, f"cannot write to the cache ({e})") from None
        self._staged.clear()
        self._staged_prov.clear()

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Cache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def explain(step: StepKey, last: Mapping[str, str] | None) -> str:
    """The run-log reason for recomputing `step`, given what its slot held before."""
    if last is None:
        return "new"
    if last["plugin"] != step.plugin or last["version"] != step.version:
        return "plugin version changed"
    if last["params_hash"] != step.params_hash:
        return "parameters changed"
    if last["input_hash"] != step.input_hash:
        return "input changed"
    return "new"  # same recipe but no stored value (e.g. lost with an interrupted batch)


def first_score_time(cache_path: str | Path, score_keys: Iterable[str]) -> str | None:
    """UTC time (ISO 8601, `Z`) at which the earliest of these score entries was computed.

    The executor passes every score key an audit read and writes the answer to
    `run.json["first_score_at"]`; the lock check compares it with the lock's time
    ("was the audit pre-registered before any of its scores existed?"). None when
    none of the keys is in the cache.
    """
    path = Path(cache_path)
    if not path.exists():
        return None
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=60.0)
    except sqlite3.DatabaseError:
        return None
    try:
        keys = list(dict.fromkeys(score_keys))
        best: str | None = None
        for i in range(0, len(keys), _CHUNK):
            chunk = keys[i:i + _CHUNK]
            q = (f"SELECT MIN(created_at) FROM entries WHERE kind='score' "
                 f"AND key IN ({','.join('?' * len(chunk))})")
            try:
                (t,) = db.execute(q, chunk).fetchone()
            except sqlite3.DatabaseError:
                return None
            if t is not None and (best is None or t < best):
                best = t
        return best
    finally:
        db.close()
