"""StatContext: everything an estimator may read, with the shared bootstrap per arm.

How to write an estimator (e.g. in `stats/cross.py`); the statistic's registry
entry (plugins/statistics.py) names it, `estimator="scoreaudit.stats.cross:my_stat"`::

    from scoreaudit.stats.estimate import Estimate

    def my_stat(ctx: StatContext, call: StatCallIR, arm: str | None, scorer: str) -> Estimate:
        a = ctx.arm(arm)                        # ArmData: images, clusters, bootstrap counts
        s = ctx.original_scores(arm, scorer)    # per-image unaltered scores (aligned to a.images)
        per_image = ...                         # one number per image (NaN = not usable)
        return ctx.mean_estimate(arm, per_image, test=call.params.get("test"))

The signature is fixed: ``(ctx, call, arm, scorer) -> Estimate``; `call.params`
are the validated parameters (plain JSON values), `call.inner` the nested
statistic for wrappers. `arm` is None for cross-arm statistics (`transfers`),
which read their arms from `call.params`. Use `ctx.evaluate(inner, arm, scorer)`
to evaluate a nested statistic (results are memoised per context).

What the context gives:
- ``ctx.ir``, ``ctx.settings``, ``ctx.alpha``, ``ctx.n_boot``, ``ctx.seed``.
- ``ctx.tables``: the runtime tables as DataFrames (images, scores, measures,
  regions, exclusions), exactly as spec/bundle.md defines them.
- ``ctx.arm(name) -> ArmData``: images of the arm (``a.images``: DataFrame
  sorted by image_id, with every manifest column, plus ``cluster_idx``), the
  cluster labels ``a.clusters`` (sorted), ``a.n_clusters``, the bootstrap count
  matrix ``a.W`` (B × C, built lazily from ``SeedSequence([seed, hash(arm)])``),
  ``a.rng(purpose)`` for any other seeded draw, ``a.cluster_sums(values)``,
  ``a.subset(label, mask)`` (a sub-arm with its own derived bootstrap; used for
  strata).
- ``ctx.original_scores(arm, scorer)``: s(i, d0) per image (np.ndarray aligned
  to ``a.images``); ``ctx.scale(arm, scorer)``: the SD used by `scale: sd`
  (1.0 for `raw`).
- ``ctx.score_matrix(arm, scorer, operator)`` (images × doses, raw scores),
  ``ctx.deltas(arm, scorer, operator)`` (images × doses, scaled Δ),
  ``ctx.measure_matrix(arm, operator, name)`` (images × doses).
- ``ctx.mean_estimate(arm, per_image, test)``: the standard estimate of a mean
  over clusters of per-image contrasts (cluster means first; estimate = mean
  of cluster means; percentile CI from the arm's shared bootstrap; p from the
  t-test / Wilcoxon / bootstrap over cluster means). Most statistics are this.
- ``ctx.test_method(test)``: the p-value method for a `test:` parameter or the
  audit's `test` setting.

An ArmData can be a subset (a stratum); every helper takes the arm *name* or an
ArmData, so estimators run unchanged on strata (``homogeneous`` does this).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from scoreaudit.compiler.doses import is_dose
from scoreaudit.compiler.ir import ORIGINAL, AuditIR, StatCallIR
from scoreaudit.stats.bootstrap import LeaveOneOut, arm_rng, count_matrix, weighted_ratio
from scoreaudit.stats.estimate import Estimate, estimator_for

TABLES = ("images", "scores", "measures", "regions", "exclusions", "probe",  # probe: stats/probes.py
          "probe_prompts")  # each probe prompt's attributes, for `where` on probe readings


class StatError(Exception):
    """A statistic cannot be computed from the bundle (message says what is missing)."""


def index_clusters(imgs: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    """(images with `cluster_idx`, the sorted cluster labels it indexes): how every ArmData numbers clusters."""
    labels = imgs["cluster"].astype(str)
    clusters = np.array(sorted(labels.unique()), dtype=object)
    return imgs.assign(cluster_idx=np.searchsorted(clusters, labels.to_numpy())), clusters


@dataclass(eq=False)
class ArmData:
    """One arm (or a subset of it): its images, clusters and the shared bootstrap counts."""

    name: str
    kind: str
    images: pd.DataFrame  # sorted by image_id, index 0..n-1, with `cluster_idx`
    clusters: np.ndarray  # cluster labels (str), sorted; position = cluster_idx
    seed: int
    n_boot: int
    label: str = ""  # "" for the whole arm, e.g. "race=Asian" for a stratum
    parent: ArmData | None = None
    root_cols: np.ndarray | None = None  # positions of this arm's clusters among the root arm's
    _W: np.ndarray | None = field(default=None, repr=False)
    _sd_W: np.ndarray | None = field(default=None, repr=False)
    _subsets: dict = field(default_factory=dict, repr=False)

    @property
    def root(self) -> ArmData:
        a = self
        while a.parent is not None:
            a = a.parent
        return a

    @property
    def cols(self) -> np.ndarray:
        """Positions of this arm's clusters among the root arm's (identity for the root)."""
        return np.arange(self.n_clusters) if self.root_cols is None else self.root_cols

    @property
    def jackknife(self) -> LeaveOneOut:
        """C × C weights of the cluster jackknife: row k leaves cluster k out (never materialised)."""
        return LeaveOneOut(self.n_clusters, np.arange(self.n_clusters))

    @property
    def root_jackknife(self) -> LeaveOneOut:
        """C × C_root: row k leaves this arm's cluster k out of the root arm (for root-level terms, the SD)."""
        return LeaveOneOut(self.root.n_clusters, self.cols)

    @property
    def key(self) -> str:
        return self.name if not self.label else f"{self.name}[{self.label}]"

    @property
    def n_images(self) -> int:
        return len(self.images)

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)

    @property
    def codes(self) -> np.ndarray:
        return self.images["cluster_idx"].to_numpy()

    @property
    def image_ids(self) -> np.ndarray:
        return self.images["image_id"].to_numpy()

    @property
    def W(self) -> np.ndarray:
        """B × C bootstrap counts of the root arm, from SeedSequence([seed, hash(arm name)]).

        A subset (stratum) uses the root arm's replicates restricted to its
        clusters, so statistics of different strata and of the whole arm are
        joint draws (pairwise stratum differences, a per-replicate SD).
        """
        if self._W is None:
            if self.parent is None:
                self._W = count_matrix(arm_rng(self.seed, self.name), self.n_boot, self.n_clusters)
            else:  # the parent's draw restricted to this subset's clusters (the root's, or a view's own)
                pos = np.searchsorted(self.parent.clusters.astype(str), self.clusters.astype(str))
                self._W = self.parent.W[:, pos]
        return self._W

    @property
    def sd_W(self) -> np.ndarray:
        """B × C_root counts of the root arm's clusters drawn jointly with this arm's W (for the SD replicates).

        The root arm's own W for the root and its strata; a view resampled with
        a custom matrix (comparisons across arms, stats/comparisons.py) carries
        the root arm's columns of that same draw, so the SD of every replicate
        is computed from the clusters that replicate drew.
        """
        if self._sd_W is not None:
            return self._sd_W
        return self.parent.sd_W if self.parent is not None else self.W

    def rng(self, *purpose: str) -> np.random.Generator:
        """A seeded generator for any other random draw of this arm (selection groups, subsets)."""
        labels = (self.name,) if not self.label else (self.name, "subset", self.label)
        return arm_rng(self.seed, *labels, *purpose)

    def cluster_sums(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(sums, counts) of finite per-image values (or rows of a per-image matrix) per cluster."""
        v = np.asarray(values, dtype=float)
        ok = np.isfinite(v)
        filled = np.where(ok, v, 0.0)
        C = self.n_clusters
        if v.ndim == 1:
            return (np.bincount(self.codes, filled, minlength=C), np.bincount(self.codes, ok, minlength=C))
        sums = np.zeros((C, v.shape[1]))
        cnts = np.zeros((C, v.shape[1]))
        np.add.at(sums, self.codes, filled)
        np.add.at(cnts, self.codes, ok.astype(float))
        return sums, cnts

    def cluster_means(self, values: np.ndarray) -> np.ndarray:
        """Per-cluster means of per-image values (NaN for clusters with no finite value)."""
        s, n = self.cluster_sums(values)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, s / np.where(n > 0, n, 1), np.nan)

    def boot_mean_of_cluster_means(self, cm: np.ndarray) -> np.ndarray:
        """Replicates of the mean of (finite) cluster means; cm is (C,) or (C, k)."""
        ok = np.isfinite(cm)
        return weighted_ratio(self.W, np.where(ok, cm, 0.0), ok.astype(float))

    def subset(self, label: str, mask: np.ndarray) -> ArmData:
        """The images where `mask` holds, as an arm with its own clusters and derived bootstrap.

        Cached by label: a label must always name the same images (e.g. "race=Asian").
        """
        if label in self._subsets:
            return self._subsets[label]
        imgs, clusters = index_clusters(self.images[np.asarray(mask, dtype=bool)].reset_index(drop=True))
        root = self.root
        cols = np.searchsorted(root.clusters.astype(str), clusters.astype(str))
        sub = ArmData(self.name, self.kind, imgs, clusters, self.seed, self.n_boot,
                      label=label if not self.label else f"{self.label},{label}", parent=self, root_cols=cols)
        self._subsets[label] = sub
        return sub


class StatContext:
    """The audit, its tables, and cached per-arm views (see the module docstring)."""

    def __init__(self, ir: AuditIR, tables: Mapping[str, pd.DataFrame], seed: int | None = None,
                 n_boot: int | None = None) -> None:
        self.ir = ir
        self.settings = ir.settings
        self.seed = int(ir.settings.seed if seed is None else seed)
        self.n_boot = int(ir.settings.bootstrap if n_boot is None else n_boot)
        self.alpha = float(ir.settings.alpha)
        self.tables = {k: (tables.get(k) if tables.get(k) is not None else pd.DataFrame()) for k in TABLES}
        # external tables a statistic reads (`correlate(..., table:)`), from the bundle's inputs/ folder
        self.inputs: Mapping[str, pd.DataFrame] = dict(tables.get("_inputs") or {})
        self._arms: dict[str, ArmData] = {}
        self._cache: dict[Any, Any] = {}
        self.notes: list[dict] = []  # statistic-stage exclusions (arm, image_id, reason)

    # ------------------------------------------------------------ arms

    def arm(self, arm: str | ArmData) -> ArmData:
        if isinstance(arm, ArmData):
            return arm
        if arm not in self._arms:
            if arm not in self.ir.arms:
                raise StatError(f"arm {arm!r} is not declared in the audit")
            imgs = self.tables["images"]
            imgs = imgs[imgs["arm"] == arm] if len(imgs) else pd.DataFrame(columns=["arm", "image_id", "cluster"])
            imgs = imgs.sort_values("image_id", kind="stable").reset_index(drop=True)
            if "cluster" not in imgs or imgs["cluster"].isna().all():
                imgs = imgs.assign(cluster=imgs["image_id"])
            imgs, clusters = index_clusters(imgs.assign(cluster=imgs["cluster"].fillna(imgs["image_id"]).astype(str)))
            self._arms[arm] = ArmData(arm, self.ir.arms[arm].kind, imgs, clusters, self.seed, self.n_boot)
        return self._arms[arm]

    # ------------------------------------------------------------ scores

    def _scores(self, arm: ArmData, scorer: str) -> pd.DataFrame:
        key = ("scores", arm.name, scorer)
        if key not in self._cache:
            t = self.tables["scores"]
            self._cache[key] = t[(t["arm"] == arm.name) & (t["scorer"] == scorer)] if len(t) else t
        return self._cache[key]

    def score_matrix(self, arm: str | ArmData, scorer: str, operator: str) -> tuple[np.ndarray, np.ndarray]:
        """(doses, S) with S[i, j] = s(image i, operator, doses[j]) (NaN where missing), raw units."""
        a = self.arm(arm)
        key = ("smat", a.key, scorer, operator)
        if key not in self._cache:
            t = self._scores(a, scorer)
            t = t[t["operator"] == operator]
            self._cache[key] = _wide(t, a, "score")
        return self._cache[key]

    def original_scores(self, arm: str | ArmData, scorer: str) -> np.ndarray:
        """s(i, d0) per image: the `original` rows, else any operator's identity dose."""
        a = self.arm(arm)
        key = ("orig", a.key, scorer)
        if key not in self._cache:
            t = self._scores(a, scorer)
            rows = t[t["operator"] == ORIGINAL] if len(t) else t
            if not len(rows):
                parts = []
                for name in sorted(self.ir.operators):
                    op = self.ir.operators[name]
                    parts.append(t[(t["operator"] == name) & is_dose(t["dose"], op.identity)])
                rows = pd.concat(parts) if parts else t
            s = rows.groupby("image_id")["score"].first() if len(rows) else pd.Series(dtype=float)
            self._cache[key] = s.reindex(a.image_ids).to_numpy(dtype=float)
        return self._cache[key]

    def scale(self, arm: str | ArmData, scorer: str) -> float:
        """SD (ddof=1) over the *root* arm's images of s(i, d0) for `scale: sd`; 1.0 for raw.

        This is the point value; bootstrap replicates re-estimate it
        (`sd_weighted`), because the SD is part of the estimator.
        """
        if self.settings.scale == "raw":
            return 1.0
        root = self.arm(arm).root
        key = ("scale", root.name, scorer)
        if key not in self._cache:
            s = self.original_scores(root, scorer)
            s = s[np.isfinite(s)]
            sd = float(np.std(s, ddof=1)) if len(s) >= 2 else float("nan")
            self._cache[key] = sd if sd > 0 else float("nan")
        return self._cache[key]

    def standardised(self) -> bool:
        return self.settings.scale == "sd"

    def sd_weighted(self, arm: str | ArmData, scorer: str, weights: np.ndarray | LeaveOneOut) -> np.ndarray:
        """The root arm's original-score SD under cluster weights (rows of a B × C_root matrix).

        With the bootstrap count matrix this is the SD of each replicate's
        images (clusters drawn twice count twice); with jackknife weights, the
        SD without one cluster.
        """
        root = self.arm(arm).root
        key = ("sdparts", root.name, scorer)
        if key not in self._cache:
            s = self.original_scores(root, scorer)
            ok = np.isfinite(s)
            v = np.where(ok, s, 0.0)
            C = root.n_clusters
            centre = float(np.mean(s[ok])) if ok.any() else 0.0  # centring keeps the sums well conditioned
            v = np.where(ok, v - centre, 0.0)
            self._cache[key] = np.column_stack([np.bincount(root.codes, ok.astype(float), minlength=C),
                                                np.bincount(root.codes, v, minlength=C),
                                                np.bincount(root.codes, v * v, minlength=C)])
        memo = self._cache.get(("sdrep", root.name, scorer))
        if memo is not None and memo[0] is weights:  # the arm's own bootstrap matrix: once per (arm, scorer)
            return memo[1]
        w = weights if isinstance(weights, LeaveOneOut) else np.asarray(weights, dtype=float)
        parts = w @ self._cache[key]
        n, s1, s2 = parts[..., 0], parts[..., 1], parts[..., 2]
        with np.errstate(invalid="ignore", divide="ignore"):
            var = (s2 - s1 * s1 / n) / (n - 1)
            sd = np.sqrt(np.where(var > 0, var, np.nan))
        if isinstance(weights, np.ndarray) and weights is root.sd_W:
            self._cache[("sdrep", root.name, scorer)] = (weights, sd)
        return sd

    def sd_problem(self, arm: str | ArmData, scorer: str) -> str:
        """Why the SD that `scale: sd` divides by is undefined for this arm and scorer (0, or < 2 scores)."""
        root = self.arm(arm)
        while root.parent is not None:
            root = root.parent
        s = self.original_scores(root, scorer)
        n = int(np.isfinite(s).sum())
        if n < 2:
            return f"the SD of {scorer}'s scores on arm '{root.name}' is undefined ({n} original score(s))"
        return f"the SD of {scorer}'s scores on arm '{root.name}' is 0 (all {n} original images scored the same)"

    def scale_problem(self, arm: str | ArmData, scorer: str) -> str:
        """An image's exclusion reason when the SD is undefined (`sd_problem`)."""
        return (self.sd_problem(arm, scorer)
                + ": score changes in SD units are undefined, so the image is left out (use `scale: raw`)")

    def _sd_undefined(self, est: Estimate, arm: str | ArmData | None, scorer: str) -> Estimate:
        """A statistic in SD units whose SD is 0 or undefined: the cell is undefined and says so
        (not a bare NaN, nor "missing score"): every estimator that divides by the SD records it
        in `detail["sd"]`, so this one check covers them all."""
        detail = est.detail if isinstance(est.detail, Mapping) else {}
        sd = detail.get("sd", 1.0)
        if est.undefined is not None or arm is None or not isinstance(sd, float) or np.isfinite(sd):
            return est
        try:
            why = self.sd_problem(arm, scorer)
        except (KeyError, ValueError, StatError):  # not a scorer with original scores on this arm
            return est
        from dataclasses import replace

        return replace(est, estimate=float("nan"),
                       undefined=f"{why}: a score change in SD units is undefined (use `scale: raw`, "
                                 f"or check why {scorer} gives every image the same score)")

    def value_scale(self, call: StatCallIR, arm: str | ArmData | None, scorer: str) -> float:
        """The typical size of a statistic's values, against which a spread counts as numerically zero:
        the SD of the scorer's original scores for a statistic in raw score units, else 1 (SD units,
        shares, ranks, correlations)."""
        from scoreaudit import registry

        registry.load_plugins()
        entry = registry.statistics.get(call.name) if call.name in registry.statistics else None
        if entry is None or entry.meta.get("unit") != "sd" or self.standardised() or arm is None:
            return 1.0
        try:
            s = self.original_scores(self.arm(arm).root, scorer)
        except (KeyError, ValueError, StatError):
            return 1.0
        s = s[np.isfinite(s)]
        sd = float(np.std(s, ddof=1)) if len(s) >= 2 else 0.0
        return sd if sd > 0 else 1.0

    def _degenerate(self, est: Estimate, call: StatCallIR, arm: str | ArmData | None, scorer: str) -> Estimate:
        """A cell whose inputs are degenerate is undefined with the reason (stats/degenerate.py): one
        check for every statistic, so none prints a number its sentence would call undefined."""
        from scoreaudit.stats.degenerate import degeneracy

        why = degeneracy(est, self.value_scale(call, arm, scorer))
        if why is None:
            return est
        from dataclasses import replace

        return replace(est, estimate=float("nan"), undefined=f"{call.name}: {why}")

    def deltas(self, arm: str | ArmData, scorer: str, operator: str,
               scaled: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(doses, Δ) with Δ[i, j] = s(i, o, d_j) − s(i, o, d0), images × doses; divided by the
        point SD when `scaled` (for display; estimators pass raw Δ to `mean_estimate`)."""
        a = self.arm(arm)
        key = ("delta", a.key, scorer, operator)
        if key not in self._cache:
            op = self.operator(operator)
            doses, S = self.score_matrix(a, scorer, operator)
            j0 = _dose_index(doses, op.identity)
            D = np.full_like(S, np.nan) if j0 is None else S - S[:, [j0]]
            bad = ~np.isfinite(D).all(axis=1) if D.size else np.zeros(0, bool)
            reason = (f"missing score of {scorer} under {operator} at some dose: "
                      "left out of that operator's statistics")
            if not np.isfinite(self.scale(a, scorer)):  # say why, not "missing": the unit itself is undefined
                reason = self.scale_problem(a, scorer)
            for i in np.flatnonzero(bad)[:1000]:
                self.notes.append({"arm": a.name, "image_id": str(a.image_ids[i]), "reason": reason})
            self._cache[key] = (doses, D)
        doses, D = self._cache[key]
        return (doses, D / self.scale(a, scorer)) if scaled else (doses, D)

    def measure_matrix(self, arm: str | ArmData, operator: str, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(doses, M) with M[i, j] = value of measure/covariate `name` at (image i, operator, dose j)."""
        a = self.arm(arm)
        key = ("mmat", a.key, operator, name)
        if key not in self._cache:
            t = self.tables["measures"]
            if len(t):
                t = t[(t["arm"] == a.name) & (t["operator"] == operator) & (t["name"] == name)]
            self._cache[key] = _wide(t, a, "value")
        return self._cache[key]

    def operator(self, name: str):
        if name not in self.ir.operators:
            raise StatError(f"operator {name!r} is not declared in the audit")
        return self.ir.operators[name]

    # ------------------------------------------------------------ estimates

    def test_method(self, test: str | None = None) -> str:
        return test or self.settings.test

    def mean_estimate(self, arm: str | ArmData, per_image: np.ndarray, test: str | None = None,
                      detail: Mapping[str, Any] | None = None, scorer: str | None = None) -> Estimate:
        """Mean over clusters of per-cluster means of `per_image`, with the shared bootstrap.

        `scorer` given: `per_image` is in raw score units and, under `scale:
        sd`, the estimate is divided by the SD of that scorer's original
        scores, re-estimated in every bootstrap replicate and jackknife
        subsample; such a standardised statistic is tested by the bootstrap
        (interval inversion), never by a t-test that treats the SD as known.
        """
        a = self.arm(arm)
        cm = a.cluster_means(per_image)
        ok = np.isfinite(cm)
        det = {"n_clusters": int(ok.sum()), "n_images": int(np.isfinite(per_image).sum()),
               "_clusters": a.clusters[ok]}  # labels of `contrasts` (kept out of results.json)
        det.update(detail or {})
        if ok.sum() < 2:
            return Estimate(float("nan"), "ttest", undefined=f"fewer than 2 usable clusters on {a.key}",
                            detail=det)
        est = float(np.mean(cm[ok]))
        boot = a.boot_mean_of_cluster_means(cm)
        jack = weighted_ratio(a.jackknife[ok], np.where(ok, cm, 0.0), ok.astype(float))
        method = self.test_method(test)
        if scorer is not None and self.standardised():
            sd = self.scale(a, scorer)
            sd_b = self.sd_weighted(a, scorer, a.sd_W)
            sd_j = self.sd_weighted(a, scorer, a.root_jackknife[ok])
            det["sd"] = sd
            det["scale"] = "sd (re-estimated in every bootstrap replicate)"
            if test not in (None, "bootstrap"):
                det["test_note"] = f"test: {test} ignored: a statistic in SD units is tested by the bootstrap"
            return Estimate(est / sd, "bootstrap", contrasts=cm[ok] / sd, boot=boot / sd_b, jack=jack / sd_j,
                            detail=det)
        return Estimate(est, method, contrasts=cm[ok], boot=boot, jack=jack, detail=det)  # type: ignore[arg-type]

    def evaluate(self, call: StatCallIR, arm: str | ArmData | None, scorer: str) -> Estimate:
        """Run the registered estimator of `call` (memoised per context)."""
        a_key = None if arm is None else self.arm(arm).key
        key = ("est", _call_key(call), a_key, scorer)
        if key not in self._cache:
            fn: Callable[..., Estimate] = estimator_for(call.name)  # a missing estimator raises: a bug
            try:
                est = self._sd_undefined(fn(self, call, arm, scorer).with_ci(self.settings.ci), arm, scorer)
                self._cache[key] = self._degenerate(est, call, arm, scorer)
            except StatError as e:
                self._cache[key] = Estimate(float("nan"), "fixed", undefined=str(e))
            except (KeyError, ValueError, IndexError, ZeroDivisionError, np.linalg.LinAlgError) as e:
                # data the statistic needs is missing or degenerate: the cell is undefined, the reason shown
                self._cache[key] = Estimate(float("nan"), "fixed", detail={"error": type(e).__name__},
                                            undefined=f"{call.name} could not be computed: "
                                                      f"{type(e).__name__}: {e}")
        return self._cache[key]


# ---------------------------------------------------------------- helpers


def _call_key(call: StatCallIR) -> str:
    """Memo key of a statistic call: parameters left at None (defaults) do not count."""
    params = {k: v for k, v in sorted(call.params.items()) if v is not None}
    inner = _call_key(call.inner) if call.inner is not None else None
    return json.dumps([call.name, params, inner], sort_keys=True, default=str)


def _dose_index(doses: np.ndarray, d: float) -> int | None:
    hit = np.flatnonzero(is_dose(doses, d))
    return int(hit[0]) if len(hit) else None


def _wide(t: pd.DataFrame, a: ArmData, col: str) -> tuple[np.ndarray, np.ndarray]:
    """Long (image_id, dose, col) rows → (sorted doses, images × doses matrix aligned to the arm).

    Images of the arm without rows get NaN; rows of images outside the arm are
    ignored; a duplicated (image, dose) keeps its first row.
    """
    if not len(t):
        return np.zeros(0), np.zeros((a.n_images, 0))
    doses, jd = np.unique(t["dose"].to_numpy(dtype=float), return_inverse=True)
    ids = a.image_ids.astype(str)
    order = np.argsort(ids, kind="stable")
    rows_ids = t["image_id"].to_numpy().astype(str)
    pos = np.searchsorted(ids, rows_ids, sorter=order)
    pos = np.clip(pos, 0, max(len(ids) - 1, 0))
    ii = order[pos] if len(ids) else pos
    hit = (ids[ii] == rows_ids) if len(ids) else np.zeros(len(rows_ids), bool)
    out = np.full((a.n_images, len(doses)), np.nan)
    vals = t[col].to_numpy(dtype=float)
    ii, jj, vv = ii[hit][::-1], jd[hit][::-1], vals[hit][::-1]  # reversed: the first row wins
    out[ii, jj] = vv
    return doses, out


def ci_contains(lo: float, hi: float, x: float) -> bool:
    return bool(np.isfinite(lo) and np.isfinite(hi) and lo <= x <= hi)
