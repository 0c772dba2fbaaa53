"""Estimators of the cross-image statistics: read a `StatContext`, call `stats.cross`.

Each works on the unaltered images' scores of one (scorer, arm): counterfactual
regression and ranking on arms with `factors:`, agreement with a manifest
column, pairs arms, ranked sets. The shared bootstrap of the arm (its count
matrix `W`) drives every resampled interval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scoreaudit.compiler.ir import StatCallIR
from scoreaudit.stats import cross
from scoreaudit.stats.context import ArmData, StatContext, StatError
from scoreaudit.stats.estimate import Estimate


def _frame(ctx: StatContext, arm: str, scorer: str) -> tuple[pd.DataFrame, ArmData]:
    """The arm's images with their original score (NaN-score images dropped, noted)."""
    a = ctx.arm(arm)
    df = a.images.assign(score=ctx.original_scores(a, scorer))
    missing = df["score"].isna()
    for iid in df.loc[missing, "image_id"].head(1000):
        ctx.notes.append({"arm": a.name, "image_id": str(iid), "reason": f"no score from {scorer}: left out"})
    return df[~missing].reset_index(drop=True), a


def _prompt_column(ctx: StatContext, arm: str, scorer: str, df: pd.DataFrame) -> str | None:
    """The column scores are z-scored within: the arm's prompt, else the scorer's prompt column."""
    arm_ir = ctx.ir.arms[ctx.arm(arm).name]
    col = arm_ir.call.params.get("prompt")
    if not col:
        p = ctx.ir.scorers[scorer].call.params.get("prompt") if scorer in ctx.ir.scorers else None
        col = p.get("column") if isinstance(p, dict) else None
    return col if col and col in df.columns else None


def _model_factors(ctx: StatContext, arm: str, call: StatCallIR) -> list[str]:
    model = call.params.get("model")
    factors = [f.strip() for f in model.split("*")] if model else [call.params["factor"]]
    missing = [f for f in factors if f not in ctx.arm(arm).images.columns]
    if missing:
        raise StatError(f"factor column(s) {missing} are not in the manifest of arm {arm!r}")
    return factors


def factor_effect(ctx: StatContext, call: StatCallIR, arm: str, scorer: str) -> Estimate:
    df, a = _frame(ctx, arm, scorer)
    factors = _model_factors(ctx, arm, call)
    return cross.factor_effect(df, call.params["factor"], factors, "cluster",
                               _prompt_column(ctx, arm, scorer, df), a.W, list(a.clusters))


def group_gap(ctx: StatContext, call: StatCallIR, arm: str, scorer: str) -> Estimate:
    if call.params["factor"] not in ctx.ir.arms[ctx.arm(arm).name].factors:  # strata of any arm
        from scoreaudit.stats.comparisons import stratum_gap

        return stratum_gap(ctx, ctx.arm(arm), scorer, call.params["factor"], str(call.params["a"]),
                           str(call.params["b"]))
    df, _ = _frame(ctx, arm, scorer)
    factors = _model_factors(ctx, arm, call)
    return cross.group_gap(df, call.params["factor"], str(call.params["a"]), str(call.params["b"]), factors,
                           "cluster", _prompt_column(ctx, arm, scorer, df))


def rank_spread(ctx: StatContext, call: StatCallIR, arm: str, scorer: str) -> Estimate:
    df, a = _frame(ctx, arm, scorer)
    return cross.rank_spread(df, call.params["factor"], "cluster", a.W, list(a.clusters))


def mean_rank(ctx: StatContext, call: StatCallIR, arm: str, scorer: str) -> Estimate:
    df, a = _frame(ctx, arm, scorer)
    return cross.mean_rank(df, call.params["factor"], str(call.params["level"]), "cluster", a.W, list(a.clusters))


