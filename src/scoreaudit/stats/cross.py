"""Cross-image statistics (spec/methods.md: counterfactual, agreement, pairs, ranked sets).

Pure functions over one (scorer, arm) table of original-image scores. Each
returns an `Estimate`; the estimator wrappers that read a `StatContext` live
in `stats/cross_estimators.py`. Inference resamples clusters with the arm's
shared bootstrap count matrix `W` (B × n_clusters, stats/bootstrap.py).

Choices (also in spec/methods-choices.md):
- Marginal means are estimated marginal means: the fitted cell means averaged
  with equal weight over the levels of the other factors.
- Claims `θ > 0` on factor_effect / rank_spread use the analytic test (Wald
  on F(q, G − 1), Friedman); any other threshold uses the bootstrap-inversion
  p. group_gap uses t with G − 1 degrees of freedom.
- Correlation tests against a threshold t ≠ 0 use Fisher's z with the
  Fieller–Hartley–Pearson variances (1, 1.06, 0.437 for Pearson, Spearman,
  Kendall); t = 0 uses scipy's own test.
- Pairwise accuracy counts ties as half a win in the estimate; the exact
  binomial test drops ties (the sign-test convention).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from scoreaudit.stats.estimate import Estimate

# ---------------------------------------------------------------- helpers


def cluster_positions(clusters: pd.Series, order: Sequence[str]) -> np.ndarray:
    """Position of each row's cluster in the arm's cluster order (the bootstrap's columns)."""
    pos = {c: k for k, c in enumerate(order)}
    return clusters.map(pos).to_numpy()


def _bootstrap(fn, df: pd.DataFrame, cpos: np.ndarray, W: np.ndarray, cluster: str | None = None) -> np.ndarray:
    """Replicates of fn over the arm's shared cluster resamples (a drawn cluster brings all its rows).

    `W` is the arm's B × C count matrix (stats/bootstrap.py). A Python loop
    over replicates: these statistics refit a model or re-rank per replicate.
    When `cluster` names the cluster column, each copy of a cluster drawn twice
    gets its own label, so statistics that work within clusters (ranks) see two
    clusters, not one twice the size.
    """
    groups = {int(c): np.flatnonzero(cpos == c) for c in np.unique(cpos) if c == c}
    labels = df[cluster].astype(str).to_numpy() if cluster else None
    out = np.full(len(W), np.nan)
    for b, row in enumerate(W):
        parts = [groups[c] for c in np.flatnonzero(row).tolist() if c in groups for _ in range(int(row[c]))]
        if not parts:
            continue
        sub = df.iloc[np.concatenate(parts)]
        if labels is not None:
            copy = np.concatenate([np.full(len(p), k) for k, p in enumerate(parts)])
            sub = sub.assign(**{cluster: labels[np.concatenate(parts)] + "#" + copy.astype(str)})
        try:
            out[b] = fn(sub)
        except (ValueError, np.linalg.LinAlgError, ZeroDivisionError):
            out[b] = np.nan
    return out


def zscore_within(df: pd.DataFrame, by: str | None) -> pd.Series:
    """Scores z-scored within each prompt (or over the whole table when by is None)."""
    if by is None:
        s = df["score"]
        return (s - s.mean()) / s.std(ddof=1)
    g = df.groupby(by, sort=False)["score"]
    return (df["score"] - g.transform("mean")) / g.transform(lambda x: x.std(ddof=1))


# ---------------------------------------------------------------- counterfactual regression


def _design(df: pd.DataFrame, factors: Sequence[str], levels: dict[str, list[str]]):
    """Treatment-coded design matrix with all interactions of `factors`; column term labels."""
    n = len(df)
    cols = [np.ones(n)]
    terms: list[tuple[tuple[str, str], ...]] = [()]
    dummies = {f: {lv: (df[f].astype(str).to_numpy() == lv).astype(float) for lv in levels[f][1:]} for f in factors}
    for r in range(1, len(factors) + 1):
        for combo in itertools.combinations(factors, r):
            for lvls in itertools.product(*[levels[f][1:] for f in combo]):
                col = np.ones(n)
                for f, lv in zip(combo, lvls):
                    col = col * dummies[f][lv]
                cols.append(col)
                terms.append(tuple(zip(combo, lvls)))
    return np.column_stack(cols), terms


def ols_cluster(X: np.ndarray, y: np.ndarray, groups: np.ndarray):
    """OLS with the cluster-robust covariance statsmodels uses (CR1 small-sample factor)."""
    import statsmodels.api as sm

    res = sm.OLS(y, X).fit(cov_type="cluster", cov_kwds={"groups": groups})
    return res.params, res.cov_params(), res


def marginal_means(beta: np.ndarray, terms, factors: Sequence[str], levels: dict[str, list[str]], f: str):
    """Estimated marginal mean of each level of f (equal weights over the other factors' cells)."""
    others = [g for g in factors if g != f]
    grid = list(itertools.product(*[levels[g] for g in others])) or [()]
    rows = {}
    for lv in levels[f]:
        acc = np.zeros(len(terms))
        for cell in grid:
            setting = dict(zip(others, cell))
            setting[f] = lv
            for k, term in enumerate(terms):
                acc[k] += 1.0 if all(setting[g] == v for g, v in term) else 0.0
        rows[lv] = acc / len(grid)
    return rows  # level -> contrast vector L with mean = L @ beta


def factor_levels(df: pd.DataFrame, factors: Sequence[str]) -> dict[str, list[str]]:
    """Levels in manifest (first-appearance) order; the first is the reference."""
    return {f: list(dict.fromkeys(df[f].astype(str))) for f in factors}


WALD_F = "Wald F test of the factor's terms (cluster-robust, F(q, G − 1))"


def _at_zero(name: str):
    """`test_at` of a statistic whose own test answers `> 0` only: `name` there, else (None) the interval's
    bootstrap inversion, named by the estimate's interval family."""
    return lambda t: name if t == 0 else None


def factor_effect(df: pd.DataFrame, factor: str, model_factors: Sequence[str], cluster: str,
                  prompt: str | None, W: np.ndarray, order: Sequence[str]) -> Estimate:
    """Largest |difference| of f's marginal means of z-scored scores; Wald test of every f term."""
    df = df.assign(z=zscore_within(df, prompt)).dropna(subset=["z"])
    levels = factor_levels(df, model_factors)
    if len(levels[factor]) < 2:
        return Estimate(float("nan"), "fixed", undefined=f"factor {factor!r} has a single level")

    X, terms = _design(df, model_factors, levels)
    mm = marginal_means(None, terms, model_factors, levels, factor)
    beta, cov, _ = ols_cluster(X, df["z"].to_numpy(), df[cluster].to_numpy())
    means = {lv: float(L @ beta) for lv, L in mm.items()}
    diffs = [abs(means[a] - means[b]) for a, b in itertools.combinations(means, 2)]
    est = max(diffs)
    # Joint Wald test of every coefficient whose term involves the factor.
    k = [i for i, t in enumerate(terms) if any(g == factor for g, _ in t)]
    R = np.zeros((len(k), len(beta)))
    for r, i in enumerate(k):
        R[r, i] = 1.0
    from scipy import stats

    rb = R @ beta
    w = float(rb @ np.linalg.pinv(R @ cov @ R.T) @ rb)
    G = int(df[cluster].nunique())
    # F(q, G − 1), not χ²(q): with few clusters χ² is anti-conservative (statsmodels' use_t for clusters)
    p_wald = float(stats.f.sf(w / len(k), len(k), max(G - 1, 1)))

    def stat(sub):  # point estimate only: plain least squares is enough per replicate
        Xb, _ = _design(sub, model_factors, levels)
        bb = np.linalg.lstsq(Xb, sub["z"].to_numpy(), rcond=None)[0]
        m = [float(L @ bb) for L in mm.values()]
        return max(abs(a - b) for a, b in itertools.combinations(m, 2))

    boot = _bootstrap(stat, df, cluster_positions(df[cluster].astype(str), order), W)

    def p_fn(t, side):
        return p_wald if (side == "greater" and t == 0) else None

    return Estimate(est, "bootstrap", boot=boot, p_fn=p_fn, test_at=_at_zero(WALD_F),
                    detail={"marginal_means": means, "wald_chi2": w, "wald_f": w / len(k), "wald_df": len(k),
                            "wald_df_denom": max(G - 1, 1), "wald_p": p_wald, "n_clusters": G})


def group_gap(df: pd.DataFrame, factor: str, a: str, b: str, model_factors: Sequence[str], cluster: str,
              prompt: str | None) -> Estimate:
    """Difference of two marginal means (a − b), cluster-robust Wald SE."""
    df = df.assign(z=zscore_within(df, prompt)).dropna(subset=["z"])
    levels = factor_levels(df, model_factors)
    for lv in (a, b):
        if lv not in levels[factor]:
            return Estimate(float("nan"), "fixed",
                            undefined=f"level {lv!r} of {factor!r} not in the data (levels: {levels[factor]})")
    X, terms = _design(df, model_factors, levels)
    beta, cov, _ = ols_cluster(X, df["z"].to_numpy(), df[cluster].to_numpy())
    mm = marginal_means(beta, terms, model_factors, levels, factor)
    L = mm[a] - mm[b]
    est = float(L @ beta)
    se = float(math.sqrt(L @ cov @ L))
    G = int(df[cluster].nunique())
    # t with G − 1 degrees of freedom (cluster-robust SE), not the normal
    return Estimate(est, "normal", se=se, df=float(max(G - 1, 1)), detail={"a": a, "b": b, "n_clusters": G})


# ---------------------------------------------------------------- ranking


def mean_ranks(df: pd.DataFrame, factor: str, cluster: str) -> tuple[dict[str, float], pd.DataFrame]:
    """Average within-cluster rank (1 = highest score) of each level, and the per-cluster table.

    Tied scores get their average rank: the expected rank over uniformly
    random orders of the tied images, so no id or row order enters.
    """
    r = df.assign(rank=df.groupby(cluster)["score"].rank(ascending=False, method="average"))
    per = r.groupby([cluster, factor])["rank"].mean().unstack(factor)
    return per.mean(axis=0).to_dict(), per


def rankable(df: pd.DataFrame, cluster: str) -> tuple[pd.DataFrame, dict]:
    """The clusters a within-cluster ranking can use (two or more scored images), and a detail naming
    the others: a cluster of one image ranks it first whatever it scores, which carries no information."""
    size = df.groupby(cluster)["score"].transform("size")
    single = sorted(df.loc[size < 2, cluster].astype(str).unique())
    kept = df[size >= 2]
    tied = kept.groupby(cluster)["score"].agg(lambda x: x.duplicated().any())
    det = {"n_dropped": len(single), "dropped": single[:50],
           "dropped_reason": "a cluster with a single scored image has no ranking",
           "tie_share": float(tied.mean()) if len(tied) else 0.0}
    return kept, det


def rank_spread(df: pd.DataFrame, factor: str, cluster: str, W: np.ndarray, order: Sequence[str]) -> Estimate:
    from scipy import stats

    df, kept = rankable(df, cluster)
    size = df.groupby(cluster).size()
    if len(size) < 2:
        return Estimate(float("nan"), "fixed", detail=kept,
                        undefined=f"fewer than two clusters with two or more scored images to rank ({len(size)})")
    denom = float(size.mean() - 1)

    def stat(sub):
        m, _ = mean_ranks(sub, factor, cluster)
        return (max(m.values()) - min(m.values())) / denom

    means, per = mean_ranks(df, factor, cluster)
    est = (max(means.values()) - min(means.values())) / denom
    complete = per.dropna()
    p, chi2, name = float("nan"), None, None
    if complete.shape[1] >= 3 and len(complete) >= 2:
        fr = stats.friedmanchisquare(*[complete[c].to_numpy() for c in complete.columns])
        p, chi2 = float(fr.pvalue), float(fr.statistic)
        name = "Friedman test of the within-cluster ranks"
    elif complete.shape[1] == 2 and len(complete) >= 2:
        # Friedman with two treatments is the sign test; scipy needs three groups.
        d = complete.iloc[:, 0] - complete.iloc[:, 1]
        n = int((d != 0).sum())
        p = float(stats.binomtest(int((d > 0).sum()), n, 0.5).pvalue) if n else 1.0
        name = "sign test of the two levels' within-cluster ranks (exact binomial)"
    boot = _bootstrap(stat, df, cluster_positions(df[cluster].astype(str), order), W, cluster)

    def p_fn(t, side):
        return p if (side == "greater" and t == 0) else None

    return Estimate(est, "bootstrap", boot=boot, p_fn=p_fn, test_at=_at_zero(name) if name else None,
                    detail={"mean_ranks": means, "friedman_p": p, "friedman_statistic": chi2,
                            "n_clusters": int(len(complete)), **kept})


def mean_rank(df: pd.DataFrame, factor: str, level: str, cluster: str, W: np.ndarray,
              order: Sequence[str]) -> Estimate:
    df, kept = rankable(df, cluster)
    n = int(df[cluster].nunique())
    if n < 2:
        return Estimate(float("nan"), "fixed", detail=kept,
                        undefined=f"fewer than two clusters with two or more scored images to rank ({n})")
    means, per = mean_ranks(df, factor, cluster)
    if level not in means:
        return Estimate(float("nan"), "fixed", undefined=f"level {level!r} of {factor!r} not in the data")
    boot = _bootstrap(lambda s: mean_ranks(s, factor, cluster)[0].get(level, np.nan), df,
                      cluster_positions(df[cluster].astype(str), order), W, cluster)
    return Estimate(float(means[level]), "bootstrap", boot=boot,
                    detail={"mean_ranks": means, "clusters_ranked": int(per[level].notna().sum()), **kept})


# ---------------------------------------------------------------- agreement

_FISHER_VAR = {"pearson": 1.0, "spearman": 1.06, "kendall": 0.437}
_FISHER_DF = {"pearson": 3, "spearman": 3, "kendall": 4}


class _Undefined(NamedTuple):
    statistic: float = float("nan")
    pvalue: float = float("nan")


def correlation(x: np.ndarray, y: np.ndarray, method: str):
    """scipy's correlation test; a constant (or numerically constant) side gives NaN without calling scipy,
    whose ConstantInputWarning would otherwise reach the terminal (a bootstrap resample that draws one
    value several times is constant; the cell's own degeneracy is reported by stats/degenerate.py)."""
    from scipy import stats

    from scoreaudit.stats.degenerate import numerically_constant

    if len(x) < 2 or numerically_constant(x) or numerically_constant(y):
        return _Undefined()
    fn = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}[method]
    return fn(x, y)


