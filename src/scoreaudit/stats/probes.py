"""Statistics of optimisation probes: `probe_drift`, `probe_shift` and `probe_transition` (spec/probes.md), their
simulate truths, and the planted probe table `simulate` uses.

The runtime writes one long table, `tables/probe.parquet` (spec/bundle.md):
one row per (probe, prompt, seed, iteration, measure, label) with the value;
the scorer's own score is the measure `score`. A trajectory is one (prompt,
seed); the trajectories of one prompt form a cluster, and the estimate is the
mean of cluster means of last-minus-first differences, with the context's
shared machinery (cluster bootstrap, the audit's test over cluster means).

Planted model (for `simulate`): the declared probe's own trajectories (its
prompts × its seeds, `probe_shapes`; 40 placeholder prompts only when the
prompts file cannot be read); per trajectory and measure (the scorer's
`score` included), the first value is N(30, 10²) (labels: 1 with
probability 1/2) and the last is the first plus the planted drift
`probe_drift` plus N(0, noise²) (labels: 1 with probability 1/2 +
`probe_shift`), from `--truth {"SCORER": {"probe_drift": D, "probe_shift":
S, "noise": σ}}`; so the true values are D and S. An entry named after the
probe (`{"PROBE": {"probe_drift": D}}`) overrides its scorer's for that probe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoreaudit import numfmt
from scoreaudit.compiler.ir import AuditIR, StatCallIR
from scoreaudit.stats.bootstrap import stable_hash
from scoreaudit.stats.context import ArmData, StatContext, index_clusters
from scoreaudit.stats.estimate import Estimate

COLUMNS = ("probe", "scorer", "prompt", "cluster", "seed", "iteration", "measure", "label", "value")
DEFAULT_PROMPTS = 40  # planted prompts of a probe whose prompts cannot be read (no spec folder, missing file)


@dataclass(frozen=True)
class ProbeShape:
    """What simulate plants for one probe: its prompts (one cluster each) × its seeds."""

    prompts: tuple[str, ...]
    seeds: tuple[int, ...]
    declared: bool  # False: the prompts could not be read, DEFAULT_PROMPTS placeholders stand in
    attributes: tuple[dict, ...] = ()  # per prompt: what `where` selects by (compiler.prompts.expand_prompts)


def probe_shapes(ir: AuditIR, spec_path: Path | None) -> dict[str, ProbeShape]:
    """Every probe's own prompts × seeds, as `run` would optimise them (the same prompt expansion)."""
    from scoreaudit.compiler.prompts import PromptsError, expand_prompts, seed_list
    from scoreaudit.safeio import inside

    out = {}
    for name, probe in ir.probes.items():
        p = probe.call.params
        seeds = tuple(seed_list(p.get("seeds", 1)))
        rows: list[dict] = []
        files = [p["prompts"]] if isinstance(p["prompts"], str) else \
            [f["file"] for f in p["prompts"].get("factors", {}).values() if isinstance(f, dict)]
        if spec_path is not None or not files:  # a template of listed levels reads no file
            base = Path(spec_path).resolve().parent if spec_path is not None else Path(".")
            if all(inside(base / f, base) for f in files):  # the one containment check
                try:
                    rows = expand_prompts(p["prompts"], base)
                except PromptsError:
                    rows = []
        out[name] = ProbeShape(tuple(r["prompt"] for r in rows), seeds, True,
                               tuple(r.get("attributes", {}) for r in rows)) if rows else \
            ProbeShape(tuple(f"prompt {k}" for k in range(DEFAULT_PROMPTS)), seeds, False)
    return out


def _selected_clusters(ctx: StatContext, probe: str, where) -> set[str]:
    """The clusters (prompts) of `probe` whose attributes hold every `where` value (tables/probe_prompts)."""
    from scoreaudit.stats.context import StatError

    a = ctx.tables.get("probe_prompts")
    a = a[a["probe"] == probe] if a is not None and len(a) else pd.DataFrame(columns=["cluster", "column", "value"])
    keep: set[str] | None = None
    for col, value in where:
        rows = a[a["column"] == col]
        if not len(rows):
            raise StatError(f"the prompts of probe {probe} have no attribute {col!r} (where {col} = {value!r})")
        hit = set(rows.loc[rows["value"].astype(str) == str(value), "cluster"].astype(str))
        keep = hit if keep is None else keep & hit
    if not keep:
        cond = " and ".join(f"{c} = {v!r}" for c, v in where)
        raise StatError(f"no prompt of probe {probe} has {cond}")
    return keep