def _agreement(method: str):
    def fn(ctx: StatContext, call: StatCallIR, arm: str, scorer: str) -> Estimate:
        df, a = _frame(ctx, arm, scorer)
        col = call.params["column"]
        if col not in df.columns:
            raise StatError(f"column {col!r} is not in the manifest of arm {arm!r}")
        # nothing silent: every image the correlation cannot use is an exclusion with its reason
        raw = df[col]
        numeric = pd.to_numeric(raw, errors="coerce")
        for iid, v, x in zip(df["image_id"], raw, numeric):
            if pd.isna(x):
                what = "missing" if v is None or (isinstance(v, float) and np.isnan(v)) or str(v).strip() == "" \
                    else f"not a number ({str(v)[:40]!r})"
                ctx.notes.append({"arm": a.name, "image_id": str(iid),
                                  "reason": f"{method}: its {col!r} value is {what}: left out"})
        est = cross.agreement(df, col, method, "cluster", a.W, list(a.clusters))
        return clustered_correlation(est, df, col) if est.undefined is None else est

    return fn


def clustered_correlation(est: Estimate, df: pd.DataFrame, col: str) -> Estimate:
    """With declared clusters (fewer clusters than images) the p inverts the cluster bootstrap like the
    interval, with the small-sample expansion over G clusters (spec/methods.md): the correlation's own test
    (and Fisher's z) treat the rows as independent, which images of one prompt are not. Without clusters
    the correlation's own test stays (its interval is still the bootstrap's over images)."""
    from dataclasses import replace

    used = df.loc[pd.to_numeric(df[col], errors="coerce").notna() & df["score"].notna(), "cluster"]
    G = int(used.nunique())
    if len(used) <= G:
        return replace(est, test=f"{est.detail.get('method', 'correlation')} test over images")
    return replace(est, p_fn=None, detail={**est.detail, "n_clusters": G})


spearman = _agreement("spearman")
pearson = _agreement("pearson")
kendall = _agreement("kendall")


def _pairs(ctx: StatContext, arm: str, scorer: str) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    a = ctx.arm(arm)
    df = a.images.assign(score=ctx.original_scores(a, scorer))
    if "side" not in df.columns or "pair_id" not in df.columns:
        raise StatError(f"arm {arm!r} is not a pairs arm")
    wide = df.pivot_table(index="pair_id", columns="side", values="score", aggfunc="first", dropna=False)
    for side in ("preferred", "other"):
        if side not in wide.columns:
            wide[side] = np.nan
    wide = wide.sort_index()
    return wide["preferred"].to_numpy(float), wide["other"].to_numpy(float), df


def pairwise_accuracy(ctx: StatContext, call: StatCallIR, arm: str, scorer: str) -> Estimate:
    """Pairs the scorer gets right (ties half), with the arm's declared clusters (per-cluster credit)."""
    pref, other, _ = _pairs(ctx, arm, scorer)
    labels, declared = _pair_clusters(ctx, arm, len(pref))
    return with_binomial_floor(cross.pairwise_accuracy(pref, other, labels if declared else None))


def with_binomial_floor(est: Estimate) -> Estimate:
    """The smallest p the accuracy's test can reach for a claim against t (W0423 when above alpha).

    The exact binomial on m untied pairs (t = 0.5, no declared clusters): 0.5^m, all wins. The Wilson score
    test elsewhere: every pair right (p̂ = 1, deff = 1, so n_eff = n), z = sqrt(n(1 − t)/t); every pair wrong
    for `<`, z = sqrt(n·t/(1 − t)); t(G − 1) quantiles with declared clusters, as the test's own."""
    from dataclasses import replace

    if est.undefined is not None:
        return est
    m = int(est.detail["wins"] + est.detail["losses"])
    n = int(est.detail["n"])
    df = est.detail.get("df")
    clustered = "n_eff" in est.detail

    def p_floor(t, side):
        if t == 0.5 and not clustered:
            return 1.0 if m == 0 else float(0.5 ** m)
        return cross.wilson_score_p(1.0 if side == "greater" else 0.0, n, t, side, df)

    def test_at(t):
        if clustered:
            return "Wilson score (ties half, per-cluster credit)"
        return "exact binomial (untied pairs)" if t == 0.5 else "Wilson score (ties half)"

    return replace(est, p_floor=p_floor, test_at=test_at,
                   test="Wilson score (ties half, per-cluster credit)" if clustered
                   else "exact binomial (untied pairs) at 0.5, Wilson score (ties half) elsewhere")


