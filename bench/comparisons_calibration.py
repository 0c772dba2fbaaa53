"""Calibration of the comparison statistics (issue 13): CI coverage of planted truths, null rejection rates.

For each statistic, R replicate data sets are drawn from a planted model and
the statistic's 90% interval and one-sided p are computed as an audit would:

- difference of two scorers' fidelity indices on one arm (paired t, `scale: raw`)
- the same under `scale: sd` (bootstrap)
- ratio of two fidelity indices (bootstrap)
- difference of `where` strata on one arm (independent bootstraps)
- difference of pairwise accuracies on the same pairs (McNemar), under the null of equal accuracy
- agreement AUROC with a label column, truth from the planted model (closed form)
- decompose / share (confound share)

Printed per row: coverage of the planted truth by the 90% interval (nominal
0.90), and the rejection rate at alpha = 0.05 of a one-sided test of a true
null (nominal ≤ 0.05). Run:

    PYTHONPATH=src python bench/comparisons_calibration.py [--reps 200] [--boot 500]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd
from scipy.stats import norm

from scoreaudit.compiler.ir import (ORIGINAL, ArmIR, AuditIR, MeasureIR, OperatorIR, PluginCall, ReadingIR,
                                    ScorerIR, Settings, StatCallIR)
from scoreaudit.stats import comparisons, cross_estimators, dose, regression  # noqa: F401  (estimators)
from scoreaudit.stats.context import StatContext

DOSES = (-10.0, -5.0, 0.0, 5.0, 10.0)


def _ir(scale: str, n_boot: int, seed: int) -> AuditIR:
    def images(name, kind, **kw):
        return ArmIR(name=name, call=PluginCall(plugin="images", version="1", params={"folder": "x"}),
                     source="images", kind=kind, cluster="cluster", **kw)

    return AuditIR(
        settings=Settings(title="bench", seed=seed, bootstrap=n_boot, scale=scale),
        scorers={k: ScorerIR(name=k, call=PluginCall(plugin="planted", version="1")) for k in ("s1", "s2")},
        arms={"real": images("real", "real", strata=("race",)), "syn": images("syn", "synthetic"),
              "wide": ArmIR(name="wide", call=PluginCall(plugin="pairs", version="1", params={"manifest": "p"}),
                            source="pairs")},
        regions={}, measures={"ita": MeasureIR(name="ita", call=PluginCall(plugin="ita", version="1"), role="measure")},
        operators={"light": OperatorIR(name="light", call=PluginCall(plugin="lab_shift", version="1"), doses=DOSES,
                                       identity=0.0, pixel_local=True, symmetric=True)})


def _call(name, **params):
    return StatCallIR(name=name, version="1", params=params)


def _cmp(kind, a, b):
    return StatCallIR(name=kind, version="1", params={"readings": [a.model_dump(mode="json"), b.model_dump(mode="json")]})


FI = _call("fidelity_index", operator="light")
F = {"s1": 1.0, "s2": 0.5}


def dose_tables(rng, n_clusters=60, per=2):
    images, scores = [], []
    for c in range(n_clusters):
        for k in range(per):
            iid = f"r{c}_{k}"
            images.append({"arm": "real", "image_id": iid, "cluster": f"c{c}", "race": "A" if c % 2 else "B"})
            base = rng.normal()
            for s in ("s1", "s2"):
                for d in DOSES:
                    u = d / 10
                    v = base - F[s] * u * u + rng.normal(0, 0.5)
                    scores.append({"arm": "real", "image_id": iid, "operator": "light", "dose": d, "scorer": s,
                                   "score": v})
                    if d == 0:
                        scores.append({"arm": "real", "image_id": iid, "operator": ORIGINAL, "dose": 0.0,
                                       "scorer": s, "score": v})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


def pairs_tables(rng, n=200, acc=0.7, rho=0.5):
    images, scores = [], []
    cut = -norm.ppf(acc)
    for k in range(n):
        z0 = rng.normal()
        q = {s: math.sqrt(rho) * z0 + math.sqrt(1 - rho) * rng.normal() for s in ("s1", "s2")}
        label = int(z0 + rng.normal() > 0)
        for side in ("preferred", "other"):
            iid = f"p{k}:{side}"
            images.append({"arm": "wide", "image_id": iid, "cluster": f"p{k}", "side": side, "pair_id": f"p{k}",
                           "judge": label})
            for s in ("s1", "s2"):
                gap = q[s] - cut
                scores.append({"arm": "wide", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": s,
                               "score": gap / 2 if side == "preferred" else -gap / 2})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


def auroc_truth(rho=0.5, samples=400_000, seed=0):
    """P(q_pos > q_neg) for the planted pairs model, by simulation (a constant of the model)."""
    rng = np.random.default_rng(seed)
    z0 = rng.normal(size=samples)
    q = math.sqrt(rho) * z0 + math.sqrt(1 - rho) * rng.normal(size=samples)
    y = z0 + rng.normal(size=samples) > 0
    from scipy.stats import mannwhitneyu

    u = mannwhitneyu(q[y][:50_000], q[~y][:50_000]).statistic
    return u / (50_000 * 50_000)


def decomp_tables(rng, n_clusters=60, beta=0.05, gamma=-1.0):
    images, scores, measures = [], [], []
    for c in range(n_clusters):
        for k in range(2):
            tone = "dark" if k else "light"
            iid = f"y{c}_{k}"
            images.append({"arm": "syn", "image_id": iid, "cluster": f"c{c}", "tone": tone})
            m0 = (10.0 if tone == "dark" else 30.0) + rng.normal(0, 3)
            b = rng.normal(0, 0.5) + beta * m0 + (gamma if tone == "dark" else 0.0)
            for d in DOSES:
                m = m0 + 2 * d + (rng.normal(0, 0.5) if d else 0.0)
                measures.append({"arm": "syn", "image_id": iid, "operator": "light", "dose": d, "name": "ita",
                                 "value": m})
                v = b + beta * (m - m0) + (rng.normal(0, 0.1) if d else 0.0)
                scores.append({"arm": "syn", "image_id": iid, "operator": "light", "dose": d, "scorer": "s1",
                               "score": v})
                if d == 0:
                    scores.append({"arm": "syn", "image_id": iid, "operator": ORIGINAL, "dose": 0.0,
                                   "scorer": "s1", "score": v})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores), "measures": pd.DataFrame(measures)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--boot", type=int, default=500)
    args = ap.parse_args()
    rows: dict[str, dict[str, list]] = {}

    def record(name, est, truth, null=None, side="greater"):
        r = rows.setdefault(name, {"cover": [], "reject": [], "undefined": 0})
        if est.undefined:
            r["undefined"] += 1
            return
        lo, hi = est.interval(0.90)
        r["cover"].append(lo <= truth <= hi)
        if null is not None:
            p = est.p_greater(null) if side == "greater" else est.p_less(null)
            r["reject"].append(p <= 0.05)

    fi_truth = {s: 0.625 * f for s, f in F.items()}  # raw: F × mean(u²) over the positive doses
    auc = auroc_truth()
    gap_truth = 0.05 * (10 - 30) + (-1.0)
    t0 = time.perf_counter()
    for rep in range(args.reps):
        rng = np.random.default_rng([20261201, rep])
        t = dose_tables(rng)
        a, b = ReadingIR(statistic=FI, arm="real", scorer="s1"), ReadingIR(statistic=FI, arm="real", scorer="s2")
        ctx = StatContext(_ir("raw", args.boot, rep), t)
        d_truth = fi_truth["s1"] - fi_truth["s2"]
        record("difference, same arm (paired t, raw)", ctx.evaluate(_cmp("difference", a, b), None, "x"), d_truth,
               null=d_truth, side="greater")
        record("ratio of FIs (bootstrap, raw)", ctx.evaluate(_cmp("ratio", b, a), None, "x"),
               fi_truth["s2"] / fi_truth["s1"], null=fi_truth["s2"] / fi_truth["s1"], side="less")
        wa = ReadingIR(statistic=FI, arm="real", scorer="s1", where=(("race", "A"),))
        wb = ReadingIR(statistic=FI, arm="real", scorer="s1", where=(("race", "B"),))
        record("difference of where-strata (independent)", ctx.evaluate(_cmp("difference", wa, wb), None, "x"), 0.0,
               null=0.0, side="greater")
        ctx_sd = StatContext(_ir("sd", args.boot, rep), t)
        sd_truth = d_truth / math.sqrt(1 + 0.25)  # SD of original scores: sqrt(1 + noise²)
        record("difference, same arm (bootstrap, sd)", ctx_sd.evaluate(_cmp("difference", a, b), None, "x"),
               sd_truth, null=sd_truth, side="greater")
        p = pairs_tables(rng)
        ctx_p = StatContext(_ir("raw", args.boot, rep), p)
        pa = _call("pairwise_accuracy", prompt=None)
        record("accuracy difference, same pairs (McNemar, null)",
               ctx_p.evaluate(_cmp("difference", ReadingIR(statistic=pa, arm="wide", scorer="s1"),
                                   ReadingIR(statistic=pa, arm="wide", scorer="s2")), None, "x"), 0.0, null=0.0)
        record("agreement AUROC (pairs)",
               ctx_p.evaluate(_call("agreement", label="judge", metric="auroc", missing=None, prompt=None), "wide",
                              "s1"), auc, null=auc)
        dt = decomp_tables(rng)
        ctx_d = StatContext(_ir("raw", args.boot, rep), dt)
        gap = _call("group_gap", factor="tone", a="dark", b="light")
        via = _call("attribute_effect", operator="light", measure="ita", controlling=None)
        dec = StatCallIR(name="decompose", version="1", params={"gap": "group_gap", "via": via.model_dump(mode="json")},
                         inner=gap)
        record("group gap on strata", ctx_d.evaluate(gap, "syn", "s1"), gap_truth, null=gap_truth, side="less")
        record("decompose (attribute part)", ctx_d.evaluate(dec, "syn", "s1"), -1.0, null=-1.0)
        sh = StatCallIR(name="share", version="1", params={"statistic": "decompose", "part": "confound"}, inner=dec)
        record("share (confound)", ctx_d.evaluate(sh, "syn", "s1"), 0.5, null=0.5)
    secs = time.perf_counter() - t0
    print(f"{args.reps} replicates, B = {args.boot}, {secs:.0f} s")
    print(f"{'statistic':52s} {'coverage(90%)':>14s} {'reject true null':>17s} {'undefined':>10s}")
    for name, r in rows.items():
        cov = np.mean(r["cover"]) if r["cover"] else float("nan")
        rej = np.mean(r["reject"]) if r["reject"] else float("nan")
        print(f"{name:52s} {cov:14.3f} {rej:17.3f} {r['undefined']:10d}")


if __name__ == "__main__":
    main()
