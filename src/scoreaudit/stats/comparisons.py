"""Comparisons between readings, stratum gaps, their decomposition, and agreement with labels.

spec/methods.md: Comparisons, Labels, Population heterogeneity. Every function here
resamples clusters with a count matrix W (stats/bootstrap.py), so a reading's
replicates line up with its partner's:

- Pairing is decided from the data. Two readings are paired when their
  clusters overlap (the same arm, or arms whose images share ids: arms over
  the same manifest, the same pairs). Paired readings take their columns of
  one shared matrix (the arm's own when both are on one arm; one drawn for the
  pair of arms otherwise); readings on disjoint clusters keep their own,
  independent matrices.
- Tests (one method per cell: the interval inverts the same test as the p):
  a difference of pairwise accuracies on the same pairs is the sign-flip test
  of the per-pair credit differences (1 right, ½ tied, 0 wrong: the
  estimate's credit), summed per cluster, with the interval that inverts it
  (stats/signflip.py; McNemar's exact test when nothing is tied); a
  difference of cluster-mean contrasts over the same clusters uses the paired
  t-test and t interval of the per-cluster differences under `scale: raw`,
  the bootstrap under `scale: sd` (the SD is estimated); anything else
  inverts the bootstrap of the difference or ratio. Both analytic tests serve
  any threshold.
- A ratio is undefined when its denominator's (1 − alpha) CI includes 0.

Choices (also in spec/methods-choices.md):
- `group_gap` on a stratum column: difference of the two strata's mean
  original scores over images (ratios of cluster sums), divided by the SD of
  the view's original scores recomputed in every replicate under `scale: sd`.
- `decompose`: β_attr from the within-image regression of `attribute_effect`
  (refitted per replicate from per-cluster cross-products), times the groups'
  gap in the measure at the operator's identity dose, on the images that have
  a score and a measure; confound = observed gap − attribute part.
- `agreement` on pairs: the scorer's call is "preferred scores higher"; pairs
  whose two scores tie make no call and are excluded from accuracy, f1 and
  kappa (counted); auroc ranks the score difference (ties count half).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scoreaudit import numfmt
from scoreaudit.compiler.ir import ReadingIR, StatCallIR, readings_of
from scoreaudit.stats.bootstrap import arm_rng, count_matrix, percentile_ci
from scoreaudit.stats.context import ArmData, StatContext, StatError, _dose_index, ci_contains
from scoreaudit.stats.estimate import Estimate
from scoreaudit.stats.signflip import SignFlip

PAIR_STATS = ("pairwise_accuracy", "mean_gap")


# ---------------------------------------------------------------- views of an arm


def _text(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v).strip()


def _matches(col: pd.Series, value: str) -> np.ndarray:
    """Rows whose value equals `value` as text, or as a number when both read as numbers."""
    s = col.map(lambda v: None if v is None or (isinstance(v, float) and math.isnan(v)) else _text(v))
    hit = (s == value).to_numpy()
    try:
        f = float(value)
    except ValueError:
        return hit
    num = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    return hit | (num == f)


def reading_view(ctx: StatContext, r: ReadingIR) -> ArmData:
    """The reading's arm, restricted by its `where` conditions (a sub-arm with its own bootstrap)."""
    return restrict(ctx, ctx.arm(r.arm), r.where)


def restrict(ctx: StatContext, a: ArmData, where) -> ArmData:
    """`a` restricted to the images whose columns hold the `where` values (all of them); `a` itself without any."""
    if not where:
        return a
    mask = np.ones(a.n_images, dtype=bool)
    for col, value in where:
        if col not in a.images.columns:
            raise StatError(f"arm {a.name!r} has no column {col!r} (where {col} = {value!r})")
        mask &= _matches(a.images[col], value)
    if not mask.any():
        raise StatError(f"no image of arm {a.name!r} has {' and '.join(f'{c} = {v!r}' for c, v in where)}")
    return a.subset(",".join(f"{c}={v}" for c, v in where), mask)


def _with_counts(ctx: StatContext, view: ArmData, W: np.ndarray, tag: str,
                 sd_W: np.ndarray | None = None) -> ArmData:
    """`view` with the count matrix W (its columns in `view.clusters` order), as a distinct sub-arm.

    `sd_W` (B × the root arm's clusters) is the same draw for the root arm's clusters, from which the SD
    of `scale: sd` statistics is re-estimated per replicate; None: the root arm's own W is that draw.
    """
    root = ctx.arm(view.name)
    label = f"{view.label}|{tag}" if view.label else tag
    cols = np.searchsorted(root.clusters.astype(str), view.clusters.astype(str))
    out = ArmData(view.name, view.kind, view.images, view.clusters, view.seed, view.n_boot, label=label, parent=root,
                  root_cols=cols)
    out._W = W
    out._sd_W = sd_W
    return out


@dataclass(frozen=True)
class Pairing:
    paired: bool
    shared: int  # clusters both readings have
    how: str  # a sentence for the report


