"""Population heterogeneity: `homogeneous(θ, by: s, margin: δ)` (spec/methods.md).

Each stratum is a sub-arm (its images, its clusters) whose bootstrap is the
whole arm's count matrix restricted to its clusters, so stratum estimates are
joint draws and pairwise differences have a proper shared-bootstrap interval.
The omnibus test of equality follows the design:
- nested (each cluster in one stratum): Kruskal–Wallis on the per-cluster
  contrasts (one-way ANOVA with `test: anova`);
- crossed (every cluster in every stratum): Friedman blocked by cluster
  (the sign test for two strata);
- otherwise, or when the statistic has no per-cluster contrasts (a
  regression): a Wald test of the stratum differences with their joint
  bootstrap covariance, referred to F(q, G − 1).
Without a margin the claim is "the strata are equal": p is the omnibus p,
refuted when its q ≤ alpha, never supported (absence of evidence). With a
margin δ the claim is "every pairwise difference lies within ±δ", an
equivalence claim like `abs(θ) < δ`: p is the intersection–union p (the
largest pairwise TOST p), supported when its q ≤ alpha (every pairwise
(1 − 2α) interval inside [−δ, δ]); refuted when some pairwise difference's
(1 − 2α/m) interval (m pairs, Bonferroni) lies entirely outside [−δ, δ].
The omnibus test of exact equality is still reported, but it does not refute
a margin claim: a true difference of δ/2 is inside the claim and the omnibus
test would reject it with enough clusters (measured on the calibration bench:
17–36% false refutations at the margin with the omnibus rule). The largest pairwise contrast is reported with
its raw p, labelled as selected after the fact. The cell's estimate is the
spread (max − min) of the stratum estimates.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from scoreaudit.compiler.ir import StatCallIR
from scoreaudit.compiler.settings import claim_level
from scoreaudit.stats import omnibus
from scoreaudit.stats.context import ArmData, StatContext, StatError
from scoreaudit.stats.estimate import Estimate
from scoreaudit.stats.transfer import inner_call

TEST_NAMES = {"kruskal": "Kruskal–Wallis test", "anova": "one-way ANOVA", "friedman": "Friedman test",
              "sign": "sign test (Friedman with two strata)", "wald": "bootstrap Wald test, F(q, G − 1)"}


def design(a: ArmData, by: str) -> str:
    """"nested" (each cluster in one stratum), "crossed" (every cluster in every stratum) or "other"."""
    v = a.images[by]
    ok = v.notna().to_numpy()
    levels = v[ok].astype(str)
    per = levels.groupby(a.images["cluster"][ok].to_numpy()).nunique()
    n_levels = levels.nunique()
    if (per == 1).all():
        return "nested"
    if (per == n_levels).all():
        return "crossed"
    return "other"


def _root_jack(a: ArmData, sub: ArmData, est: Estimate) -> np.ndarray | None:
    """The stratum's jackknife on the root arm's clusters (unchanged where the left-out cluster is not in it)."""
    labels = est.detail.get("_clusters")
    if est.jack is None or labels is None or len(labels) != len(est.jack):
        return None
    out = np.full(a.root.n_clusters, est.estimate)
    out[np.searchsorted(a.root.clusters.astype(str), np.asarray(labels).astype(str))] = est.jack
    return out


def _wald(boots: list[np.ndarray], ests: list[float], G: int) -> tuple[float, float, int]:
    """Wald statistic/q of the differences from the first stratum, bootstrap covariance, F(q, G − 1)."""
    B = np.column_stack([b - boots[0] for b in boots[1:]])
    B = B[np.isfinite(B).all(1)]
    d = np.array([e - ests[0] for e in ests[1:]])
    q = len(d)
    if len(B) < q + 2:
        return float("nan"), float("nan"), q
    cov = np.cov(B, rowvar=False).reshape(q, q)
    w = float(d @ np.linalg.pinv(cov) @ d) / q
    return w, omnibus.f_sf(w, q, max(G - 1, 1)), q


def homogeneous(ctx: StatContext, call: StatCallIR, arm, scorer: str) -> Estimate:
    by = call.params["by"]
    test = call.params.get("test") or "auto"
    margin = call.params.get("margin")
    inner = inner_call(call)
    a = ctx.arm(arm)
    if by not in a.images.columns:
        raise StatError(f"arm {a.name!r} has no column {by!r} to stratify by")
    level = 1 - ctx.alpha
    pooled = ctx.evaluate(inner, a, scorer)
    if pooled.undefined:
        raise StatError(pooled.undefined)
    strata, skipped = [], []
    values = a.images[by]
    blank = values.isna().to_numpy() | (values.astype(str).str.strip() == "").to_numpy()
    for i in np.flatnonzero(blank)[:1000]:  # never silent: an image in no stratum is an exclusion with its reason
        ctx.notes.append({"arm": a.name, "image_id": str(a.image_ids[i]),
                          "reason": f"homogeneous(by: {by}): its '{by}' value is empty, so it is in no stratum "
                                    "and left out of the comparison"})
    values = values.where(~blank)
    for value in sorted(values.dropna().astype(str).unique()):
        sub = a.subset(f"{by}={value}", (values.astype(str) == value).to_numpy() & values.notna().to_numpy())
        est = ctx.evaluate(inner, sub, scorer)
        if est.undefined or not np.isfinite(est.estimate) or (est.boot is None and est.contrasts is None):
            skipped.append({"stratum": value, "reason": est.undefined or "no estimate"})
            continue
        ci = est.interval(level)
        strata.append({"stratum": value, "estimate": est.estimate, "ci_low": ci[0], "ci_high": ci[1],
                       "n_clusters": est.detail.get("n_clusters"), "_est": est, "_sub": sub})
    if len(strata) < 2:
        raise StatError(f"homogeneous(by: {by}) needs at least 2 strata with an estimate on {a.name!r}")
    kind = design(a, by)
    have_contrasts = all(s["_est"].contrasts is not None and len(s["_est"].contrasts) >= 2 for s in strata)
    if test == "auto":
        test = ("kruskal" if kind == "nested" else "friedman" if kind == "crossed" else "wald") \
            if have_contrasts else "wald"
    groups = [np.asarray(s["_est"].contrasts) for s in strata] if have_contrasts else []
    G = a.root.n_clusters
    stat_value = omni_p = float("nan")
    if test in ("kruskal", "anova") and have_contrasts:
        stat_value, omni_p = omnibus.f_oneway(*groups) if test == "anova" else omnibus.kruskal(*groups)
    elif test == "friedman" and have_contrasts:
        labels = [dict(zip(np.asarray(s["_est"].detail["_clusters"]).astype(str), g)) for s, g in zip(strata, groups)]
        common = sorted(set.intersection(*(set(x) for x in labels)))
        M = np.array([[x[c] for x in labels] for c in common])
        if len(strata) == 2:
            d = M[:, 0] - M[:, 1]
            n = int((d != 0).sum())
            test = "sign"
            omni_p = omnibus.sign_test(int((d > 0).sum()), n)
            stat_value = float((d > 0).sum())
        elif len(common) >= 2:
            stat_value, omni_p = omnibus.friedman(M)
    else:
        test = "wald"
        stat_value, omni_p, _ = _wald([np.asarray(s["_est"].boot, float) for s in strata],
                                      [s["estimate"] for s in strata], G)
    # pairwise differences from the shared bootstrap
    pairs = []
    m_pairs = len(strata) * (len(strata) - 1) // 2
    for s1, s2 in combinations(strata, 2):
        e1, e2 = s1["_est"], s2["_est"]
        j1, j2 = _root_jack(a, s1["_sub"], e1), _root_jack(a, s2["_sub"], e2)
        diff = Estimate(e1.estimate - e2.estimate, "bootstrap", boot=np.asarray(e1.boot) - np.asarray(e2.boot),
                        jack=(j1 - j2) if j1 is not None and j2 is not None else None, ci=ctx.settings.ci,
                        detail={"n_clusters": G})
        lo, hi = diff.interval(claim_level(ctx.alpha))
        p_raw = min(1.0, 2 * min(diff.p_greater(0.0), diff.p_less(0.0)))
        row = {"a": s1["stratum"], "b": s2["stratum"], "difference": diff.estimate, "ci_low": lo, "ci_high": hi,
               "ci_level": claim_level(ctx.alpha), "p_raw": p_raw}
        if margin:
            row["p_equivalence"] = diff.p_equivalence(-float(margin), float(margin))
            row["inside_margin"] = bool(np.isfinite(lo) and np.isfinite(hi) and -margin < lo and hi < margin)
            blo, bhi = diff.interval(1 - 2 * ctx.alpha / m_pairs) if m_pairs > 1 else (lo, hi)
            row["outside_margin"] = bool(np.isfinite(blo) and np.isfinite(bhi) and (bhi < -margin or blo > margin))
        pairs.append(row)
    largest = max(pairs, key=lambda r: abs(r["difference"]))
    ests = [s["estimate"] for s in strata]
    det = {"by": by, "design": kind, "test": test, "test_name": TEST_NAMES[test], "statistic": inner.name,
           "params": dict(inner.params), "margin": margin,
           "omnibus_statistic": stat_value, "omnibus_p": omni_p,
           "pooled": pooled.estimate, "pooled_ci": list(pooled.interval(level)), "ci_level": level,
           "strata": [{k: v for k, v in s.items() if not k.startswith("_")} for s in strata],
           "skipped": skipped, "pairs": pairs, "n_images_without_stratum": int(blank.sum()),
           "equivalent": (all(r["inside_margin"] for r in pairs) if margin else None),
           "exceeds_margin": (any(r["outside_margin"] for r in pairs) if margin else None),
           "p_equivalence": (max(r["p_equivalence"] for r in pairs) if margin else None),
           "largest_contrast": {"a": largest["a"], "b": largest["b"], "difference": largest["difference"],
                                "p": largest["p_raw"], "test": "shared cluster bootstrap, two-sided",
                                "label": "selected after the fact (post hoc), raw p"},
           "n_clusters": G}
    if not margin:
        det["note"] = "no margin: the claim can be refuted or inconclusive, never supported"
    # The spread (max − min) is a selected statistic: it gets no interval of its own (a percentile interval
    # of max − min never covers 0); the pairwise differences carry the intervals that decide the claim.
    p = det["p_equivalence"] if margin else omni_p
    return Estimate(float(max(ests) - min(ests)), "fixed", p_fixed=p, detail=det)