def _ends(ctx: StatContext, probe: str, measure: str, label: str | None, where=()) -> pd.DataFrame:
    """First and last value per trajectory: columns traj, cluster, first, last (the `where` prompts only)."""
    t = ctx.tables.get("probe")
    if t is None or not len(t):
        return pd.DataFrame(columns=["traj", "cluster", "prompt", "first", "last", "iterations"])
    t = t[(t["probe"] == probe) & (t["measure"] == measure)]
    if where:
        t = t[t["cluster"].astype(str).isin(_selected_clusters(ctx, probe, where))]
    if label is not None:
        t = t[t["label"] == label]
    rows = []
    for (cluster, prompt, seed), g in t.groupby(["cluster", "prompt", "seed"], sort=True):
        g = g.sort_values("iteration")
        rows.append({"traj": f"{cluster}/{seed}/{prompt}", "cluster": str(cluster), "prompt": str(prompt),
                     "first": float(g["value"].iloc[0]), "last": float(g["value"].iloc[-1]),
                     "iterations": int(g["iteration"].iloc[-1])})
    return pd.DataFrame(rows, columns=["traj", "cluster", "prompt", "first", "last", "iterations"])


def _label_sets(values) -> frozenset:
    return frozenset(str(lab) for lab, v in values if np.isfinite(v) and v >= 0.5)


def _transitions(ctx: StatContext, call: StatCallIR) -> pd.DataFrame:
    """Per trajectory whose first image has a label in `initial`: first = 1, last = [last image's label in
    `final`]; other trajectories last = NaN (so a prompt with none starting in `initial` has no cluster mean).

    An image's labels are those its measure scores 1 (one per image for `clip_attribute` and `anchor`).
    """
    p = call.params
    probe, measure = p["probe"], p.get("measure", "clip_attribute")
    initial, final = (set(v) if isinstance(v, list) else {v} for v in (p["initial"], p["final"]))
    cols = ["traj", "cluster", "prompt", "first", "last", "iterations"]
    t = ctx.tables.get("probe")
    if t is None or not len(t):
        return pd.DataFrame(columns=cols)
    t = t[(t["probe"] == probe) & (t["measure"] == measure) & (t["label"].astype(str) != "")]
    if _where(call):
        t = t[t["cluster"].astype(str).isin(_selected_clusters(ctx, probe, _where(call)))]
    rows = []
    for (cluster, prompt, seed), g in t.groupby(["cluster", "prompt", "seed"], sort=True):
        its = sorted(g["iteration"].unique())
        at = {it: _label_sets(zip(h["label"], h["value"].astype(float))) for it, h in g.groupby("iteration")}
        start, end = at[its[0]], at[its[-1]]
        eligible = bool(start & initial)
        rows.append({"traj": f"{cluster}/{seed}/{prompt}", "cluster": str(cluster), "prompt": str(prompt),
                     "first": 1.0 if eligible else np.nan,
                     "last": float(bool(end & final)) if eligible else np.nan, "iterations": int(its[-1])})
    return pd.DataFrame(rows, columns=cols)


def probe_transition(ctx: StatContext, call: StatCallIR, arm: str | None, scorer: str) -> Estimate:
    """Mean over prompts of the share of trajectories starting in `initial` that end in `final`."""
    p = call.params
    probe = p["probe"]
    tr = _transitions(ctx, call)
    if not len(tr):
        return Estimate(float("nan"), "ttest", undefined=f"probe {probe} recorded no {p.get('measure')} labels")
    a = _probe_arm(ctx, probe, tr)
    tr = tr.set_index("traj").loc[a.image_ids]
    per = tr["last"].to_numpy(dtype=float)
    eligible = int(np.isfinite(per).sum())
    if not eligible:
        return Estimate(float("nan"), "ttest", undefined=f"no trajectory of probe {probe} starts as "
                        f"{_words(p['initial'])}")
    detail = {"probe": probe, "measure": p.get("measure", "clip_attribute"), "initial": p["initial"],
              "final": p["final"], "trajectories": eligible, "trajectories_all": int(len(per)),
              "transitions": int(np.nansum(per)), "iterations": int(tr["iterations"].max())}
    if _where(call):
        detail["where"] = [list(w) for w in _where(call)]
    return ctx.mean_estimate(a, per, test=p.get("test"), detail=detail)