def pair_views(ctx: StatContext, ra: ReadingIR, rb: ReadingIR) -> tuple[ArmData, ArmData, Pairing]:
    """The two readings' views, sharing one bootstrap where their clusters overlap (see module doc)."""
    va, vb = reading_view(ctx, ra), reading_view(ctx, rb)
    shared = np.intersect1d(va.clusters.astype(str), vb.clusters.astype(str))
    same_arm = ra.arm == rb.arm
    linked = same_arm or len(np.intersect1d(va.image_ids.astype(str), vb.image_ids.astype(str))) > 0
    if len(shared) == 0 or not linked:
        why = "in different clusters" if same_arm else "on arms that share no cluster"
        return va, vb, Pairing(False, 0, f"independent: the readings are {why}, resampled independently")
    if same_arm:
        root = ctx.arm(ra.arm)
        if va is root and vb is root:
            return va, vb, Pairing(True, len(shared), f"paired: the same {len(shared)} clusters of {ra.arm}")
        Wr = root.W
        pos = {c: k for k, c in enumerate(root.clusters)}
        views = []
        for v in (va, vb):
            views.append(v if v is root else
                         _with_counts(ctx, v, Wr[:, [pos[c] for c in v.clusters]], f"paired-in:{root.name}"))
        return views[0], views[1], Pairing(True, len(shared),
                                           f"paired: {len(shared)} clusters of {ra.arm} hold both readings")
    # One draw over the union of the two *whole* arms' clusters: each view takes its clusters' columns, and
    # each arm's SD (scale: sd) is re-estimated from the same draw's columns for all of that arm's clusters.
    roots = [ctx.arm(ra.arm), ctx.arm(rb.arm)]
    union = np.array(sorted(set(roots[0].clusters.astype(str)) | set(roots[1].clusters.astype(str))), dtype=object)
    names = sorted([ra.arm, rb.arm])
    W = count_matrix(arm_rng(ctx.seed, "pairing", *names), ctx.n_boot, len(union))
    pos = {c: k for k, c in enumerate(union)}

    def cols(clusters) -> list[int]:
        return [pos[str(c)] for c in clusters]

    views = [_with_counts(ctx, v, W[:, cols(v.clusters)], f"paired:{'+'.join(names)}", sd_W=W[:, cols(r.clusters)])
             for v, r in zip((va, vb), roots)]
    return views[0], views[1], Pairing(True, len(shared),
                                       f"paired: {ra.arm} and {rb.arm} share {len(shared)} clusters")


# ---------------------------------------------------------------- a reading's replicates


@dataclass
class Read:
    """One reading evaluated on its view: the estimate, B replicates, and per-unit values for paired tests."""

    est: Estimate
    boot: np.ndarray
    units: pd.Series | None = None  # per pair (pairs stats) or per cluster (mean contrasts), by label
    kind: str = "other"  # "pairs" | "clusters" | "other"
    clusters: pd.Series | None = None  # pairs stats: each pair's cluster label (the pair's own without one)


def pair_table(ctx: StatContext, view: ArmData, scorer: str) -> pd.DataFrame:
    """One row per pair of the view: preferred and other score, the pair's cluster position."""
    df = view.images.assign(score=ctx.original_scores(view, scorer))
    if "side" not in df.columns or "pair_id" not in df.columns:
        raise StatError(f"arm {view.name!r} is not a pairs arm")
    pref = df[df["side"] == "preferred"].set_index("pair_id")
    other = df[df["side"] == "other"].set_index("pair_id")
    ids = pref.index.intersection(other.index)
    out = pd.DataFrame({"preferred": pref.loc[ids, "score"].astype(float),
                        "other": other.loc[ids, "score"].astype(float),
                        "cidx": pref.loc[ids, "cluster_idx"].astype(int)}, index=ids.astype(str))
    return out.sort_index()


def _boot_of_units(view: ArmData, values: np.ndarray, cidx: np.ndarray) -> np.ndarray:
    """Replicates of the mean over units (pairs), resampling the units' clusters with view.W."""
    ok = np.isfinite(values)
    C = view.n_clusters
    sums = np.bincount(cidx[ok], values[ok], minlength=C)
    cnts = np.bincount(cidx[ok], minlength=C).astype(float)
    top, bot = view.W @ sums, view.W @ cnts
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bot > 0, top / np.where(bot > 0, bot, 1), np.nan)


def _pooled_sd_boot(view: ArmData, t: pd.DataFrame, cidx: np.ndarray) -> np.ndarray:
    """Replicates of the pooled SD of both sides' scores, from per-cluster (n, Σs, Σs²) under view.W."""
    both = t[["preferred", "other"]].to_numpy(float)
    ok = np.isfinite(both)
    centre = float(both[ok].mean()) if ok.any() else 0.0
    v = np.where(ok, both - centre, 0.0)
    C = view.n_clusters
    parts = np.column_stack([np.bincount(cidx, ok.sum(1), minlength=C), np.bincount(cidx, v.sum(1), minlength=C),
                             np.bincount(cidx, (v * v).sum(1), minlength=C)]).astype(float)
    n, s1, s2 = (view.W @ parts).T
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (s2 - s1 * s1 / n) / (n - 1)
        return np.sqrt(np.where(var > 0, var, np.nan))


