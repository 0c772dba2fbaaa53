"""The plots a reviewer expects next to cross-image cells, drawn from the bundle's tables (descriptive, like
the probes' trajectories; the cells' numbers stay the statistics'):

- a ROC curve for each `agreement(metric: auroc)` cell (images arm: the score against the 0/1 label; pairs
  arm: the score difference preferred − other against the pair's label), its area printed beside the cell's
  estimate, which it equals;
- a scatter of score against rating for each correlation cell (spearman / pearson / kendall with a `column:`),
  per cluster (means) where a cluster holds several images, as the statistic's unit.
"""

from __future__ import annotations

import contextlib
import itertools

import numpy as np

from scoreaudit.reports import charts, fmt
from scoreaudit.reports.sections import section

MAX_POINTS = 1500  # points drawn per scatter (an even subsample beyond): the PDF stays small at any size
CORRELATIONS = ("spearman", "pearson", "kendall")


def _tables(ctx):
    """(images, original scores) of the bundle, or None when the runtime tables are not there."""
    t = ctx.bundle_dir / "tables"
    if not (t / "images.parquet").is_file() or not (t / "scores.parquet").is_file():
        return None
    import pandas as pd

    images = pd.read_parquet(t / "images.parquet")
    scores = pd.read_parquet(t / "scores.parquet", columns=["arm", "image_id", "operator", "scorer", "score"])
    return images, scores[scores["operator"] == "original"]


def _labels(values, missing) -> np.ndarray:
    """0/1 labels as the agreement statistic reads them (numbers, true/false; the missing sentinel and anything
    else dropped as NaN)."""
    import pandas as pd

    raw = pd.Series(values)
    num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    txt = raw.astype(str).str.strip().str.lower()
    num = np.where(np.isnan(num) & (txt == "true").to_numpy(), 1.0, num)
    num = np.where(np.isnan(num) & (txt == "false").to_numpy(), 0.0, num)
    if missing is not None:
        num = np.where(txt.to_numpy() == str(missing).strip().lower(), np.nan, num)
        with contextlib.suppress(TypeError, ValueError):
            num = np.where(num == float(missing), np.nan, num)
    return np.where(np.isin(num, (0.0, 1.0)), num, np.nan)


def roc_points(score: np.ndarray, label: np.ndarray) -> list[tuple[float, float]]:
    """(false-positive rate, true-positive rate) at every distinct threshold, from (0, 0) to (1, 1); tied scores
    form one diagonal step, so the trapezoid area is the AUROC with ties counting half."""
    ok = np.isfinite(score) & np.isfinite(label)
    s, y = score[ok], label[ok]
    P, N = float((y == 1).sum()), float((y == 0).sum())
    if P == 0 or N == 0:
        return []
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.nonzero(np.diff(s))[0], len(s) - 1]
    tp, fp = np.cumsum(y)[last], np.cumsum(1 - y)[last]
    return [(0.0, 0.0)] + [(float(f / N), float(t / P)) for f, t in zip(fp, tp)]


def area(points: list[tuple[float, float]]) -> float:
    return float(sum((x1 - x0) * (y0 + y1) / 2 for (x0, y0), (x1, y1) in itertools.pairwise(points)))


def _thin(points: list, n: int) -> list:
    """At most n points, evenly spaced over the list (first and last kept)."""
    if len(points) <= n:
        return points
    idx = sorted(set(np.linspace(0, len(points) - 1, n).round().astype(int)))
    return [points[i] for i in idx]


def _arm_rows(ctx, images, scores, arm: str, scorer: str):
    rows = images[images["arm"] == arm]
    mine = scores[(scores["arm"] == arm) & (scores["scorer"] == scorer)].drop_duplicates("image_id")
    return rows.merge(mine[["image_id", "score"]], on="image_id", how="left")