def _words(labels) -> str:
    return " or ".join(repr(x) for x in labels) if isinstance(labels, list) else repr(labels)


def _probe_arm(ctx: StatContext, probe: str, ends: pd.DataFrame) -> ArmData:
    """The probe's trajectories as an arm (one image per trajectory), for the shared estimators."""
    imgs = pd.DataFrame({"image_id": ends["traj"].astype(str), "cluster": ends["cluster"].astype(str)})
    imgs, clusters = index_clusters(imgs.sort_values("image_id", kind="stable").reset_index(drop=True))
    return ArmData(f"probe:{probe}", "synthetic", imgs, clusters, ctx.seed, ctx.n_boot)


def _estimate(ctx: StatContext, call: StatCallIR, measure: str, label: str | None) -> Estimate:
    probe = call.params["probe"]
    ends = _ends(ctx, probe, measure, label, _where(call))
    if not len(ends):
        what = measure if label is None else f"{measure} = {label}"
        return Estimate(float("nan"), "ttest", undefined=f"probe {probe} recorded no {what} values")
    a = _probe_arm(ctx, probe, ends)
    ends = ends.set_index("traj").loc[a.image_ids]
    diff = (ends["last"] - ends["first"]).to_numpy(dtype=float)
    detail = {"probe": probe, "measure": measure, "trajectories": int(np.isfinite(diff).sum()),
              "first_mean": float(np.nanmean(ends["first"])) if ends["first"].notna().any() else None,
              "last_mean": float(np.nanmean(ends["last"])) if ends["last"].notna().any() else None,
              "iterations": int(ends["iterations"].max())}
    if label is not None:
        detail["label"] = label
    if _where(call):
        detail["where"] = [list(w) for w in _where(call)]
    return ctx.mean_estimate(a, diff, test=call.params.get("test"), detail=detail)


def _where(call: StatCallIR) -> tuple[tuple[str, str], ...]:
    """A probe reading's `where` conditions: kept in its call's params (a probe reading has no arm to restrict)."""
    return tuple((str(c), str(v)) for c, v in call.params.get("where") or ())


def _measure_label(call: StatCallIR) -> tuple[str, str]:
    if call.name == "probe_shift":
        return call.params.get("measure", "clip_attribute"), call.params["label"]
    return call.params["measure"], ""


def probe_drift(ctx: StatContext, call: StatCallIR, arm: str | None, scorer: str) -> Estimate:
    return _estimate(ctx, call, *_measure_label(call))


def probe_shift(ctx: StatContext, call: StatCallIR, arm: str | None, scorer: str) -> Estimate:
    return _estimate(ctx, call, *_measure_label(call))


# ---------------------------------------------------------------- difference and ratio of probe readings


def _cluster_means(ctx: StatContext, call: StatCallIR, by_prompt: bool) -> pd.Series:
    """Mean last − first per cluster (prompt) of a probe reading, indexed by cluster id, or by prompt text
    (`by_prompt`: the key two probes share; a prompt listed twice is told apart by its position)."""
    if call.name == "probe_transition":  # per trajectory [ends in `final`]; NaN for those not starting in `initial`
        ends = _transitions(ctx, call)
        ends = ends.assign(diff=ends["last"])
    else:
        ends = _ends(ctx, call.params["probe"], *_measure_label(call), _where(call))
        ends = ends.assign(diff=ends["last"] - ends["first"])
    g = ends.assign(diff=ends["diff"].astype(float)).groupby("cluster", sort=True).agg(
        value=("diff", "mean"), prompt=("prompt", "first"))
    g = g[np.isfinite(g["value"].to_numpy(dtype=float))]
    if not by_prompt:
        return pd.Series(g["value"].to_numpy(float), index=g.index.astype(str))
    seen: dict[str, int] = {}
    keys = []
    for prompt in g["prompt"]:
        k = seen.get(prompt, 0)
        seen[prompt] = k + 1
        keys.append(prompt if k == 0 else f"{prompt}#{k}")
    return pd.Series(g["value"].to_numpy(float), index=keys)