def agreement(df: pd.DataFrame, column: str, method: str, cluster: str, W: np.ndarray,
              order: Sequence[str]) -> Estimate:
    """Correlation between score and a manifest column; cluster-bootstrap CI; the test's own p."""
    d = df[["score", column, cluster]].copy()
    d[column] = pd.to_numeric(d[column], errors="coerce")
    d = d.dropna()
    n = len(d)
    if n < 3:
        return Estimate(float("nan"), "fixed", undefined=f"fewer than 3 images with a numeric {column!r}")
    x, y = d["score"].to_numpy(float), d[column].to_numpy(float)
    r = float(correlation(x, y, method).statistic)
    boot = _bootstrap(lambda s: correlation(s["score"].to_numpy(float), s[column].to_numpy(float), method).statistic,
                      d, cluster_positions(d[cluster].astype(str), order), W)

    def p_fn(t, side):
        if t == 0:
            return float(_one_sided_corr(x, y, method, side))
        from scipy import stats

        k = _FISHER_DF[method]
        if n <= k or abs(t) >= 1:
            return float("nan")
        z = (math.atanh(max(min(r, 0.999999), -0.999999)) - math.atanh(t)) / math.sqrt(_FISHER_VAR[method] / (n - k))
        return float(stats.norm.sf(z) if side == "greater" else stats.norm.cdf(z))

    return Estimate(r, "bootstrap", boot=boot, p_fn=p_fn,
                    detail={"n": n, "variance_explained": r * r, "method": method})