def read(ctx: StatContext, r: ReadingIR, view: ArmData) -> Read:
    from scoreaudit.compiler.comparisons import replicates_problem

    why = replicates_problem(r.statistic.name, r.statistic.params, ctx.ir.arms.get(r.arm), ctx.settings.scale)
    if why is not None:  # `check` refuses these (E0477); the same words for a cell that reaches the run
        raise StatError(f"{why}, so it cannot be one side of a comparison")
    est = ctx.evaluate(r.statistic, view, r.scorer)
    if est.undefined is not None:
        raise StatError(f"{r.statistic.name} on {view.key} for {r.scorer} is undefined: {est.undefined}")
    name = r.statistic.name
    if name in PAIR_STATS:
        t = pair_table(ctx, view, r.scorer)
        cidx = t["cidx"].to_numpy()
        if name == "pairwise_accuracy":
            d = t["preferred"] - t["other"]
            v = np.where(d > 0, 1.0, np.where(d < 0, 0.0, np.where(d == 0, 0.5, np.nan)))
            return Read(est, _boot_of_units(view, v, cidx), pd.Series(v, index=t.index), "pairs",
                        pd.Series(view.clusters[cidx].astype(str), index=t.index))
        sd = float(est.detail.get("sd", 1.0)) or 1.0
        raw = (t["preferred"] - t["other"]).to_numpy(float)
        boot = _boot_of_units(view, raw, cidx)
        # scale sd: the pooled SD of both sides, re-estimated from the same draw of clusters
        boot = boot / (_pooled_sd_boot(view, t, cidx) if ctx.settings.scale == "sd" else sd)
        return Read(est, boot, pd.Series(raw / sd, index=t.index), "pairs")
    labels = est.detail.get("_clusters")
    if est.contrasts is not None and labels is not None and len(labels) == len(est.contrasts):
        units = pd.Series(np.asarray(est.contrasts, float), index=np.asarray(labels).astype(str))
        if est.boot is not None and len(est.boot) == ctx.n_boot:
            boot = np.asarray(est.boot, float)
        else:
            cm = units.reindex(view.clusters.astype(str)).to_numpy(float)
            boot = view.boot_mean_of_cluster_means(cm)
        return Read(est, boot, units, "clusters")
    if est.boot is not None and len(est.boot) == ctx.n_boot:
        return Read(est, np.asarray(est.boot, float))
    raise StatError(f"{name} gives no bootstrap replicates, so it cannot be compared with another reading")


# ---------------------------------------------------------------- difference and ratio


@dataclass(frozen=True)
class SignFlipEstimate(Estimate):
    """A paired difference of accuracies: p and interval from one sign-flip design (stats/signflip.py)."""

    design: SignFlip | None = field(default=None, compare=False, repr=False)

    @property
    def family(self) -> str:
        return "sign-flip"

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        if self.undefined is not None:
            return (float("nan"), float("nan"))
        assert self.design is not None, "a defined difference carries its sign-flip design"
        return self.design.interval(level)


def credit_differences(A: Read, B: Read) -> pd.DataFrame:
    """Per pair judged by both readings: d = credit_a − credit_b (1 right, ½ tied, 0 wrong) and its cluster."""
    both = pd.concat([A.units.rename("a"), B.units.rename("b"), A.clusters.rename("cluster")], axis=1,
                     join="inner").dropna(subset=["a", "b"])
    return both.assign(d=both["a"] - both["b"])


def accuracy_difference(ctx: StatContext, A: Read, B: Read, det: dict, seed_labels: tuple[str, ...]) -> Estimate:
    """difference(pairwise_accuracy, pairwise_accuracy) on the same pairs: the sign-flip test of the credit
    differences' cluster sums, its inverted interval, and their mean as the estimate (one quantity: a tied
    pair is half right in all three)."""
    from scoreaudit.stats.signflip import signflip

    t = credit_differences(A, B)
    if len(t) == 0:
        return Estimate(float("nan"), "fixed", detail=det, undefined="no pair is judged by both readings")
    g = t.groupby("cluster", sort=True)["d"]
    D, n = g.sum().to_numpy(float), g.size().to_numpy(float)
    sf = signflip(D, n, arm_rng(ctx.seed, "signflip", *seed_labels))
    d = t["d"].to_numpy(float)
    det.update({"test": sf.name, "signflip": {
        "a_better": int((d > 0).sum()), "b_better": int((d < 0).sum()), "equal": int((d == 0).sum()),
        "ties_a": int((t["a"] == 0.5).sum()), "ties_b": int((t["b"] == 0.5).sum()), "n_pairs": int(len(t)),
        "n_clusters": sf.n_clusters, "informative_clusters": sf.n_informative, "exact": sf.exact,
        "flips": sf.k, "smallest_p": sf.smallest_p(),
        "p_two_sided": min(1.0, 2 * min(sf.p_greater(0.0), sf.p_less(0.0)))}})

    def p_fn(thr, side, sf=sf):
        return sf.p_greater(thr) if side == "greater" else sf.p_less(thr)

    def p_floor(thr, side, sf=sf):  # at 0 only the informative clusters count; elsewhere every cluster moves
        return sf.smallest_p() if thr == 0 else max(2.0 ** -sf.n_clusters, 1.0 / sf.k)

    return SignFlipEstimate(sf.estimate, "fixed", p_fn=p_fn, detail=det, test=sf.name, design=sf, p_floor=p_floor)