def compare(ctx: StatContext, kind: str, ra, rb) -> Estimate:
    """`difference`/`ratio` of two probe readings (spec/methods.md, "Comparisons"; spec/methods-choices.md).

    Clusters are prompts. Two readings under the same probe share its own
    bootstrap draw; two probes are paired on the prompts they share (one draw
    over the union of their prompts, each reading taking its prompts'
    columns) and resampled independently (each probe's own draw) when they
    share none. A difference of two readings over the same prompts is tested
    by the t-test on per-prompt differences (estimate, p and interval from
    it); any other difference, and every ratio, inverts the bootstrap. A
    ratio is undefined when its denominator's (1 − alpha) CI includes 0.
    """
    from scoreaudit.stats.bootstrap import arm_rng, count_matrix, weighted_ratio
    from scoreaudit.stats.context import StatError, ci_contains

    level = 1 - ctx.alpha
    ests = []
    for r in (ra, rb):
        est = ctx.evaluate(r.statistic, None, r.scorer)
        if est.undefined is not None:
            sp = r.statistic.params
            what = sp.get("measure") or ""
            if r.statistic.name == "probe_shift":
                what = f"{what} = {sp.get('label')}"
            elif r.statistic.name == "probe_transition":
                what = f"{what} from {sp.get('initial')} to {sp.get('final')}"
            where = "".join(f" where {c} = {v}" for c, v in _where(r.statistic))
            raise StatError(f"{r.statistic.name} of {what}{where} under probe {sp['probe']} is undefined: "
                            f"{est.undefined}")
        ests.append(est)
    pa, pb = ra.statistic.params["probe"], rb.statistic.params["probe"]
    same = pa == pb
    ua, ub = (_cluster_means(ctx, r.statistic, by_prompt=not same) for r in (ra, rb))
    shared = ua.index.intersection(ub.index)
    if same:  # the probe's own draw: `_probe_arm`'s when both readings have the same clusters
        keys = np.array(sorted(set(ua.index) | set(ub.index)), dtype=object)
        W = count_matrix(arm_rng(ctx.seed, f"probe:{pa}"), ctx.n_boot, len(keys))
        how = f"paired: the same {len(shared)} prompts of probe {pa}"
    elif len(shared):
        keys = np.array(sorted(set(ua.index) | set(ub.index)), dtype=object)
        W = count_matrix(arm_rng(ctx.seed, "pairing", *sorted([f"probe:{pa}", f"probe:{pb}"])), ctx.n_boot,
                         len(keys))
        how = f"paired: probes {pa} and {pb} share {len(shared)} prompts"
    else:
        keys, W = None, None
        how = f"independent: probes {pa} and {pb} share no prompt, resampled independently"
    paired = W is not None

    def boot_of(u: pd.Series, est: Estimate) -> np.ndarray:
        if not paired:
            return np.asarray(est.boot, float)
        cm = u.reindex(keys).to_numpy(float)
        ok = np.isfinite(cm)
        return weighted_ratio(W, np.where(ok, cm, 0.0), ok.astype(float))

    A, B = boot_of(ua, ests[0]), boot_of(ub, ests[1])
    ea, eb = ests[0].estimate, ests[1].estimate
    det = {"kind": kind, "paired": paired, "shared_clusters": int(len(shared)), "pairing": how,
           "readings": [_reading_detail(r, e, level) for r, e in ((ra, ests[0]), (rb, ests[1]))],
           "ci_level_readings": level,
           "n_clusters": (len(keys) if paired else int(round((len(ua) + len(ub)) / 2)))}
    if kind == "ratio":
        lo, hi = ests[1].interval(level)
        if not (np.isfinite(lo) and np.isfinite(hi)) or ci_contains(lo, hi, 0.0):
            return Estimate(float("nan"), "bootstrap", detail=det,
                            undefined=f"the denominator's CI {numfmt.ci(lo, hi)} includes 0: the ratio is undefined")
        det["test"] = "bootstrap"
        with np.errstate(invalid="ignore", divide="ignore"):
            return Estimate(ea / eb, "bootstrap", boot=A / B, detail=det)
    if paired and set(ua.index) == set(ub.index):
        d = (ua - ub.reindex(ua.index)).to_numpy(float)
        det["test"] = "paired t"
        det["n_units"] = int(len(d))
        det["n_clusters"] = int(len(d))
        return Estimate(float(np.mean(d)), "ttest", contrasts=d, boot=A - B, detail=det)
    det["test"] = "bootstrap"
    return Estimate(ea - eb, "bootstrap", boot=A - B, detail=det)


def _reading_detail(r, est: Estimate, level: float) -> dict:
    lo, hi = est.interval(level)
    return {"statistic": r.statistic.name, "params": {k: v for k, v in r.statistic.params.items() if v is not None
                                                      and not isinstance(v, dict)},
            "arm": None, "probe": r.statistic.params["probe"], "scorer": r.scorer,
            "where": [list(w) for w in _where(r.statistic)],
            "estimate": est.estimate, "ci_low": lo, "ci_high": hi}


