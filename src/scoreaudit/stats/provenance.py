"""Provenance for results.json: environment, lock status, spec, plan summary, JSON cleaning."""

from __future__ import annotations

import hashlib
import math
import platform
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

PACKAGES = ("scoreaudit", "numpy", "scipy", "pandas", "statsmodels", "pyarrow", "pillow", "opencv-python-headless",
            "scikit-image", "pydantic", "lark", "jinja2", "torch", "torchvision", "open_clip_torch",
            "transformers", "diffusers", "weasyprint")


def package_versions() -> dict[str, str]:
    """The installed versions of PACKAGES (those present), as a new dict each call."""
    return dict(_installed_versions())


@lru_cache(maxsize=1)
def _installed_versions() -> tuple[tuple[str, str], ...]:
    """Read once per process: each lookup parses a METADATA file (~1 ms, 18 of them, three times a run), and the
    versions that matter are those of the modules this process already imported, which cannot change under it."""
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for name in PACKAGES:
        try:
            out.append((name, version(name)))
        except PackageNotFoundError:
            continue
    return tuple(out)


def environment(ir, run_info: dict) -> dict:
    scorers = {}
    run_scorers = run_info.get("scorers") or {}
    for name, s in ir.scorers.items():
        info = run_scorers.get(name) or {}
        scorers[name] = {"plugin": info.get("plugin", s.call.plugin), "version": info.get("version", s.call.version),
                         "weights_sha256": info.get("weights_sha256")}
    env = {"python": sys.version.split()[0], "platform": platform.platform(),
           "device": run_info.get("device", "unknown"), "packages": package_versions(), "scorers": scorers}
    # what reproduces the bundle (run.json, runtime/reproduce.py): only when the run recorded it
    if isinstance(run_info.get("command"), str):
        env["command"] = run_info["command"]
    if "git" in run_info:
        env["git"] = run_info["git"] if isinstance(run_info["git"], dict) else None
    return env


def read_json(path: Path) -> dict:
    from scoreaudit.safeio import loads_bounded, read_regular

    try:
        return loads_bounded(read_regular(path).decode("utf-8"))
    except (OSError, ValueError):  # JSONTooDeep is a ValueError: never a RecursionError
        return {}


def lock_info(bundle: Path, run_info: dict) -> dict:
    """lock.json (written before analyse by the reports layer's run hook), else not pre-registered."""
    lock = read_json(bundle / "lock.json")
    if not lock.get("status"):
        return {"status": "not pre-registered", "path": None, "locked_at": None, "spec_sha256": None,
                "hypotheses_sha256": None, "first_score_at": run_info.get("first_score_at"), "deviations": []}
    lock.setdefault("first_score_at", run_info.get("first_score_at"))
    lock.setdefault("deviations", [])
    for key in ("path", "locked_at", "spec_sha256", "hypotheses_sha256"):  # results.json always has them
        lock.setdefault(key, None)
    return lock


def spec_info(bundle: Path, ir) -> dict:
    p = bundle / "spec.audit"
    text = p.read_text(encoding="utf-8") if p.exists() else None
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else (ir.source_hash or None)
    return {"path": ir.source_path, "sha256": sha, "text": text}


def plan_info(bundle: Path) -> dict:
    plan = read_json(bundle / "plan.json")
    steps = plan.get("steps", [])
    out = {"fingerprint": plan.get("fingerprint"), "steps": len(steps) if isinstance(steps, (list, dict)) else steps,
           "images": plan.get("images", {}), "forward_passes": plan.get("forward_passes", {})}
    # generated arms and probes: what they cost (only when the spec has them, so other bundles are unchanged)
    work = [s for s in (steps if isinstance(steps, list) else []) if isinstance(s, dict)]
    gen = {s["arm"]: {"images": s.get("images"), "denoising_steps": s.get("denoising_steps")}
           for s in work if s.get("kind") == "generate" and s.get("arm")}
    probes = {s["params"]["probe"]: {"scorer": s["params"].get("scorer"), "images": s.get("images"),
                                     "forward_passes": s.get("forward_passes"),
                                     "denoising_steps": s.get("denoising_steps")}
              for s in work if s.get("kind") == "probe" and isinstance(s.get("params"), dict)
              and s["params"].get("probe")}
    if gen:
        out["generation"] = gen
    if probes:
        out["probes"] = probes
    return out


def clean(x: Any) -> Any:
    """JSON-clean: numpy → Python, NaN/inf → None, tuples → lists, drop keys starting with '_'."""
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items() if not str(k).startswith("_")}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return [clean(v) for v in x.tolist()]
    if isinstance(x, (np.bool_,)):
        return bool(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, (float, np.floating)):
        f = float(x)
        return f if math.isfinite(f) else None
    return x
