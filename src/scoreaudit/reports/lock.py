"""Pre-registration: lock a spec's hypotheses before scoring, and judge a run against the lock.

`scoreaudit lock FILE` writes FILE.lock with the spec's sha256, a hash of the
normalised hypotheses (whitespace, comments and formatting do not matter; a
changed claim, threshold, arm or title does), one hash per hypothesis (so a
deviation can be named) and the UTC time. A run is "pre-registered" when the
lock's hypotheses match and the lock predates the first score the audit used;
"deviation" when hypotheses were added, removed or changed; otherwise "not
pre-registered". The status goes into the bundle's lock.json before the
statistics run, which copy it into results.json["lock"].
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

LOCK_VERSION = 1
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*|[^"#]+|["#]')


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("scoreaudit")
    except Exception:  # pragma: no cover - not installed
        return "0+unknown"


def normalise(text: str) -> str:
    """Drop comments (outside strings), collapse whitespace and drop it around punctuation.

    Strings are kept verbatim, so formatting never counts as a change but any
    changed word, number or string does.
    """
    out, code = [], []

    def flush() -> None:
        c = re.sub(r"\s+", " ", "".join(code))
        out.append(re.sub(r"\s*([(),:\[\]{}<>=*|&!+-])\s*", r"\1", c))
        code.clear()

    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if tok.startswith('"') and len(tok) > 1:
            flush()
            out.append(tok)
        else:
            code.append(" " if tok.startswith("#") else tok)
    flush()
    return "".join(out).strip()


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


def write_lock(spec_path: Path, now: str | None = None) -> Path:
    """Check the spec, then write FILE.lock; raises DiagnosticError when the spec has errors."""
    from scoreaudit.compiler.check import check
    from scoreaudit.diagnostics import DiagnosticError, has_errors
    from scoreaudit.grammar.parser import parse

    spec_path = Path(spec_path)
    source = spec_path.read_text(encoding="utf-8")
    module, diags = parse(source, str(spec_path))
    ir = None
    if module is not None and not has_errors(diags):
        ir, more = check(module, source, str(spec_path))
        diags = list(diags) + list(more)
    if ir is None or has_errors(diags):
        raise DiagnosticError(diags, source)
    per = hypothesis_hashes(ir.hypotheses)
    lock = {
        "lock_version": LOCK_VERSION,
        "tool": {"name": "scoreaudit", "version": _version()},
        "spec": spec_path.name,
        "spec_sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
        "hypotheses_sha256": hypotheses_sha256(per),
        "hypotheses": per,
        "locked_at": now or _utc_now(),
    }
    out = lock_path(spec_path)
    out.write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out


def lock_status(spec_path: Path, ir, first_score_at: str | None) -> dict:
    """Judge a run's hypotheses (from `ir`) against FILE.lock; the dict is lock.json's content."""
    spec_path = Path(spec_path)
    path = lock_path(spec_path)
    base = {"path": path.name, "locked_at": None, "first_score_at": first_score_at, "spec_sha256": None,
            "hypotheses_sha256": None, "spec_changed": False, "deviations": []}
    if not path.exists():
        return {**base, "path": None, "status": "not pre-registered",
                "detail": f"No lock file ({path.name}) was found next to the spec; run `scoreaudit lock` before scoring."}
    try:
        lock = json.loads(path.read_text(encoding="utf-8"))
        locked_hyps = dict(lock["hypotheses"])
        locked_at = str(lock["locked_at"])
    except (ValueError, KeyError, TypeError) as e:
        return {**base, "status": "not pre-registered",
                "detail": f"The lock file {path.name} is unreadable ({type(e).__name__}); it cannot attest pre-registration."}
    source = spec_path.read_text(encoding="utf-8") if spec_path.exists() else ""
    spec_sha = hashlib.sha256(source.encode("utf-8")).hexdigest()
    base.update(locked_at=locked_at, spec_sha256=lock.get("spec_sha256"), hypotheses_sha256=lock.get("hypotheses_sha256"),
                spec_changed=bool(source) and spec_sha != lock.get("spec_sha256"))
    t_lock, t_score = _parse_time(locked_at), _parse_time(first_score_at)
    if t_lock is None:
        return {**base, "status": "not pre-registered", "detail": f"The lock time {locked_at!r} is not an ISO 8601 time."}
    if t_score is not None and t_lock >= t_score:
        return {**base, "status": "not pre-registered",
                "detail": f"The lock ({locked_at}) postdates the first score of this audit ({first_score_at}): "
                          "the hypotheses were locked after scoring began."}
    current = hypothesis_hashes(ir.hypotheses if not isinstance(ir, dict) else ir.get("hypotheses") or [])
    deviations = [{"hypothesis": n, "change": "added"} for n in current if n not in locked_hyps]
    deviations += [{"hypothesis": n, "change": "removed"} for n in locked_hyps if n not in current]
    deviations += [{"hypothesis": n, "change": "changed"} for n in current
                   if n in locked_hyps and locked_hyps[n] != current[n]]
    deviations.sort(key=lambda d: d["hypothesis"])
    if deviations:
        names = ", ".join(f"{d['hypothesis']} ({d['change']})" for d in deviations)
        return {**base, "status": "deviation", "deviations": deviations,
                "detail": f"The hypotheses that ran differ from the lock of {locked_at}: {names}."}
    when = f", before the first score ({first_score_at})" if first_score_at else " (no score time was recorded)"
    extra = " The spec changed outside the hypotheses since locking." if base["spec_changed"] else ""
    return {**base, "status": "pre-registered", "detail": f"Locked {locked_at}{when}.{extra}"}


def write_lock_status(bundle_dir: Path, spec_path: Path, ir) -> dict:
    """Write bundle_dir/lock.json from bundle_dir/run.json's first_score_at; call between execute and analyse."""
    bundle_dir = Path(bundle_dir)
    run_info: dict = {}
    run_json = bundle_dir / "run.json"
    if run_json.exists():
        try:
            run_info = json.loads(run_json.read_text(encoding="utf-8"))
        except ValueError:
            run_info = {}
    status = lock_status(Path(spec_path), ir, run_info.get("first_score_at"))
    (bundle_dir / "lock.json").write_text(json.dumps(status, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return status
