"""Appendix: the exact spec and its hash, the plan summary, the environment, the lock,
and where the numbers came from (computed, or read from a precomputed file and its sha256)."""

from __future__ import annotations

import re
from functools import lru_cache

from markupsafe import Markup

from scoreaudit.grammar.highlight import highlight_html
from scoreaudit.reports import fmt
from scoreaudit.reports.sections import section
from scoreaudit.reports.sections.first_screen import utc_time


@lru_cache(maxsize=1)
def spec_classes() -> frozenset[str]:
    """The token classes style.css colours in the spec listing (`pre.spec .kd`, ...): only they get a span."""
    from importlib.resources import files

    css = files("scoreaudit.reports").joinpath("templates/style.css").read_text(encoding="utf-8")
    return frozenset(re.findall(r"pre\.spec \.([A-Za-z0-9_-]+)", css))


@section("appendix", order=200, title="Appendix")
def appendix(ctx) -> dict:
    r = ctx.results
    spec = r.get("spec") or {}
    plan = r.get("plan") or {}
    env = r.get("environment") or {}
    lock = r.get("lock") or {}
    stated = spec.get("sha256")
    settings = [(k, shown(v)) for k, v in (r.get("settings") or {}).items() if k != "title"]
    return {
        "spec_text": ctx.spec_text, "spec_html": Markup(highlight_html(ctx.spec_text, spec_classes())),  # escaped by highlight_html
        "spec_sha256": ctx.spec_sha256, "spec_path": shown_path(spec.get("path") or "spec.audit"),
        "sha_mismatch": bool(stated) and stated != ctx.spec_sha256, "stated_sha": stated,
        "settings": settings,
        "plan": {"fingerprint": plan.get("fingerprint") or "\u2014", "steps": fmt.count(plan.get("steps")),
                 "images": [(a, fmt.count(n)) for a, n in (plan.get("images") or {}).items()],
                 "passes": [(s, fmt.count(n)) for s, n in (plan.get("forward_passes") or {}).items()],
                 "generated": [(a, f"{fmt.count(g.get('images'))} images, {fmt.count(g.get('denoising_steps'))} "
                                   "denoising steps") for a, g in _entries(plan.get("generation"))],
                 "probes": [(n, f"{fmt.count(g.get('images'))} images, {fmt.count(g.get('forward_passes'))} passes of "
                                f"{g.get('scorer') or DASH}") for n, g in _entries(plan.get("probes"))]},
        "env": {"python": env.get("python") or "\u2014", "platform": env.get("platform") or "\u2014",
                "device": env.get("device") or "\u2014",
                "packages": sorted((str(k), shown(v)) for k, v in (env.get("packages") or {}).items()),
                "scorers": [(n, s.get("plugin", ""), s.get("version", ""), s.get("weights_sha256") or "none (no weight file)")
                            for n, s in (env.get("scorers") or {}).items()]},
        "tool": r.get("tool") or {},
        "lock": [(k, "\u2014" if lock.get(k) in (None, "") else str(utc_time(lock[k]) if k.endswith("_at") else lock[k]))
                 for k in ("status", "path", "locked_at", "first_score_at", "spec_sha256", "hypotheses_sha256")],
        "precomputed": [_file(e) for e in (r.get("precomputed") or []) if isinstance(e, dict)],
        "sources": sources(r),
        "schema_version": r.get("schema_version"),
        "reproduce": reproduce(ctx),
    }


def reproduce(ctx) -> dict:
    """What a reader needs to run the audit again: the command (the spec by its file name; OUT is the folder
    that holds this report), the tool version and git commit where the run recorded one, the seeds, the
    device. Only what the bundle records: the report stays byte-identical wherever the bundle is moved."""
    r = ctx.results
    settings = r.get("settings") or {}
    env = r.get("environment") or {}
    tool = r.get("tool") or {}
    spec = shown_path((r.get("spec") or {}).get("path") or "spec.audit")
    device = env.get("device") or (ctx.run or {}).get("device")
    recorded = env.get("command")  # the run's own command line (run.json; runtime/reproduce.py)
    command = _local_free(recorded) if isinstance(recorded, str) and recorded.startswith("scoreaudit run ") else (
        f"scoreaudit run {spec} --out OUT" + (f" --device {device}" if device and device != "unknown" else ""))
    out = _out_of(command)
    git = env.get("git") if isinstance(env.get("git"), dict) else {}
    commit = git.get("commit") or tool.get("git_commit") or tool.get("commit")
    if commit and git.get("dirty"):
        commit = f"{commit} (with uncommitted changes)"
    seeds = [(k, shown(settings.get(k))) for k in ("seed", "bootstrap", "robustness") if k in settings]
    return {"command": command, "verify": f"scoreaudit verify {out}", "version": shown(tool.get("version")),
            "commit": shown(commit) if commit else "not recorded by this run", "seeds": seeds,
            "device": shown(device), "recorded": isinstance(recorded, str)}