def paired_t(diffs: np.ndarray, det: dict) -> Estimate:
    """A difference of cluster-mean contrasts over the same clusters: t test *and* t interval of the
    per-cluster differences (one family, so support and refutation read the same numbers)."""
    d = diffs[np.isfinite(diffs)]
    det.update({"test": "paired t", "n_units": int(len(d))})
    if len(d) < 2:
        return Estimate(float("nan"), "fixed", detail=det, undefined="fewer than two clusters hold both readings")
    return Estimate(float(d.mean()), "ttest", contrasts=d, detail={**det, "n_clusters": int(len(d))},
                    test="paired t over clusters")


def _compare(kind: str):
    def fn(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
        ra, rb = readings_of(call)
        if ra.arm is None or rb.arm is None:  # probe readings: clusters are the probes' prompts
            from scoreaudit.stats.probes import compare

            return compare(ctx, kind, ra, rb)
        va, vb, pairing = pair_views(ctx, ra, rb)
        A, B = read(ctx, ra, va), read(ctx, rb, vb)
        level = 1 - ctx.alpha
        det = {"kind": kind, "paired": pairing.paired, "shared_clusters": pairing.shared, "pairing": pairing.how,
               "readings": [_reading_detail(r, x, level) for r, x in ((ra, A), (rb, B))], "ci_level_readings": level,
               # G of the small-sample expansion of the interval: the jointly drawn clusters when paired, the
               # readings' mean cluster count when they are resampled independently
               "n_clusters": (len(set(va.clusters.astype(str)) | set(vb.clusters.astype(str))) if pairing.paired
                              else int(round((va.n_clusters + vb.n_clusters) / 2)))}
        ea, eb = A.est.estimate, B.est.estimate
        if kind == "ratio":
            lo, hi = B.est.interval(level)
            if not (np.isfinite(lo) and np.isfinite(hi)) or ci_contains(lo, hi, 0.0):
                return Estimate(float("nan"), "bootstrap", detail=det,
                                undefined=f"the denominator's CI {numfmt.ci(lo, hi)} includes 0: the ratio is "
                                          "undefined")
            with np.errstate(invalid="ignore", divide="ignore"):
                boot = A.boot / B.boot
            det["test"] = "bootstrap"
            return Estimate(ea / eb, "bootstrap", boot=boot, detail=det)
        boot = A.boot - B.boot
        est = ea - eb
        if pairing.paired and A.kind == B.kind == "pairs" and ra.statistic.name == rb.statistic.name \
                == "pairwise_accuracy":
            return accuracy_difference(ctx, A, B, det, tuple(sorted({ra.arm, rb.arm})))
        same_units = A.units is not None and B.units is not None and A.kind == B.kind \
            and set(A.units.index) == set(B.units.index)
        if pairing.paired and same_units and ctx.settings.scale == "raw" and A.kind == "clusters":
            return paired_t((A.units - B.units.reindex(A.units.index)).to_numpy(float), det)
        det["test"] = "bootstrap"
        return Estimate(est, "bootstrap", boot=boot, detail=det)

    return fn


def _reading_detail(r: ReadingIR, x: Read, level: float) -> dict:
    lo, hi = x.est.interval(level)
    return {"statistic": r.statistic.name, "params": {k: v for k, v in r.statistic.params.items() if v is not None
                                                      and not isinstance(v, dict)},
            "arm": r.arm, "scorer": r.scorer, "where": [list(w) for w in r.where],
            "estimate": x.est.estimate, "ci_low": lo, "ci_high": hi}


difference = _compare("difference")
ratio = _compare("ratio")


# ---------------------------------------------------------------- group gap between strata


@dataclass(frozen=True)
class GroupSums:
    """Per-cluster sums of one view's images for two groups and for the SD (all of them (C,) arrays)."""

    sa: np.ndarray
    na: np.ndarray
    sb: np.ndarray
    nb: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    n: np.ndarray


def _group_masks(view: ArmData, column: str, a: str, b: str) -> tuple[np.ndarray, np.ndarray]:
    if column not in view.images.columns:
        raise StatError(f"arm {view.name!r} has no column {column!r}")
    ma, mb = _matches(view.images[column], str(a)), _matches(view.images[column], str(b))
    for lv, m in ((a, ma), (b, mb)):
        if not m.any():
            levels = sorted(view.images[column].dropna().map(_text).unique())
            raise StatError(f"no image of arm {view.name!r} has {column} = {lv!r} (values: {levels})")
    return ma, mb


def group_sums(view: ArmData, values: np.ndarray, ma: np.ndarray, mb: np.ndarray) -> GroupSums:
    v = np.asarray(values, float)
    ok = np.isfinite(v)
    C, codes = view.n_clusters, view.codes
    f = np.where(ok, v, 0.0)

    def bc(w):
        return np.bincount(codes, w, minlength=C).astype(float)

    return GroupSums(bc(f * ma), bc((ok & ma).astype(float)), bc(f * mb), bc((ok & mb).astype(float)),
                     bc(f), bc(f * f), bc(ok.astype(float)))


def _tot(W: np.ndarray | None, x: np.ndarray):
    return x.sum() if W is None else W @ x


def _sd_of(W: np.ndarray | None, g: GroupSums):
    """SD (ddof 1) of all the view's values, for the full sample or every replicate."""
    with np.errstate(invalid="ignore", divide="ignore"):
        n = _tot(W, g.n)
        return np.sqrt((_tot(W, g.s2) - _tot(W, g.s1) ** 2 / n) / (n - 1))


def _gap_of(W: np.ndarray | None, g: GroupSums, scale: bool, sd_from: GroupSums | None = None):
    """(mean_a − mean_b) / SD for the full sample (W None) or every replicate (rows of W)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = _tot(W, g.sa) / _tot(W, g.na) - _tot(W, g.sb) / _tot(W, g.nb)
        return gap / _sd_of(W, sd_from or g) if scale else gap


def stratum_gap(ctx: StatContext, view: ArmData, scorer: str, column: str, a: str, b: str) -> Estimate:
    """`group_gap(column, a, b)` on an arm without that factor: gap of the strata's mean original scores."""
    ma, mb = _group_masks(view, column, a, b)
    g = group_sums(view, ctx.original_scores(view, scorer), ma, mb)
    if g.na.sum() == 0 or g.nb.sum() == 0:
        raise StatError(f"group {a!r} or {b!r} of {column!r} has no scored image on {view.key}")
    scale = ctx.settings.scale == "sd"
    est = float(_gap_of(None, g, scale))
    boot = np.asarray(_gap_of(view.W, g, scale), float)
    det = {"a": a, "b": b, "by": column, "n_a": int(g.na.sum()), "n_b": int(g.nb.sum()),
           "clusters_a": int((g.na > 0).sum()), "clusters_b": int((g.nb > 0).sum()),
           "crossed": bool(((g.na > 0) & (g.nb > 0)).any())}
    return Estimate(est, "bootstrap", boot=boot, detail=det)


# ---------------------------------------------------------------- decomposition


def _beta_boot(ctx: StatContext, view: ArmData, scorer: str, via: StatCallIR) -> tuple[float, np.ndarray, dict]:
    """β of the measure in attribute_effect's within-image regression, and its replicates (view.W).

    The within transformation is per image and images are nested in clusters,
    so a replicate's coefficients solve the W-weighted sums of the clusters'
    cross-products.
    """
    from scoreaudit.stats.regression import _as_list, _design, cluster_cross_products, solve_weighted

    p = via.params
    y, X, img, grp, names = _design(ctx, view, scorer, p["operator"], p["measure"], _as_list(p.get("controlling")))
    if len(np.unique(grp)) < 2 or len(y) <= X.shape[1]:
        raise StatError(f"too few usable rows for the regression under {p['operator']!r}")
    A, v = cluster_cross_products(y, X, img, grp, view.n_clusters)
    j = names.index(p["measure"])
    beta = float(np.linalg.lstsq(A.sum(0), v.sum(0), rcond=None)[0][j])
    boot = solve_weighted(A, v, view.W)[:, j]
    return beta, boot, {"rows": int(len(y)), "regressors": names}


def decomposition(ctx: StatContext, call: StatCallIR, view: ArmData, scorer: str) -> dict:
    """Observed gap, attribute part, confound part: estimates and replicates (scaled units)."""
    gap = call.inner
    via_d = call.params.get("via")
    if gap is None or gap.name != "group_gap" or not isinstance(via_d, dict):
        raise StatError("decompose needs group_gap(...) and via: attribute_effect(...)")
    via = StatCallIR.model_validate(via_d)
    column, a, b = gap.params["factor"], str(gap.params["a"]), str(gap.params["b"])
    op_name, measure = via.params["operator"], via.params["measure"]
    op = ctx.operator(op_name)
    ma, mb = _group_masks(view, column, a, b)
    s0 = ctx.original_scores(view, scorer)
    doses, M = ctx.measure_matrix(view, op_name, measure)
    j0 = _dose_index(doses, op.identity)
    if j0 is None:
        raise StatError(f"no value of measure {measure!r} at {op_name}'s identity dose on {view.key}")
    m0 = M[:, j0]
    both = np.isfinite(s0) & np.isfinite(m0)
    for iid in view.image_ids[np.isfinite(s0) & ~np.isfinite(m0)][:1000]:
        ctx.notes.append({"arm": view.name, "image_id": str(iid),
                          "reason": f"decompose: no {measure} on the unaltered image: left out of the gap"})
    gs = group_sums(view, np.where(both, s0, np.nan), ma, mb)
    gm = group_sums(view, np.where(both, m0, np.nan), ma, mb)
    g_all = group_sums(view, s0, ma, mb)  # the SD is over every scored image, as for group_gap
    scale = ctx.settings.scale == "sd"
    # the regression's y is the raw Δ (regression._design); each replicate divides by its own SD below
    beta_raw, beta_raw_b, reg = _beta_boot(ctx, view, scorer, via)
    beta_s = beta_raw / ctx.scale(view, scorer)

    def parts(W):
        sd = _sd_of(W, g_all) if scale else 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            observed = _gap_of(W, gs, False) / sd
            mgap = _gap_of(W, gm, False)
            attribute = (beta_raw if W is None else beta_raw_b) * mgap / sd
        return observed, attribute, mgap

    obs, att, mgap = parts(None)
    obs_b, att_b, _ = parts(view.W)
    return {"observed": float(obs), "attribute": float(att), "confound": float(obs - att),
            "observed_boot": np.asarray(obs_b, float), "attribute_boot": np.asarray(att_b, float),
            "confound_boot": np.asarray(obs_b - att_b, float), "beta": beta_s, "measure_gap": float(mgap),
            "measure": measure, "operator": op_name, "by": column, "a": a, "b": b,
            "n_a": int(gs.na.sum()), "n_b": int(gs.nb.sum()), **reg}


def _decomp_detail(d: dict, level: float) -> dict:
    out = {k: v for k, v in d.items() if not k.endswith("_boot")}
    for part in ("observed", "attribute", "confound"):
        lo, hi = percentile_ci(d[f"{part}_boot"], level)
        out[f"{part}_ci"] = [float(lo), float(hi)]
    with np.errstate(invalid="ignore", divide="ignore"):
        out["share_attribute"] = d["attribute"] / d["observed"] if d["observed"] else float("nan")
        out["share_confound"] = d["confound"] / d["observed"] if d["observed"] else float("nan")
    out["ci_level"] = level
    return out


def decompose(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    view = ctx.arm(arm)
    d = decomposition(ctx, call, view, scorer)
    det = _decomp_detail(d, 1 - ctx.alpha)
    det["_parts"] = d
    return Estimate(d["attribute"], "bootstrap", boot=d["attribute_boot"], detail=det)


def share(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    inner = call.inner
    if inner is None or inner.name != "decompose":
        raise StatError("share(...) takes a decompose(...)")
    view = ctx.arm(arm)
    dec = ctx.evaluate(inner, view, scorer)
    if dec.undefined:
        raise StatError(dec.undefined)
    d = dec.detail["_parts"]
    det = {k: v for k, v in dec.detail.items() if not k.startswith("_")}
    part = call.params["part"]
    det["part"] = part
    lo, hi = det["observed_ci"]
    if not (np.isfinite(lo) and np.isfinite(hi)) or ci_contains(lo, hi, 0.0):
        return Estimate(float("nan"), "bootstrap", detail=det,
                        undefined=f"the observed gap's CI {numfmt.ci(lo, hi)} includes 0: there is no gap to share")
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = d[f"{part}_boot"] / d["observed_boot"]
    return Estimate(d[part] / d["observed"], "bootstrap", boot=boot, detail=det)


# ---------------------------------------------------------------- agreement with labels


def _labels(ctx: StatContext, view: ArmData, rows: pd.DataFrame, column: str, missing, k: int = 2) -> np.ndarray:
    """Class labels 0..k−1 of `rows` (0/1 when k = 2; NaN where missing, the sentinel, or not a class; noted)."""
    if column not in rows.columns:
        raise StatError(f"arm {view.name!r} has no label column {column!r}")
    raw = rows[column]
    num = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    txt = raw.map(lambda v: None if v is None or (isinstance(v, float) and math.isnan(v)) else _text(v).lower())
    num = np.where(np.isnan(num) & (txt == "true").to_numpy(), 1.0, num)
    num = np.where(np.isnan(num) & (txt == "false").to_numpy(), 0.0, num)
    out = num.copy()
    reasons = np.full(len(out), "", dtype=object)
    if missing is not None:
        sentinel = _matches(raw, _text(missing))
        out[sentinel] = np.nan
        reasons[sentinel] = f"label {column} is the missing value {_text(missing)}"
    blank = txt.isna().to_numpy() | (txt == "").to_numpy()
    out[blank] = np.nan
    reasons[blank & (reasons == "")] = f"label {column} is missing"
    classes = "0 or 1" if k == 2 else f"a class 0..{k - 1}"
    bad = np.isfinite(out) & ~np.isin(out, np.arange(k, dtype=float))
    out[bad] = np.nan
    reasons[bad] = f"label {column} is not {classes}"
    odd = ~np.isfinite(out) & (reasons == "")
    reasons[odd] = f"label {column} is not {classes}"
    ids = rows["image_id"].to_numpy() if "image_id" in rows.columns else rows.index.to_numpy()
    for iid, why in zip(ids[~np.isfinite(out)][:1000], reasons[~np.isfinite(out)][:1000]):
        ctx.notes.append({"arm": view.name, "image_id": str(iid), "reason": f"agreement: {why}: excluded"})
    return out


def auroc_weighted(score: np.ndarray, label: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Mann–Whitney AUROC for every row of `weights` (B × n): P(score_pos > score_neg) + ½ P(tie)."""
    order = np.argsort(score, kind="stable")
    s, y = score[order], label[order]
    w = weights[:, order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    pos = np.add.reduceat(w * (y == 1), starts, axis=1)
    neg = np.add.reduceat(w * (y == 0), starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    with np.errstate(invalid="ignore", divide="ignore"):
        return (pos * (below + 0.5 * neg)).sum(1) / (pos.sum(1) * neg.sum(1))


def _accuracy(M: np.ndarray, weights=None) -> np.ndarray:
    """Share of rows whose call equals the label: trace / n of each confusion matrix (…, K, K)."""
    return np.trace(M, axis1=-2, axis2=-1) / M.sum(axis=(-2, -1))


def _f1(M: np.ndarray, weights=None) -> np.ndarray:
    """F1 of the positive class 1 (two classes): 2·tp / (2·tp + fp + fn)."""
    tp, fp, fn = M[..., 1, 1], M[..., 1, 0], M[..., 0, 1]
    return 2 * tp / (2 * tp + fp + fn)


def _kappa(M: np.ndarray, weights: str | None = None) -> np.ndarray:
    """Cohen's kappa, unweighted or with linear / quadratic disagreement weights (scikit-learn's formula):
    1 − Σ w·O / Σ w·E, E the product of the call and label margins over n."""
    K = M.shape[-1]
    i, j = np.indices((K, K))
    w = {None: (i != j).astype(float), "linear": np.abs(i - j).astype(float), "quadratic": (i - j) ** 2.0}[weights]
    n = M.sum(axis=(-2, -1))[..., None, None]
    E = M.sum(axis=-1)[..., :, None] * M.sum(axis=-2)[..., None, :] / n
    return 1.0 - (w * M).sum(axis=(-2, -1)) / (w * E).sum(axis=(-2, -1))


# metric name -> function of confusion matrices (…, K, K) with M[…, call, label]
TABLE_METRICS = {"accuracy": _accuracy, "f1": _f1, "kappa": _kappa}


def _calls(view_source: str, score: np.ndarray, threshold) -> tuple[np.ndarray, int, str]:
    """(call per row or NaN where it makes none, K classes, what the call is) for the arm's kind.

    Pairs: 1 when the preferred side scores higher, 0 when lower, none on a tie. Images: the score's class
    under the declared cut points (`threshold: t` → 1 when score ≥ t; `threshold: [t1, …]` → the number of
    cut points at or below the score, classes 0..K−1 in the labels' order)."""
    if view_source == "pairs":
        return np.where(score > 0, 1.0, np.where(score < 0, 0.0, np.nan)), 2, "which side scores higher"
    cuts = np.sort(np.atleast_1d(np.asarray(threshold, dtype=float)))
    cls = np.searchsorted(cuts, score, side="right").astype(float)
    return np.where(np.isfinite(score), cls, np.nan), len(cuts) + 1, f"score ≥ {', '.join(f'{c:g}' for c in cuts)}"


def agreement(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    view = ctx.arm(arm)
    p = call.params
    column, metric = p["label"], p.get("metric", "accuracy")
    source = ctx.ir.arms[view.name].source
    threshold = p.get("threshold")
    if source != "pairs" and metric != "auroc" and threshold is None:
        raise StatError(f"agreement(metric: {metric}) on the images arm {view.name!r} needs `threshold:` (the "
                        "score's cut point that makes the call); or use metric: auroc")
    k = 2 if source == "pairs" or metric == "auroc" else len(np.atleast_1d(threshold)) + 1
    if metric in ("f1", "auroc") and k != 2:
        raise StatError(f"agreement(metric: {metric}) needs two classes (one threshold), not {k}")
    if source == "pairs":
        t = pair_table(ctx, view, scorer)
        pref = view.images[view.images["side"] == "preferred"]
        rows = pref.set_index(pref["pair_id"].astype(str)).loc[t.index]
        label = _labels(ctx, view, rows, column, p.get("missing"))
        score = (t["preferred"] - t["other"]).to_numpy(float)
        unit_ids = rows["image_id"].to_numpy()
        cidx = t["cidx"].to_numpy()
    else:
        rows = view.images
        label = _labels(ctx, view, rows, column, p.get("missing"), k)
        score = ctx.original_scores(view, scorer)
        unit_ids = rows["image_id"].to_numpy()
        cidx = view.codes
    usable = np.isfinite(label) & np.isfinite(score)
    det = {"label": column, "metric": metric, "n_rows": int(len(label)),
           "excluded_label": int((~np.isfinite(label)).sum()), "excluded_score": int(
               (np.isfinite(label) & ~np.isfinite(score)).sum())}
    for iid in unit_ids[np.isfinite(label) & ~np.isfinite(score)][:1000]:
        ctx.notes.append({"arm": view.name, "image_id": str(iid), "reason": f"agreement: no score from {scorer}: "
                                                                             "excluded"})
    C = view.n_clusters
    if metric == "auroc":
        keep = usable
        s, y, c = score[keep], label[keep], cidx[keep]
        if len(np.unique(y)) < 2:
            raise StatError(f"agreement(metric: auroc) needs both labels 0 and 1 among the usable rows of {view.key}")
        est = float(auroc_weighted(s, y, np.ones((1, len(s))))[0])
        boot = np.concatenate([auroc_weighted(s, y, view.W[k:k + 256][:, c]) for k in range(0, len(view.W), 256)])
        det["n"] = int(keep.sum())
    else:
        call_, k, made = _calls(source, score, threshold)
        det.update({"call": made, "classes": k})
        if p.get("weights"):
            det["weights"] = p["weights"]
        ties = usable & ~np.isfinite(call_)
        for iid in unit_ids[ties][:1000]:
            ctx.notes.append({"arm": view.name, "image_id": str(iid),
                              "reason": f"agreement: {scorer} scores both sides alike (no call): excluded"})
        keep = usable & np.isfinite(call_)
        det["excluded_ties"] = int(ties.sum())
        y, h, c = label[keep].astype(int), call_[keep].astype(int), cidx[keep]
        if len(y) == 0:
            raise StatError(f"agreement: no row of {view.key} has both a label and a call")
        # per-cluster confusion matrices, (C, K, K) with [call, label]; a replicate's is W @ them
        per = np.zeros((C, k, k))
        np.add.at(per, (c, h, y), 1.0)
        fn = TABLE_METRICS[metric]
        with np.errstate(invalid="ignore", divide="ignore"):
            est = float(fn(per.sum(0), p.get("weights")))
            boot = np.asarray(fn((view.W @ per.reshape(C, k * k)).reshape(-1, k, k), p.get("weights")), float)
        det["n"] = int(keep.sum())
        tot = per.sum(0)
        if k == 2:
            det["table"] = {"call1_label1": int(tot[1, 1]), "call1_label0": int(tot[1, 0]),
                            "call0_label1": int(tot[0, 1]), "call0_label0": int(tot[0, 0])}
        else:
            det["table"] = tot.astype(int).tolist()
    if not np.isfinite(est):
        raise StatError(f"agreement(metric: {metric}) is not defined on these labels (e.g. no positive label)")
    det["n_clusters"] = int(len(np.unique(c)))  # G of the small-sample expansion, as every bootstrap statistic's
    perfect = _perfect_agreement(metric, est, boot, "pair" if source == "pairs" else "image")
    if perfect is not None:
        return Estimate(float("nan"), "fixed", undefined=perfect, detail=det)
    return Estimate(est, "bootstrap", boot=boot, detail=det)


def _perfect_agreement(metric: str, est: float, boot: np.ndarray, unit: str) -> str | None:
    """Why a perfect (or perfectly wrong) agreement is inconclusive, in words; None otherwise.

    Every resample of a perfectly separated sample is perfectly separated, so the cluster bootstrap gives
    the estimate B times: no interval, no test. The degeneracy guard would say only that; this says what
    the data show (the value, and why it stops the bootstrap) so the sentence carries the number."""
    from scoreaudit.stats.degenerate import numerically_constant

    if est not in (0.0, 1.0) or not numerically_constant(boot):
        return None
    if metric == "auroc":
        side = "above" if est == 1.0 else "below"
        what = (f"every {unit} labelled 1 scores {side} every {unit} labelled 0 (AUROC = {est:g} on these data, "
                "perfect separation)")
    else:
        what = (f"{'every' if est == 1.0 else 'no'} call matches its label ({metric} = {est:g} on these data)")
    return (f"{what}: every bootstrap resample gives the same value, so no interval or test can be formed "
            f"from them and the cell is inconclusive; more {unit}s, some of which the score does not order "
            "perfectly, make it defined")
