"""Pre-registration: lock a spec before scoring, and judge a run against the lock.

`scoreaudit lock FILE` writes FILE.lock with every item that can change an
outcome (compiler/lock.py: settings, scorers and their parameters, arms and
the content hash of their data files, regions, operators and doses,
placebos, measures, selections, validations, hypotheses), each as canonical
text, plus the spec's sha256 and the UTC time. Comments and layout are not
items, so they never count as changes.

A run is "pre-registered" when every item matches and the lock predates the
first score the audit used; "deviation" when any item was added, removed or
changed (each listed with its locked and current text); otherwise "not
pre-registered". `lock` refuses when scores for the spec already exist (in
the cache next to it, or a bundle under out/) unless `--after-scoring`, and
records what it saw either way, so re-locking and running on a fresh cache
cannot launder a late lock: the report says "locked after scoring began".
A lock is self-attested (its time is this machine's clock); publishing its
sha256 before scoring (e.g. committing FILE.lock) makes it verifiable. The
status goes into the bundle's lock.json before the statistics run, which
copy it into results.json["lock"].
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from scoreaudit.compiler.lock import deviations as item_deviations, items_sha256, lock_items, normalise

LOCK_VERSION = 2
ATTESTATION = ("A lock is self-attested: its time comes from the clock of the machine that wrote it. To make it "
               "verifiable, publish the lock's sha256 (e.g. commit {name} or post its hash) before scoring.")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("scoreaudit")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
        return "0+unknown"


def _attr(h: Any, name: str) -> Any:
    return h.get(name) if isinstance(h, dict) else getattr(h, name)


def hypothesis_hashes(hypotheses) -> dict[str, str]:
    """name → sha256 of {name, normalised title, normalised claims}."""
    out = {}
    for h in hypotheses:
        payload = {"name": _attr(h, "name"), "title": normalise(_attr(h, "title") or ""),
                   "text": normalise(_attr(h, "text") or "")}
        out[payload["name"]] = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
    return out


def hypotheses_sha256(per: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(sorted(per.items())).encode()).hexdigest()


def lock_path(spec_path: Path) -> Path:
    spec_path = Path(spec_path)
    return spec_path.with_name(spec_path.name + ".lock")


def _utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _parse_time(s: str | None) -> datetime | None:
    if not s:
        return None
    try:
        t = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def scores_seen(spec_path: Path, ir, cache_path: Path | None = None) -> dict[str, Any]:
    """The earliest score time of this spec found in the cache next to it and in bundles under out/.

    {"first_score_seen": time or None, "where": [what had scores]}. A cache
    holds scores of a spec when its provenance has score slots of the spec's
    scorers on its arms.
    """
    from scoreaudit.safeio import loads_bounded, planted_link, read_regular

    spec_path = Path(spec_path)
    found: list[tuple[str, str]] = []
    cache = Path(cache_path) if cache_path is not None else spec_path.resolve().parent / ".scoreaudit" / "cache.sqlite"
    if cache.is_file() and planted_link(cache, spec_path.resolve().parent) is None:
        try:
            db = sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=30.0)
            try:
                for s in ir.scorers:
                    for a in ir.arms:
                        row = db.execute("SELECT MIN(e.created_at) FROM provenance p JOIN entries e ON e.key = p.key "
                                         "WHERE e.kind = 'score' AND p.slot LIKE ? ESCAPE '\\'",
                                         (f"score {_like(s)} {_like(a)}/%",)).fetchone()
                        if row and row[0]:
                            found.append((row[0], f"cache {cache}"))
            finally:
                db.close()
        except sqlite3.DatabaseError:
            pass
    for run_json in _bundles(spec_path.resolve().parent):
        try:
            info = loads_bounded(read_regular(run_json, root=spec_path.resolve().parent).decode("utf-8"))
            spec_copy = run_json.parent / "spec.audit"
            same = spec_copy.is_file() and _spec_title(spec_copy, spec_path.resolve().parent) == ir.settings.title
        except (OSError, ValueError):
            continue
        if same and isinstance(info, dict) and info.get("first_score_at"):
            found.append((str(info["first_score_at"]), f"bundle {run_json.parent}"))
    found.sort()
    return {"first_score_seen": found[0][0] if found else None, "where": sorted({w for _, w in found})}


BUNDLE_DEPTH = 4  # folders below the spec's folder searched for bundles (`--out out`, out/NAME, runs/a/b ...)


def _bundles(project: Path) -> list[Path]:
    """Every run.json of a bundle (beside a spec.audit) in the spec's folder, at most BUNDLE_DEPTH levels
    down, links not followed: wherever `run --out` put it inside the project, deleting the cache does
    not hide it."""
    import os

    out = []
    top = len(project.parts)
    for dirpath, dirnames, filenames in os.walk(project, followlinks=False):
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in (".git", ".scoreaudit", "node_modules")
                             and len(here.parts) - top < BUNDLE_DEPTH)
        if "run.json" in filenames and "spec.audit" in filenames:
            out.append(here / "run.json")
    return out


def _like(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _spec_title(path: Path, root: Path) -> str | None:
    import re

    from scoreaudit.safeio import read_regular

    m = re.search(r'audit\s+"((?:[^"\\]|\\.)*)"', read_regular(path, root=root).decode("utf-8", "replace"))
    return m.group(1) if m else None


class LockRefused(Exception):
    """Scores of the spec exist already: locking now would not be a pre-registration."""


def write_lock(spec_path: Path, now: str | None = None, *, after_scoring: bool = False,
               cache_path: Path | None = None) -> Path:
    """Check the spec (compiler/lock.py), then write FILE.lock atomically.

    Raises DiagnosticError when the spec has errors, LockRefused when scores of
    the spec already exist and `after_scoring` is False.
    """
    from scoreaudit.compiler.lock import checked_items
    from scoreaudit.runtime.datafiles import file_items
    from scoreaudit.safeio import write_atomic

    spec_path = Path(spec_path)
    ir, items, source = checked_items(spec_path)
    items = {**items, **file_items(ir, spec_path.resolve().parent)}  # the bytes of every image and mask
    seen = scores_seen(spec_path, ir, cache_path)
    if seen["first_score_seen"] and not after_scoring:
        raise LockRefused(f"scores of this spec exist already (since {seen['first_score_seen']}, in "
                          f"{'; '.join(seen['where'])}): a lock written now is not a pre-registration. Run "
                          "`scoreaudit lock --after-scoring` to lock anyway (the report will say it was locked "
                          "after scoring began), or delete those scores first")
    per = hypothesis_hashes(ir.hypotheses)
    lock = {
        "lock_version": LOCK_VERSION,
        "tool": {"name": "scoreaudit", "version": _version()},
        "spec": spec_path.name,
        "spec_sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
        "hypotheses_sha256": hypotheses_sha256(per),
        "hypotheses": per,
        "items": items,
        "items_sha256": items_sha256(items),
        "locked_at": now or _utc_now(),
        "after_scoring": bool(seen["first_score_seen"]),
        "scores_seen": seen,
    }
    out = lock_path(spec_path)
    write_atomic(out, json.dumps(lock, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
    return out


def _current_items(ir, spec_path: Path) -> dict[str, str]:
    from scoreaudit.compiler.ir import AuditIR
    from scoreaudit.runtime.datafiles import file_items

    model = AuditIR.model_validate(ir) if isinstance(ir, dict) else ir
    if not spec_path.exists():
        return lock_items(model, None)
    return {**lock_items(model, spec_path.resolve().parent), **file_items(model, spec_path.resolve().parent)}


def lock_status(spec_path: Path, ir, first_score_at: str | None) -> dict:
    """Judge a run (its `ir`) against FILE.lock item by item; the dict is lock.json's content."""
    from scoreaudit.safeio import loads_bounded, read_regular

    spec_path = Path(spec_path)
    path = lock_path(spec_path)
    base = {"path": path.name, "locked_at": None, "first_score_at": first_score_at, "spec_sha256": None,
            "hypotheses_sha256": None, "spec_changed": False, "deviations": [], "after_scoring": False}
    if not path.exists():
        return {**base, "path": None, "status": "not pre-registered",
                "detail": f"No lock file ({path.name}) was found next to the spec; run `scoreaudit lock` before scoring."}
    try:
        raw = read_regular(path, root=spec_path.resolve().parent)  # a link to a file outside is never read
        lock = loads_bounded(raw.decode("utf-8"))
        locked_hyps = dict(lock["hypotheses"])
        locked_at = str(lock["locked_at"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        return {**base, "status": "not pre-registered",
                "detail": f"The lock file {path.name} is unreadable ({type(e).__name__}); it cannot attest pre-registration."}
    try:
        source = read_regular(spec_path).decode("utf-8") if spec_path.exists() else ""
    except (OSError, ValueError):
        source = ""
    spec_sha = hashlib.sha256(source.encode("utf-8")).hexdigest()
    lock_sha = hashlib.sha256(raw).hexdigest()
    attest = " " + ATTESTATION.format(name=path.name) + f" This lock's sha256: {lock_sha}."
    seen = lock.get("scores_seen") if isinstance(lock.get("scores_seen"), dict) else {}
    base.update(locked_at=locked_at, spec_sha256=lock.get("spec_sha256"), hypotheses_sha256=lock.get("hypotheses_sha256"),
                spec_changed=bool(source) and spec_sha != lock.get("spec_sha256"), lock_sha256=lock_sha,
                after_scoring=bool(lock.get("after_scoring")), attestation=ATTESTATION.format(name=path.name))
    # what changed since locking, item by item (a format-1 lock committed to the hypotheses only)
    if isinstance(lock.get("items"), dict):
        deviations = item_deviations({str(k): str(v) for k, v in lock["items"].items()}, _current_items(ir, spec_path))
        scope = "The audit that ran differs from the lock"
    else:
        hyps = ir.get("hypotheses") if isinstance(ir, dict) else ir.hypotheses
        current = hypothesis_hashes(hyps or [])
        deviations = [{"item": f"hypothesis {n}", "kind": "hypothesis", "hypothesis": n, "change": c,
                       "locked": None, "current": None}
                      for n, c in sorted([(n, "added") for n in current if n not in locked_hyps]
                                         + [(n, "removed") for n in locked_hyps if n not in current]
                                         + [(n, "changed") for n in current
                                            if n in locked_hyps and locked_hyps[n] != current[n]])]
        scope = "The hypotheses that ran differ from the (format 1, hypotheses-only) lock"
    base["deviations"] = deviations
    t_lock, t_score = _parse_time(locked_at), _parse_time(first_score_at)
    if t_lock is None:
        return {**base, "status": "not pre-registered", "detail": f"The lock time {locked_at!r} is not an ISO 8601 time."}
    if base["after_scoring"]:
        where = "; ".join(seen.get("where") or []) or "an earlier run"
        return {**base, "status": "not pre-registered",
                "detail": f"Locked after scoring began: when the lock was written ({locked_at}) scores of this spec "
                          f"existed already (since {seen.get('first_score_seen') or 'an unknown time'}, in {where})."
                          + attest}
    if t_score is not None and t_lock >= t_score:
        return {**base, "status": "not pre-registered",
                "detail": f"Locked after scoring began: the lock ({locked_at}) postdates the first score of this "
                          f"audit ({first_score_at})." + attest}
    if deviations:
        names = ", ".join(f"{d['item']} ({d['change']})" for d in deviations)
        return {**base, "status": "deviation",
                "detail": f"{scope} of {locked_at}: {names}." + attest}
    when = f", before the first score ({first_score_at})" if first_score_at else " (no score time was recorded)"
    extra = " The spec's text changed since locking (comments or layout only)." if base["spec_changed"] else ""
    return {**base, "status": "pre-registered", "detail": f"Locked {locked_at}{when}.{extra}" + attest}


def write_lock_status(bundle_dir: Path, spec_path: Path, ir) -> dict:
    """Write bundle_dir/lock.json from bundle_dir/run.json's first_score_at; call between execute and analyse."""
    from scoreaudit.safeio import write_atomic

    bundle_dir = Path(bundle_dir)
    run_info: dict = {}
    run_json = bundle_dir / "run.json"
    if run_json.exists():
        try:
            from scoreaudit.safeio import loads_bounded, read_regular

            run_info = loads_bounded(read_regular(run_json).decode("utf-8"))
        except (OSError, ValueError):
            run_info = {}
    status = lock_status(Path(spec_path), ir, run_info.get("first_score_at"))
    write_atomic(bundle_dir / "lock.json", json.dumps(status, indent=2, sort_keys=True) + "\n")
    return status