# ---------------------------------------------------------------- simulate


def planted_for(truth: Mapping[str, Any], probe: str, scorer: str) -> dict:
    """A probe's planted values: the scorer's (or "*"'s) entry, overridden by the probe's own entry, so two
    probes of one scorer (maximize and minimize) can be planted with different drifts."""
    return {**dict(truth.get(scorer, truth.get("*", {}))), **dict(truth.get(probe, {}))}


def probe_drift_truth(ir: AuditIR, call: StatCallIR, tc) -> float:
    return float(planted_for(tc.truth, call.params["probe"], tc.scorer).get("probe_drift", 0.0))


def probe_shift_truth(ir: AuditIR, call: StatCallIR, tc) -> float:
    return float(planted_for(tc.truth, call.params["probe"], tc.scorer).get("probe_shift", 0.0))


def probe_transition_truth(ir: AuditIR, call: StatCallIR, tc) -> float:
    """Planted labels are independent draws, 1 with probability q = ½ + shift at the last iteration, so a
    trajectory ends with some label of `final` with probability 1 − (1 − q)^|final| whatever it started as."""
    q = min(1.0, max(0.0, 0.5 + probe_shift_truth(ir, call, tc)))
    final = call.params["final"]
    return float(1.0 - (1.0 - q) ** len(final if isinstance(final, list) else [final]))


def planted_probe_prompts(ir: AuditIR, shapes: Mapping[str, ProbeShape] | None = None) -> pd.DataFrame:
    """The planted prompts' attributes (tables/probe_prompts), numbered as `planted_probe_table` numbers them."""
    shapes = shapes if shapes is not None else probe_shapes(ir, None)
    rows = [{"probe": name, "cluster": f"p{i:04d}", "prompt": prompt, "column": col, "value": str(v)}
            for name, shape in shapes.items() for i, (prompt, attrs) in enumerate(zip(shape.prompts, shape.attributes))
            for col, v in attrs.items()]
    return pd.DataFrame(rows, columns=["probe", "cluster", "prompt", "column", "value"])


def planted_probe_table(ir: AuditIR, truth: Mapping[str, Any], seed: int = 0,
                        shapes: Mapping[str, ProbeShape] | None = None) -> pd.DataFrame:
    """First and last iteration of every planted trajectory of every probe (see the module docstring).

    `shapes` (`probe_shapes`): each probe's prompts and seeds; None plants the declared seeds of
    DEFAULT_PROMPTS placeholder prompts.
    """
    shapes = shapes if shapes is not None else probe_shapes(ir, None)
    rows: list[dict] = []
    for name, probe in ir.probes.items():
        t = planted_for(truth, name, probe.scorer)
        drift, shift, noise = float(t.get("probe_drift", 0.0)), float(t.get("probe_shift", 0.0)), \
            float(t.get("noise", 1.0))
        rng = np.random.default_rng(np.random.SeedSequence([seed, stable_hash("probe:" + name)]))
        last_it = int(probe.call.params.get("iterations", 1))
        shape = shapes[name]
        measures = [{"measure": "score", "params": {}}] + list(probe.call.params["measures"])
        for m in measures:
            labels = list(m["params"].get("labels") or [])
            for p, prompt in enumerate(shape.prompts):
                for s in shape.seeds:
                    base = {"probe": name, "scorer": probe.scorer, "prompt": prompt, "cluster": f"p{p:04d}",
                            "seed": s}
                    if labels:
                        first = rng.random(len(labels)) < 0.5
                        last = rng.random(len(labels)) < min(1.0, max(0.0, 0.5 + shift))
                        for k, label in enumerate(labels):
                            rows.append({**base, "iteration": 0, "measure": m["measure"], "label": label,
                                         "value": float(first[k])})
                            rows.append({**base, "iteration": last_it, "measure": m["measure"], "label": label,
                                         "value": float(last[k])})
                    else:
                        v0 = rng.normal(30.0, 10.0)
                        rows.append({**base, "iteration": 0, "measure": m["measure"], "label": "", "value": v0})
                        rows.append({**base, "iteration": last_it, "measure": m["measure"], "label": "",
                                     "value": v0 + drift + rng.normal(0.0, noise)})
    return pd.DataFrame(rows, columns=list(COLUMNS))