def _pair_clusters(ctx: StatContext, arm: str, n_pairs: int) -> tuple[np.ndarray, bool]:
    """Each pair's cluster label, in `_pairs`' order (sorted pair ids), and whether clusters are declared
    (a `cluster` column that groups pairs; otherwise every pair is its own cluster)."""
    a = ctx.arm(arm)
    pref = a.images[a.images["side"] == "preferred"].drop_duplicates("pair_id").set_index("pair_id")
    ids = sorted(a.images["pair_id"].dropna().unique())
    labels = np.array([str(pref["cluster"].get(i, i)) if "cluster" in pref else str(i) for i in ids], dtype=object)
    if len(labels) != n_pairs:  # a pair without its preferred side: its own cluster
        labels = np.array([str(i) for i in ids][:n_pairs], dtype=object)
    return labels, len(set(labels)) < len(labels)


def mean_gap(ctx: StatContext, call: StatCallIR, arm: str, scorer: str) -> Estimate:
    """Mean of preferred − other over pairs (per-cluster means first when clusters are declared), under
    `scale: sd` in units of the pooled SD of both sides' scores; t test and t interval over those units.

    METHODS: "t interval and test over pairs (clusters when declared)". The SD is a fixed divisor in the
    test, so the t statistic at threshold 0 is the raw gap's (a rescaling); a threshold t ≠ 0 is in SD units.
    """
    pref, other, _ = _pairs(ctx, arm, scorer)
    both = np.concatenate([pref, other])
    both = both[np.isfinite(both)]
    sd = float(np.std(both, ddof=1)) if ctx.settings.scale == "sd" and len(both) > 1 else 1.0
    labels, declared = _pair_clusters(ctx, arm, len(pref))
    d = (pref - other) / sd
    ok = np.isfinite(d)
    if ok.sum() < 2 or not sd > 0:
        return Estimate(float("nan"), "fixed", undefined="fewer than two pairs, or zero score SD")
    units = pd.Series(d[ok]).groupby(labels[ok], sort=True).mean()  # one value per cluster (pair without one)
    if len(units) < 2:
        return Estimate(float("nan"), "fixed", undefined="fewer than two clusters with a pair")
    x = units.to_numpy(float)
    over = "clusters" if declared else "pairs"
    return Estimate(float(x.mean()), "ttest", contrasts=x, se=float(x.std(ddof=1) / np.sqrt(len(x))),
                    df=len(x) - 1, test=f"t over {over}",
                    detail={"n": int(ok.sum()), "sd": sd, "n_clusters": int(len(x)), "_clusters": list(units.index),
                            "scale": "sd (pooled SD of both sides)" if ctx.settings.scale == "sd" else "raw"})


def _ranked(worst: bool):
    def fn(ctx: StatContext, call: StatCallIR, arm: str, scorer: str) -> Estimate:
        df, _ = _frame(ctx, arm, scorer)
        col = call.params.get("rank", "human_rank")
        if col not in df.columns:
            raise StatError(f"ranking column {col!r} is not in the manifest of arm {arm!r}")
        return cross.ranked_recall(df, col, "cluster", int(call.params.get("k", 1)), worst=worst)

    return fn


recall_best = _ranked(False)
filter_worst = _ranked(True)