def _local_free(command: str) -> str:
    """A recorded command with any absolute path replaced by its file name (the report names no local folders)."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return command
    return shlex.join(shown_path(w) if w.startswith(("/", "~")) or (len(w) > 2 and w[1] == ":") else w
                      for w in words)


def _out_of(command: str) -> str:
    """The --out folder of a command, for the matching `verify` line (OUT when it has none)."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return "OUT"
    i = words.index("--out") + 1 if "--out" in words else 0
    return shlex.quote(words[i]) if 0 < i < len(words) else "OUT"


MANIFEST = "manifest columns"


def shown(v) -> str:
    """A setting or version as the appendix prints it: JSON's words (true, false), an em dash for none."""
    if v is None or v == "":
        return "\u2014"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ", ".join(shown(x) for x in v) or "\u2014"
    return str(v)


def shown_path(path: str) -> str:
    """A file the report names, without the machine's folders: its name (results.json keeps the full path)."""
    from pathlib import PurePath

    return PurePath(str(path)).name if PurePath(str(path)).is_absolute() else str(path)


DASH = "\u2014"


def _entries(x) -> list[tuple[str, dict]]:
    """(name, entry) of a plan summary's generation/probes mapping; nothing for a hand-made or damaged one."""
    return [(str(k), v) for k, v in x.items() if isinstance(v, dict)] if isinstance(x, dict) else []


def _given(entry: dict, arm: str) -> list[str]:
    """Names an entry of results.json["precomputed"] gave one arm (older bundles: no `by_arm`)."""
    by_arm = entry.get("by_arm")
    if isinstance(by_arm, dict):
        return list(by_arm.get(arm) or ())
    return list(entry.get("names") or ()) if entry.get("arm") in (None, arm) else []


def sources(r: dict) -> list[dict]:
    """Per scorer and arm a cell reports, and per table-provided measure and arm: where its numbers came from.

    A scores table wins over manifest columns (the runtime reads the table then);
    without either, scoreaudit computed the scores itself.
    """
    entries = [e for e in (r.get("precomputed") or []) if isinstance(e, dict)]
    pairs = sorted({(scorer, a) for c in (r.get("cells") or []) if c.get("scorer")
                    for scorer in str(c["scorer"]).split(":") if scorer  # a comparison's `ir:laion`: two scorers
                    for a in (c.get("arms") or [c.get("arm")]) if a})
    rows = []
    for scorer, arm in pairs:
        hits = [e for e in entries if e.get("provides") == "scores" and scorer in _given(e, arm)]
        tables = [e for e in hits if e.get("source") != MANIFEST]
        rows.append(_row("scorer", scorer, arm, tables or hits))
    measured: set[tuple[str, str]] = set()
    for e in entries:
        if e.get("provides") != "measures":
            continue
        by_arm = e.get("by_arm") if isinstance(e.get("by_arm"), dict) else \
            ({e["arm"]: e.get("names") or []} if e.get("arm") else {})
        measured |= {(n, a) for a, names in by_arm.items() for n in names}
    for name, arm in sorted(measured):
        rows.append(_row("measure", name, arm, [e for e in entries if e.get("provides") == "measures"
                                                and name in _given(e, arm)]))
    return rows


def _file(e: dict) -> dict:
    """One precomputed file as the appendix shows it."""
    rows, used = e.get("rows"), e.get("used")
    return {"file": e.get("file") or "\u2014", "sha256": e.get("sha256") or "unknown",
            "provides": e.get("provides") or "\u2014", "source": e.get("source"),
            "arm": e.get("arm") or "every arm (its arm column)", "names": ", ".join(e.get("names") or ()),
            "rows": "\u2014" if rows is None else (f"{fmt.count(rows)} ({fmt.count(used)} used)" if used is not None
                                                 else fmt.count(rows))}


def _row(kind: str, name: str, arm: str, files: list[dict]) -> dict:
    return {"kind": kind, "name": name, "arm": arm, "computed": not files,
            "files": [{"file": e.get("file") or "\u2014", "sha256": e.get("sha256") or "unknown",
                       "manifest": e.get("source") == MANIFEST} for e in files]}
