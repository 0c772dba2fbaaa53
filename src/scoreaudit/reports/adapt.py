"""Bring results.json["sections"] into the one shape the section builders read.

The statistics write some sections as long tables (one row per curve point or
per stratum, as in their parquet twins) and spec/bundle.md also documents a
nested form; both are accepted here, so the builders stay simple. Sections
the statistics do not write (pairs, agreement, factors, ranks) are derived
from the cells of the matching statistic. Nothing is computed: values are only
regrouped and renamed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ADAPTERS: dict[str, Callable[[list, Any], list]] = {}


def adapter(name: str):
    def deco(fn):
        ADAPTERS[name] = fn
        return fn

    return deco


def normalise(name: str, rows: list, ctx) -> list:
    fn = ADAPTERS.get(name)
    return fn(list(rows or []), ctx) if fn else list(rows or [])


def _first(d: dict, *keys, default=None):
    for k in keys:
        if k in d and d[k] is not None:
            return d[k]
    return default


@adapter("curves")
def _curves(rows: list, ctx) -> list:
    if not rows or "points" in rows[0]:
        return rows
    grouped: dict[tuple, dict] = {}
    for r in rows:
        key = (r.get("scorer"), r.get("arm"), r.get("operator"))
        op = ctx.operators.get(r.get("operator")) or {}
        g = grouped.setdefault(key, {"scorer": key[0], "arm": key[1], "operator": key[2],
                                     "placebo_of": op.get("placebo_of"), "identity": op.get("identity"),
                                     "unit": r.get("unit") or ctx.scale, "points": []})
        g["points"].append({"dose": r.get("dose"), "mean": r.get("mean"), "ci_low": r.get("ci_low"),
                            "ci_high": r.get("ci_high"), "n": _first(r, "n", "n_clusters"),
                            "ci_level": r.get("ci_level")})
    for g in grouped.values():
        g["points"].sort(key=lambda p: p["dose"])
    return list(grouped.values())


@adapter("uniformity")
def _uniformity(rows: list, ctx) -> list:
    out = []
    for r in rows:
        out.append({**r, "fi": r.get("fi"), "fi_ci_low": _first(r, "fi_ci_low", "ci_low"),
                    "fi_ci_high": _first(r, "fi_ci_high", "ci_high"), "fi_p": _first(r, "fi_p", "p"),
                    "asymmetry": r.get("asymmetry"), "asym_ci_low": r.get("asym_ci_low"),
                    "asym_ci_high": r.get("asym_ci_high"), "asym_p": r.get("asym_p")})
    return out


@adapter("drift")
def _drift(rows: list, ctx) -> list:
    out = []
    for r in rows:
        if isinstance(r.get("net"), dict):
            out.append(r)
            continue
        p = r.get("p")
        if p is None and r.get("p_greater_0") is not None:
            p = min(1.0, 2 * min(r["p_greater_0"], r.get("p_less_0", 1.0)))  # two-sided from the two one-sided
        measure = ctx.measures_unit(r.get("measure"))
        out.append({**r, "unit": r.get("unit") or measure, "groups": _first(r, "groups", "n_groups"),
                    "p_sided": r.get("p_sided") or "two-sided",
                    "argmax": {"estimate": r.get("argmax_drift"), "ci_low": r.get("argmax_ci_low"),
                               "ci_high": r.get("argmax_ci_high")},
                    "random": {"estimate": r.get("random_drift"), "ci_low": r.get("random_ci_low"),
                               "ci_high": r.get("random_ci_high")},
                    "net": {"estimate": r.get("net"), "ci_low": r.get("ci_low"), "ci_high": r.get("ci_high"), "p": p}})
    return out


@adapter("transfer")
def _transfer(rows: list, ctx) -> list:
    out = []
    for r in rows:
        src, tgt = _first(r, "source_estimate", "theta_source"), _first(r, "target_estimate", "theta_target")
        diff = r.get("difference")
        if diff is None and src is not None and tgt is not None:
            diff = tgt - src
        out.append({**r, "source_estimate": src, "target_estimate": tgt,
                    "source_ci_low": _first(r, "source_ci_low", "ci_source_low"),
                    "source_ci_high": _first(r, "source_ci_high", "ci_source_high"),
                    "target_ci_low": _first(r, "target_ci_low", "ci_target_low"),
                    "target_ci_high": _first(r, "target_ci_high", "ci_target_high"),
                    "source_q": _first(r, "source_q", "q_source"), "target_q": _first(r, "target_q", "q_target"),
                    "difference": diff, "difference_p": _first(r, "difference_p", "p_difference")})
    return out


@adapter("strata")
def _strata(rows: list, ctx) -> list:
    if not rows or "strata" in rows[0]:
        return rows
    cells = {c.get("id"): c for c in ctx.results.get("cells") or []}
    grouped: dict[str, dict] = {}
    for r in rows:
        cid = r.get("cell")
        cell = cells.get(cid) or {}
        detail = cell.get("detail") or {}
        pooled = r.get("pooled")
        g = grouped.setdefault(cid, {
            "cell": cid, "scorer": r.get("scorer"), "arm": r.get("arm"), "statistic": r.get("statistic"),
            "by": r.get("by"), "test": _first(detail, "test", default="kruskal"),
            "omnibus_statistic": _first(detail, "omnibus_statistic", "statistic_value"),
            "p": _first(r, "omnibus_p", "p"), "q": r.get("q"), "ci_level": _first(r, "ci_level", default=detail.get("ci_level")),
            "pooled": pooled if isinstance(pooled, dict) else {
                "estimate": pooled, "ci_low": _first(detail, "pooled_ci_low"), "ci_high": _first(detail, "pooled_ci_high")},
            "strata": [], "largest_contrast": detail.get("largest_contrast")})
        g["strata"].append({"level": _first(r, "level", "stratum"), "estimate": r.get("estimate"),
                            "ci_low": r.get("ci_low"), "ci_high": r.get("ci_high"), "n_clusters": r.get("n_clusters")})
    return list(grouped.values())


def _cell_rows(ctx, statistics: tuple[str, ...]) -> list[dict]:
    return [c for c in ctx.results.get("cells") or [] if c.get("statistic") in statistics]


@adapter("pairs")
def _pairs(rows: list, ctx) -> list:
    if rows:
        return rows
    gaps = {(c.get("scorer"), c.get("arm")): c for c in _cell_rows(ctx, ("mean_gap",))}
    out = []
    for c in _cell_rows(ctx, ("pairwise_accuracy",)):
        d = c.get("detail") or {}
        g = gaps.get((c.get("scorer"), c.get("arm"))) or {}
        out.append({"scorer": c.get("scorer"), "arm": c.get("arm"), "accuracy": c.get("estimate"),
                    "ci_low": _first(d, "wilson_low", "ci_low", default=c.get("ci_low")),
                    "ci_high": _first(d, "wilson_high", "ci_high", default=c.get("ci_high")),
                    "ci_level": c.get("ci_level"), "test": c.get("test"),
                    "p": c.get("p"), "n_pairs": _first(d, "n_pairs", "n"), "ties": d.get("ties"),
                    "mean_gap": _first(d, "mean_gap", default=g.get("estimate")),
                    "mean_gap_ci_low": _first(d, "mean_gap_ci_low", default=g.get("ci_low")),
                    "mean_gap_ci_high": _first(d, "mean_gap_ci_high", default=g.get("ci_high")),
                    "mean_gap_ci_level": g.get("ci_level")})
    return out


@adapter("agreement")
def _agreement(rows: list, ctx) -> list:
    if rows:
        return rows
    out = []
    for c in _cell_rows(ctx, ("spearman", "pearson", "kendall")):
        d = c.get("detail") or {}
        r = c.get("estimate")
        out.append({"scorer": c.get("scorer"), "arm": c.get("arm"), "method": c.get("statistic"),
                    "column": _first(d, "column", default=(c.get("params") or {}).get("column")),
                    "r": r, "ci_low": c.get("ci_low"), "ci_high": c.get("ci_high"), "p": c.get("p"),
                    "ci_level": c.get("ci_level"), "test": c.get("test"),
                    "variance_explained": _first(d, "variance_explained", default=None if r is None else r * r),
                    "n": _first(d, "n", "n_images")})
    return out


@adapter("factors")
def _factors(rows: list, ctx) -> list:
    if rows:
        return rows
    out = []
    for c in _cell_rows(ctx, ("factor_effect",)):
        d = c.get("detail") or {}
        levels = d.get("levels") or d.get("marginal_means") or []
        if isinstance(levels, dict):
            levels = [{"level": k, "mean": v} for k, v in levels.items()]
        out.append({"scorer": c.get("scorer"), "arm": c.get("arm"),
                    "factor": _first(d, "factor", default=(c.get("params") or {}).get("factor")),
                    "model": _first(d, "model", default=(c.get("params") or {}).get("model")),
                    "effect": c.get("estimate"), "ci_low": c.get("ci_low"), "ci_high": c.get("ci_high"),
                    "ci_level": c.get("ci_level"),
                    "p": _first(d, "wald_p", default=c.get("p")), "wald_df": d.get("wald_df"), "levels": levels})
    return out


@adapter("ranks")
def _ranks(rows: list, ctx) -> list:
    if rows:
        return rows
    out = []
    for c in _cell_rows(ctx, ("rank_spread",)):
        d = c.get("detail") or {}
        levels = d.get("levels") or d.get("mean_ranks") or []
        if isinstance(levels, dict):
            levels = [{"level": k, "mean_rank": v} for k, v in levels.items()]
        out.append({"scorer": c.get("scorer"), "arm": c.get("arm"),
                    "factor": _first(d, "factor", default=(c.get("params") or {}).get("factor")),
                    "spread": c.get("estimate"), "p": _first(d, "friedman_p", default=c.get("p")),
                    "friedman_statistic": _first(d, "friedman_statistic", "statistic"),
                    "n_clusters": d.get("n_clusters"), "levels": levels})
    return out