def _one_sided_corr(x, y, method, side):
    from scipy import stats

    alt = "greater" if side == "greater" else "less"
    if method == "pearson":
        return stats.pearsonr(x, y, alternative=alt).pvalue
    if method == "spearman":
        return stats.spearmanr(x, y, alternative=alt).pvalue
    return stats.kendalltau(x, y, alternative=alt).pvalue


# ---------------------------------------------------------------- pairs


def wilson(k: float, n: float, level: float = 0.95, df: float | None = None) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials: {t : |k/n − t| ≤ q·sqrt(t(1 − t)/n)}.

    q is the normal quantile, or Student's t with `df` degrees of freedom (a clustered accuracy: the
    cluster count G gives df = G − 1, like every other cluster statistic's small-sample rule). k and n
    may be fractional (ties count half; an effective n under clustering)."""
    from scipy import stats

    if not n > 0:
        return (float("nan"), float("nan"))
    z = stats.t.ppf(1 - (1 - level) / 2, df) if df else stats.norm.ppf(1 - (1 - level) / 2)
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(max(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / den
    return (centre - half, centre + half)


def wilson_score_p(p_hat: float, n: float, t: float, side: str, df: float | None = None) -> float:
    """One-sided p of the score test that the Wilson interval inverts: z = (p̂ − t)/sqrt(t(1 − t)/n).

    p(θ ≤ t) ≤ α exactly when the (1 − 2α) Wilson lower bound (same n, same quantile family) lies above t:
    (p̂ − t)/sqrt(t(1 − t)) is strictly decreasing in t on (0, 1), and the bound is where it equals q. With
    credits in {0, ½, 1} the variance of a credit of mean t is at most t(1 − t) (the {0, 1} case), so the test
    is conservative, never liberal, when pairs tie. At t = 0 or 1 the null is a point: any credit on the
    claim's side rejects it."""
    from scipy import stats

    v = t * (1.0 - t)
    if not v > 0:
        inside = p_hat > t if side == "greater" else p_hat < t
        return 0.0 if inside else 1.0
    z = (p_hat - t) / math.sqrt(v / n)
    dist = stats.t(df) if df else stats.norm
    return float(dist.sf(z) if side == "greater" else dist.cdf(z))


