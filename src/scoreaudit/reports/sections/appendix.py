"""Appendix: the exact spec and its hash, the plan summary, the environment, the lock."""

from __future__ import annotations

from scoreaudit.reports import fmt
from scoreaudit.reports.sections import section


@section("appendix", order=200, title="Appendix")
def appendix(ctx) -> dict:
    r = ctx.results
    spec = r.get("spec") or {}
    plan = r.get("plan") or {}
    env = r.get("environment") or {}
    lock = r.get("lock") or {}
    stated = spec.get("sha256")
    settings = [(k, str(v)) for k, v in (r.get("settings") or {}).items() if k != "title"]
    return {
        "spec_text": ctx.spec_text, "spec_sha256": ctx.spec_sha256, "spec_path": spec.get("path") or "spec.audit",
        "sha_mismatch": bool(stated) and stated != ctx.spec_sha256, "stated_sha": stated,
        "settings": settings,
        "plan": {"fingerprint": plan.get("fingerprint") or "\u2014", "steps": fmt.count(plan.get("steps")),
                 "images": [(a, fmt.count(n)) for a, n in (plan.get("images") or {}).items()],
                 "passes": [(s, fmt.count(n)) for s, n in (plan.get("forward_passes") or {}).items()]},
        "env": {"python": env.get("python") or "\u2014", "platform": env.get("platform") or "\u2014",
                "device": env.get("device") or "\u2014",
                "packages": sorted((env.get("packages") or {}).items()),
                "scorers": [(n, s.get("plugin", ""), s.get("version", ""), s.get("weights_sha256") or "none (no weight file)")
                            for n, s in (env.get("scorers") or {}).items()]},
        "tool": r.get("tool") or {},
        "lock": [(k, "\u2014" if lock.get(k) in (None, "") else str(lock.get(k)))
                 for k in ("status", "path", "locked_at", "first_score_at", "spec_sha256", "hypotheses_sha256")],
        "precomputed": r.get("precomputed") or [],
        "schema_version": r.get("schema_version"),
    }
