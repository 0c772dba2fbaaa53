"""Optimisation probes (spec/probes.md): each measure's trajectory over the iterations, and the first and
last image of the first trajectories."""

from __future__ import annotations

import math
import re

from scoreaudit.reports import charts
from scoreaudit.reports.sections import section

_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")
UNITS = {"score": "score", "ita": "ITA°", "skin_exposure": "share of the person region",
         "clip_attribute": "share of images", "nsfw": "NSFW rate (share of images)",
         "anchor": "share of images (nearest anchor)"}


def _table(ctx):
    path = ctx.bundle_dir / "tables" / "probe.parquet"
    if not path.is_file():
        return None
    import pandas as pd

    return pd.read_parquet(path)


def _curve(g) -> list[tuple[float, float | None, float | None, float | None]]:
    """(iteration, mean, lo, hi) over trajectories; the band is mean ± 1.96 standard errors."""
    out: list[tuple[float, float | None, float | None, float | None]] = []
    for it, v in g.groupby("iteration")["value"]:
        v = v.dropna()
        if not len(v):
            out.append((float(it), None, None, None))
            continue
        m = float(v.mean())
        se = float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else float("nan")
        out.append((float(it), m, m - 1.96 * se, m + 1.96 * se))
    return out


def _short(x) -> str:
    """A score in three significant digits (thumbnail captions are narrow)."""
    return f"{x:.3g}" if isinstance(x, (int, float)) and math.isfinite(x) else "–"


def _thumbs(ctx, name: str) -> list[dict]:
    if (ctx.ir.get("report") or {}).get("thumbnails") is False:
        return []
    from scoreaudit.reports.context import load_json

    path = ctx.bundle_dir / "probes.json"
    data = load_json(path) if path.is_file() else {}
    out = []
    for t in ((data or {}).get(name) or {}).get("trajectories") or []:
        first, last = str(t.get("first") or ""), str(t.get("last") or "")
        if not (_BASE64.match(first) and _BASE64.match(last)):
            continue
        out.append({"first": "data:image/jpeg;base64," + first, "last": "data:image/jpeg;base64," + last,
                    "caption": f"{t.get('prompt')} · seed {t.get('seed')}",
                    "scores": f"{_short(t.get('first_score'))} → {_short(t.get('last_score'))}"})
    return out


@section("probes", order=65, title="Optimisation probes")
def probes(ctx) -> dict | None:
    declared = (ctx.ir.get("probes") or {})
    t = _table(ctx)
    if not declared or t is None or not len(t):
        return None
    groups = []
    for name, probe in declared.items():
        rows = t[t["probe"] == name]
        if not len(rows):
            continue
        params = (probe.get("call") or {}).get("params") or {}
        panels = []
        for measure in ["score", *probe.get("measures", [])]:
            m = rows[rows["measure"] == measure]
            if not len(m):
                continue
            labels = [x for x in dict.fromkeys(m["label"]) if x]
            series = ([charts.Series(label=lab, points=_curve(m[m["label"] == lab]), index=i)
                       for i, lab in enumerate(labels)] if labels
                      else [charts.Series(label=measure, points=_curve(m), index=0)])
            title = f"{measure} ({ctx.label('scorer', probe.get('scorer'))})" if measure == "score" else measure
            panels.append({"chart": charts.line_panel(series, title=title, x_label="iteration",
                                                      y_label=UNITS.get(measure, measure)),
                           "legend": charts.legend(labels) if labels else None})
        n_traj = int(rows.groupby(["cluster", "seed"]).ngroups)
        groups.append({"name": name, "label": probe.get("label") or name,
                       "scorer": ctx.label("scorer", probe.get("scorer")),
                       "direction": params.get("direction", "maximize"), "iterations": params.get("iterations"),
                       "lr": params.get("lr"), "trajectories": n_traj,
                       "prompts": int(rows["cluster"].nunique()), "panels": panels, "thumbs": _thumbs(ctx, name)})
    return {"groups": groups} if groups else None