def pair_credit(preferred: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Per-pair credit of a scorer: 1 when the preferred side scores higher, ½ on a tie, 0 when lower."""
    return np.where(preferred > other, 1.0, np.where(preferred == other, 0.5, 0.0))


def pairwise_accuracy(preferred: np.ndarray, other: np.ndarray, clusters: np.ndarray | None = None) -> Estimate:
    """Share of pairs the scorer gets right, ties half: estimate, interval and test on the same credit.

    METHODS: "exact binomial test against 0.5 on the untied pairs; a threshold other than 0.5 is tested
    on the same credit as the estimate (ties half), never on the untied pairs alone". So:
    - t = 0.5 (no declared clusters): the exact binomial test of wins among the untied pairs. At 0.5
      it cannot disagree with the estimate in direction: (wins + ties/2)/n > ½ ⟺ wins > losses.
    - any other t: the Wilson score test on the half credit k = wins + ties/2 of n pairs, the test the
      Wilson interval inverts (`wilson_score_p`), so "p ≤ α" ⟺ "the interval's bound lies beyond t".
      The untied-only binomial would test wins/(wins + losses), a different quantity: with many ties it
      supports `> 0.6` while the estimate is below 0.6 (tests/stats_cross/test_accuracy_threshold.py).
    - declared clusters (`clusters`: one label per pair, fewer labels than pairs): per-cluster credit.
      The binomial's independent pairs do not hold, so every threshold (0.5 included) takes the Wilson
      score test and interval on the effective number of pairs n / deff, deff = max(1, Var_clusters(p̂)
      / (p̂(1 − p̂)/n)) with Var_clusters the ratio estimator's G/(G − 1)·Σ_c (C_c − p̂ n_c)²/n² (C_c the
      cluster's credit, n_c its pairs), quantiles of t(G − 1). Without clusters deff = 1.
    """
    preferred, other = np.asarray(preferred, float), np.asarray(other, float)
    ok = np.isfinite(preferred) & np.isfinite(other)
    preferred, other = preferred[ok], other[ok]
    n = len(preferred)
    if n == 0:
        return Estimate(float("nan"), "fixed", undefined="no pairs with two scores")
    credit = pair_credit(preferred, other)
    wins = int(np.sum(credit == 1.0))
    ties = int(np.sum(credit == 0.5))
    losses = n - wins - ties
    k = wins + 0.5 * ties
    acc = k / n
    det = {"n": n, "wins": wins, "ties": ties, "losses": losses, "k": k}
    labels = None if clusters is None else np.asarray(clusters, dtype=object)[ok]
    declared = labels is not None and len(set(labels)) < n
    df = None
    if declared:
        sums = pd.DataFrame({"c": labels, "credit": credit}).groupby("c", sort=True)["credit"].agg(["sum", "size"])
        G = len(sums)
        deff = 1.0
        if G >= 2 and 0.0 < acc < 1.0:
            resid = sums["sum"].to_numpy() - acc * sums["size"].to_numpy()
            v_clusters = G / (G - 1) * float(np.sum(resid**2)) / n**2
            deff = max(1.0, v_clusters / (acc * (1 - acc) / n))
        df = float(G - 1) if G >= 2 else None
        det.update({"n_clusters": G, "design_effect": deff, "n_eff": n / deff, "df": df})
    n_eff = det.get("n_eff", float(n))

    def p_fn(t, side):
        if t == 0.5 and not declared:
            from scipy import stats

            m = wins + losses
            if m == 0:
                return 1.0
            return float(stats.binomtest(wins, m, t, alternative="greater" if side == "greater" else "less").pvalue)
        return wilson_score_p(acc, n_eff, t, side, df)

    return WilsonEstimate(acc, "fixed", p_fn=p_fn, detail=det)


class WilsonEstimate(Estimate):
    """An accuracy: intervals are Wilson score intervals (ties counted half; on the effective n with t(G − 1)
    quantiles when the detail carries `n_eff` and `df`, i.e. declared clusters)."""

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        if self.undefined is not None:
            return (float("nan"), float("nan"))
        n_eff = self.detail.get("n_eff")
        if n_eff is None:
            return wilson(self.detail["k"], self.detail["n"], level)
        return wilson(self.estimate * n_eff, n_eff, level, self.detail.get("df"))


# ---------------------------------------------------------------- ranked sets


def top_k_credit(scores: np.ndarray, targets: np.ndarray, k: int) -> tuple[float, bool]:
    """(P(a target is among the k highest scores), whether the pick is tied), over uniformly random tie orders.

    Nothing about the images' ids or row order enters: images tied on the
    k-th highest score are ordered at random, so a target tied at the
    boundary is picked with the hypergeometric probability that at least one
    of the h targets among the t tied images falls in the m places the
    boundary leaves: 1 − C(t − h, m) / C(t, m) (spec/methods.md, ties).
    Every target counts as a correct pick (human-rank ties). The pick is tied
    when the boundary score is shared by images inside and outside the top k.
    """
    s = np.asarray(scores, float)
    n = len(s)
    if k >= n:
        return float(targets.any()), False
    boundary = np.sort(s)[::-1][k - 1]
    above, tied = s > boundary, s == boundary
    m, t = k - int(above.sum()), int(tied.sum())
    is_tied = t > m
    if (targets & above).any():
        return 1.0, is_tied
    h = int((targets & tied).sum())
    if h == 0:
        return 0.0, is_tied
    return 1.0 - math.comb(t - h, m) / math.comb(t, m), is_tied


def expected_binom_p(credits: np.ndarray, t: float, side: str) -> float:
    """The exact binomial p of the hits, averaged over uniformly random tie orders.

    A cluster whose credit c is fractional is a hit with probability c under a
    random tie order, independently of the others, so the number of hits is
    Poisson-binomial; its distribution (a convolution) weights the binomial
    test's p at each possible count. Integer credits give the plain test.
    """
    from scipy import stats

    c = np.asarray(credits, float)
    n = len(c)
    dist = np.zeros(n + 1)
    dist[0] = 1.0
    for ci in c:  # P(hits = x) after each cluster
        dist[1:] = dist[1:] * (1 - ci) + dist[:-1] * ci
        dist[0] *= 1 - ci
    alt = "greater" if side == "greater" else "less"
    xs = np.flatnonzero(dist > 1e-15)
    return float(sum(dist[x] * stats.binomtest(int(x), n, t, alternative=alt).pvalue for x in xs))


def ranked_recall(df: pd.DataFrame, rank_col: str, cluster: str, k: int, worst: bool) -> Estimate:
    """Share of clusters whose human-best (or worst) image is in the scorer's top (bottom) k.

    Ties never depend on ids or row order (spec/methods.md, "Ties"): every
    image tied at the human-best (worst) rank is a correct pick, and a score
    tie at the top-k boundary gives the cluster its expected credit over
    random tie orders (`top_k_credit`); the test is the exact binomial test
    averaged over the same tie orders (`expected_binom_p`). The detail counts
    the clusters with a tie of either kind (`tie_share`), and names the
    clusters left out (no usable ranking, or a single image).
    """
    credits, chance, dropped = [], [], []
    score_ties = human_ties = any_ties = 0
    for name, g in df.groupby(cluster, sort=True):
        r = pd.to_numeric(g[rank_col], errors="coerce").to_numpy(float)
        if np.isnan(r).all() or len(g) < 2:
            dropped.append(str(name))
            continue
        best = np.nanmax(r) if worst else np.nanmin(r)
        targets = r == best
        s = g["score"].to_numpy(float)
        credit, tied = top_k_credit(-s if worst else s, targets, k)
        credits.append(credit)
        n_g, h = len(g), int(targets.sum())
        chance.append(1.0 - math.comb(n_g - h, min(k, n_g)) / math.comb(n_g, min(k, n_g)))
        score_ties += tied
        human_ties += h > 1
        any_ties += tied or h > 1
    n = len(credits)
    det_drop = {"n_dropped": len(dropped), "dropped": dropped[:50],
                "dropped_reason": f"no usable {rank_col!r} ranking, or a single image"}
    if n == 0:
        return Estimate(float("nan"), "fixed", undefined=f"no cluster has a usable {rank_col!r} ranking "
                        "of two or more scored images", detail=det_drop)
    c = np.asarray(credits)
    hits = float(c.sum())

    def p_fn(t, side):
        return expected_binom_p(c, t, side)

    return WilsonEstimate(hits / n, "fixed", p_fn=p_fn,
                          detail={"n": n, "k": hits, "hits": hits, "top_k": k, "chance": float(np.mean(chance)),
                                  "tie_share": any_ties / n, "score_tied_clusters": int(score_ties),
                                  "human_tied_clusters": int(human_ties), "n_clusters": n, **det_drop})