def correlate(ctx: StatContext, call: StatCallIR, arm: str, scorer: str) -> Estimate:
    """Per-group values of the inner statistic (one per level of `by`) against an external table.

    Every group left out is counted and named with its reason (its inner cell is undefined, or the table
    has no value for it); per-group values that are numerically constant (e.g. gaps of order 1e-17,
    floating-point noise, relative to the inner statistic's scale) make the cell undefined instead of a
    correlation of noise.
    """
    from scoreaudit.stats.degenerate import REL_TOL, numerically_constant

    inner = call.inner
    if inner is None:
        raise StatError("correlate(...) needs a statistic as its first argument")
    by, table, column = call.params["by"], call.params["table"], call.params["column"]
    ext = ctx.inputs.get(table)  # the bundle's copy (stats/inputs.py): nothing outside the bundle is read
    if ext is None:
        raise StatError(f"table {table!r} is not in the results folder (run copies it there; it was missing, "
                        "unreadable or not a CSV/TSV/parquet table at run time)")
    if by not in ext.columns or column not in ext.columns:
        raise StatError(f"table {table!r} needs columns {by!r} and {column!r} (has {list(ext.columns)})")
    a = ctx.arm(arm)
    if by not in a.images.columns:
        raise StatError(f"column {by!r} is not in the manifest of arm {arm!r}")
    lookup = dict(zip(ext[by].astype(str), pd.to_numeric(ext[column], errors="coerce")))
    groups, xs, ys, dropped = _correlate_groups(ctx, inner, a, scorer, by, lookup, column)
    det = {"groups": groups, "values": xs, "table_values": ys, "n_groups": len(xs),
           "n_dropped": len(dropped), "dropped": dropped}
    if len(xs) < 3:
        return Estimate(float("nan"), "fixed", detail=det,
                        undefined=f"fewer than 3 groups of {by!r} with both values ({len(xs)}; "
                                  f"{len(dropped)} left out: {_named(dropped)})")
    x_arr, y_arr = np.array(xs), np.array(ys)
    scale = ctx.value_scale(inner, a, scorer)
    for what, v, ref in ((f"{inner.name} per group of {by!r}", x_arr, scale), (f"{column!r} in {table!r}", y_arr, 1.0)):
        if numerically_constant(v, ref):
            return Estimate(float("nan"), "fixed", detail={**det, "values": None},
                            undefined=f"the values of {what} do not vary (spread below {REL_TOL:g} × their scale): "
                                      "a correlation is undefined")
    method = call.params.get("method", "pearson")
    r = cross.correlation(x_arr, y_arr, method)
    rng = a.rng("correlate", by)
    boot = np.array([cross.correlation(x_arr[i], y_arr[i], method).statistic
                     for i in (rng.integers(0, len(xs), len(xs)) for _ in range(ctx.n_boot))])

    def p_fn(t, side):
        return float(cross._one_sided_corr(x_arr, y_arr, method, side)) if t == 0 else None

    return Estimate(float(r.statistic), "bootstrap", boot=boot, p_fn=p_fn,
                    detail={**det, "p_two_sided": float(r.pvalue)})


def _correlate_groups(ctx: StatContext, inner: StatCallIR, a, scorer: str, by: str, lookup: dict,
                      column: str) -> tuple[list, list, list, dict]:
    """(groups, inner values, table values, {dropped group: reason}) over the levels of `by`."""
    groups, xs, ys, dropped = [], [], [], {}
    labels = a.images[by].astype(str)
    for g in sorted(labels.unique()):
        est = ctx.evaluate(inner, a.subset(f"{by}={g}", labels.to_numpy() == g), scorer)
        y = lookup.get(g, float("nan"))
        if est.undefined is not None or not np.isfinite(est.estimate):
            dropped[g] = f"{inner.name} is undefined there: {est.undefined or 'no estimate'}"
        elif not np.isfinite(y):
            dropped[g] = f"the table has no numeric {column!r} for it"
        else:
            groups.append(g)
            xs.append(float(est.estimate))
            ys.append(float(y))
    return groups, xs, ys, dropped


def _named(dropped: dict, limit: int = 5) -> str:
    """The first few dropped groups with their reasons, in words."""
    if not dropped:
        return "none"
    items = [f"{g} ({why})" for g, why in list(dropped.items())[:limit]]
    more = len(dropped) - limit
    return "; ".join(items) + (f"; and {more} more" if more > 0 else "")