def _roc_entry(ctx, c: dict, images, scores) -> dict | None:
    params = c.get("params") or {}
    arm = c.get("arm")
    rows = _arm_rows(ctx, images, scores, arm, c.get("scorer"))
    column = params.get("label")
    if column not in rows.columns:
        return None
    source = ((ctx.ir.get("arms") or {}).get(arm) or {}).get("source")
    if source == "pairs" or ("side" in rows.columns and rows["side"].notna().any()):
        pref = rows[rows["side"] == "preferred"].set_index("pair_id")
        other = rows[rows["side"] == "other"].set_index("pair_id")
        ids = pref.index.intersection(other.index)
        score = (pref.loc[ids, "score"].astype(float) - other.loc[ids, "score"].astype(float)).to_numpy()
        label = _labels(pref.loc[ids, column].to_numpy(), params.get("missing"))
        what = "score difference preferred \u2212 other"
    else:
        score = rows["score"].astype(float).to_numpy()
        label = _labels(rows[column].to_numpy(), params.get("missing"))
        what = "score"
    pts = roc_points(score, label)
    if not pts:
        return None
    auc = area(pts)
    name = f"{ctx.label('scorer', c.get('scorer'))} \u00b7 {ctx.label('arm', arm)}"
    return {"id": c.get("id"), "hypothesis": c.get("hypothesis"), "title": name, "auc": auc,
            "chart": charts.xy_plot(title=f"ROC: {name}", x_label="false-positive rate (label 0 called 1)",
                                    y_label="true-positive rate", lines=[charts.Series("ROC", _thin(pts, 400))],
                                    xlim=(0.0, 1.0), ylim=(0.0, 1.0), diagonal=True),
            "caption": f"{what} against label {column} ({fmt.count(int(np.isfinite(label).sum()))} usable): area "
                       f"{fmt.num(auc)}; the cell's AUROC {fmt.num(c.get('estimate'))} {fmt.ci(c.get('ci_low'), c.get('ci_high'))}. "
                       "Dashed: chance (area 0.5)."}


def _scatter_entry(ctx, c: dict, images, scores) -> dict | None:
    params = c.get("params") or {}
    column = params.get("column")
    arm = c.get("arm")
    if not column or not arm:
        return None
    rows = _arm_rows(ctx, images, scores, arm, c.get("scorer"))
    if column not in rows.columns:
        return None
    import pandas as pd

    rows = rows.assign(rating=pd.to_numeric(rows[column], errors="coerce"), score=rows["score"].astype(float))
    rows = rows[np.isfinite(rows["rating"]) & np.isfinite(rows["score"])]
    unit = "image"
    if "cluster" in rows.columns and rows["cluster"].nunique() < len(rows):
        rows = rows.groupby("cluster", sort=True)[["rating", "score"]].mean().reset_index()
        unit = "cluster (mean)"
    if len(rows) < 2:
        return None
    pts = _thin(list(zip(rows["rating"].tolist(), rows["score"].tolist())), MAX_POINTS)
    name = f"{ctx.label('scorer', c.get('scorer'))} \u00b7 {ctx.label('arm', arm)}"
    stat = {"spearman": "Spearman \u03c1", "pearson": "Pearson r", "kendall": "Kendall \u03c4"}[c["statistic"]]
    return {"id": c.get("id"), "hypothesis": c.get("hypothesis"), "title": name, "n": len(rows),
            "chart": charts.xy_plot(title=f"{name}: score against {column}", x_label=f"{column} (rating)",
                                    y_label="score (raw units)", points=pts),
            "caption": f"One point per {unit} ({fmt.count(len(rows))}{', ' + fmt.count(len(pts)) + ' drawn' if len(pts) < len(rows) else ''}); "
                       f"the cell's {stat} {fmt.signed(c.get('estimate'))} {fmt.ci(c.get('ci_low'), c.get('ci_high'))}."}


@section("crossplots", order=125, title="ROC curves and scores against ratings", listed=False)
def crossplots(ctx) -> dict | None:
    cells = ctx.results.get("cells") or []
    auroc = [c for c in cells if c.get("statistic") == "agreement"
             and (c.get("params") or {}).get("metric") == "auroc" and c.get("arm")]
    corr = [c for c in cells if c.get("statistic") in CORRELATIONS and (c.get("params") or {}).get("column")]
    if not auroc and not corr:
        return None
    tables = _tables(ctx)
    if tables is None:
        return None
    images, scores = tables
    rocs = [e for e in (_roc_entry(ctx, c, images, scores) for c in auroc) if e]
    scatters = [e for e in (_scatter_entry(ctx, c, images, scores) for c in corr) if e]
    if not rocs and not scatters:
        return None
    return {"rocs": rocs, "scatters": scatters}



