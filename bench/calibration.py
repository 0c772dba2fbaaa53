"""Calibration bench: do verdicts hold their stated level? One table per statistic kind.

For every statistic kind, planted scorers (stats/planted.py) are simulated on
a small audit at three effect levels and several cluster counts, under both
scales, through the same cell pipeline as `scoreaudit run`
(stats.simulate.run_simulation). Per grid point it reports:

- coverage: share of (1 − alpha) intervals that contain the planted truth;
- null (θ = 0), claim `θ > 0`: false support (supported) and boundary
  refutation (refuted), each of which should be alpha;
- boundary (θ = δ), claim `abs(θ) < δ` (or the kind's equivalence claim):
  false support and refutation, each should be at most alpha;
- strong (θ = 3δ), claim `θ > 0`: power; and the bias of the estimate.

The bar (spec/methods.md), with the rule for Monte Carlo error stated:
- coverage: pooled over the three effect levels of each kind × scale ×
  cluster count (independent draws: every grid point has its own seed), it
  lies within 93–97% (60 replications × 4 scorers × 3 levels = 720 trials,
  Monte Carlo SE ≈ 0.8 points); and at every single point the 99.7%
  binomial band of its coverage overlaps 93–97% (no gross miscalibration
  hidden by pooling);
- boundary false support and false refutation (and, for the claim kinds,
  refutation of a true claim) within the binomial band of alpha: at most
  alpha + 3·sqrt(alpha(1 − alpha)/n) over the point's n trials.
Four planted scorers per audit are independent trials (one shared bootstrap
matrix per arm). 300 clusters get 20 replications per point (the large-sample
check; 240 pooled trials, SE ≈ 1.4 points) to keep the default grid within
15 minutes on 2 cores; grid points run in 2 worker processes (`--jobs`).

    python bench/calibration.py                # default grid (< 15 min on 2 cores)
    python bench/calibration.py --quick        # seconds; what the tests run
    python bench/calibration.py --ci percentile --kinds fidelity_index --clusters 20 50
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from scoreaudit import api  # noqa: E402
from scoreaudit.compiler.ir import AuditIR, readings_of  # noqa: E402
from scoreaudit.stats.bootstrap import stable_hash  # noqa: E402
from scoreaudit.stats.planted import ArmShape, MeasureModel  # noqa: E402
from scoreaudit.stats.simulate import run_simulation  # noqa: E402
from scoreaudit.stats.truth import TruthContext, true_value  # noqa: E402

HEAD = """audit "calibration" {{ seed: 1  alpha: 0.05  correction: none  bootstrap: {boot}  scale: {scale}  ci: {ci} }}
scorer s1 = planted()
scorer s2 = planted()
scorer s3 = planted()
scorer s4 = planted()
arm real = images("r", manifest: "r.csv", kind: real, cluster: c, strata: g)
arm syn  = images("s", manifest: "s.csv", kind: synthetic, cluster: c)
region skin = skin()
region rest = not skin
operator light = lab_shift(channel: L, region: skin) doses -15, -10, -5, 0, 5, 10, 15
"""
# declarations a kind adds only when it reads them (the planted tables then hold only what is read: speed)
OPTIONAL = {
    "measure": "measure ita = ita(region: skin)\n",
    "placebo": "placebo light_rest = lab_shift(channel: L, region: rest) of light\n",
    "blur": "operator blur = gaussian_blur(region: skin) doses 0, 1, 2, 4\n",
    "select": "select best4 = best_of 4 under light by ita\n",
    "pairs": 'arm wide = pairs("p.csv", preferred: a, other: b)\n',
}
COVERAGE_BAR = (0.93, 0.97)
DEFAULT_REPS = {300: 20}  # replications per point by cluster count (else 60): 300 clusters is slow and easy
CLAIM_KINDS = ("transfers", "homogeneous", "placebo_ratio", "ratio_strata")  # the equivalence claim is the hypothesis
NOTES = {
    "homogeneous": "The spread max − min is a selected statistic with no interval of its own, so coverage is "
                   "not measured here; the pairwise differences that decide the claim are shared-bootstrap "
                   "intervals of the same family as every other cell.",
}
NOISE = 0.5  # low scorer noise: the SD's own uncertainty matters (the hard case for scale: sd)


@dataclass(frozen=True)
class Kind:
    """A statistic kind: its expression, the planted parameter that moves it (linearly), the margin δ."""

    name: str
    expr: str
    param: str
    delta: float
    base: dict = field(default_factory=dict)  # other planted parameters
    equivalence: str = "abs({e}) < {d}"  # the boundary claim
    arm: str = "real"
    levels: tuple[str, ...] = ("null", "boundary", "strong")
    needs: tuple[str, ...] = ()  # OPTIONAL declarations the expression reads
    null: float = 0.0  # the claims' reference value: the registry's `null`, or a declared threshold where it has
    # none (kappa: `> 0` is E0424, the planted "null" level is then the truth at that threshold)
    rep_factor: int = 1  # kinds with one level get 3× the replications (the same 720 pooled trials)
    shape: dict = field(default_factory=dict)  # ArmShape overrides of the kind's arm (images per cluster, strata)
    scorer_pairs: bool = False  # a comparison of two scorers: cells s1 vs s2 and s3 vs s4 ({a}, {b} in expr)


KINDS = {
    "fidelity_index": Kind("fidelity_index", "fidelity_index(light)", "fidelity", 0.1),
    "penalty_index": Kind("penalty_index", "fidelity_index(blur)", "fidelity", 0.1, needs=("blur",)),
    "asymmetry": Kind("asymmetry", "asymmetry(light)", "asymmetry", 0.1),
    "curve": Kind("curve", "curve(light, 15)", "asymmetry", 0.1),
    "trend": Kind("trend", "trend(light)", "asymmetry", 0.005),
    "attribute_effect": Kind("attribute_effect", "attribute_effect(light, measure: ita)", "slope", 0.02,
                             {"slope_by": "ita"}, needs=("measure",)),
    "net_drift": Kind("net_drift", "net_drift(best4)", "asymmetry", 1.0, levels=("null",),
                      needs=("measure", "select"), rep_factor=3),
    "directional_drift": Kind("directional_drift", "directional_drift(best4)", "fidelity", 1.0, levels=("null",),
                              needs=("measure", "select"), rep_factor=3),
    "placebo_ratio": Kind("placebo_ratio", "placebo_ratio(light, light_rest)", "placebo", 2.0,
                          {"fidelity": 1.0}, equivalence="{e} within [0.5, {d}]", needs=("placebo",)),
    "transfers": Kind("transfers", "transfers(asymmetry(light), from: syn, to: real)", "asymmetry", 2.0),
    "homogeneous": Kind("homogeneous", "homogeneous(fidelity_index(light), by: g, margin: {d})", "fidelity", 0.1,
                        {"fidelity": 0.5}),
    # comparisons between readings (language forms; truths: difference / ratio of the readings' truths)
    "difference_paired": Kind("difference_paired", "difference(fidelity_index(light), fidelity_index(blur))",
                              "fidelity", 0.05, needs=("blur",)),
    "difference_strata": Kind("difference_strata",
                              'difference(fidelity_index(light) where g = "b", fidelity_index(light) where g = "a")',
                              "fidelity", 0.1, {"fidelity": 0.5}),
    "ratio_strata": Kind("ratio_strata",
                         'ratio(fidelity_index(light) where g = "b", fidelity_index(light) where g = "a")',
                         "fidelity", 2.0, {"fidelity": 1.0}, equivalence="{e} within [0.5, {d}]"),
    # pairs arms (planted: preferred = b + G + ε, other = b' + ε; one cluster per pair)
    "pairwise_accuracy": Kind("pairwise_accuracy", "pairwise_accuracy()", "gap", 0.05, arm="wide",
                              needs=("pairs",), null=0.5, equivalence="{e} within [{lo}, {hi}]"),
    "mean_gap": Kind("mean_gap", "mean_gap()", "gap", 0.2, arm="wide", needs=("pairs",)),
    # agreement with a judge's 0/1 label on an images arm (planted: the label y is a stratum column, "0"/"1"
    # uniformly, and the score is b + E·[y = 1] + ε; truths stats/truth.py:agreement)
    "agreement_auroc": Kind("agreement_auroc", "agreement(label: y, metric: auroc)", "effect", 0.05,
                            {"factor": "y", "level": "1"}, null=0.5, equivalence="{e} within [{lo}, {hi}]",
                            shape={"strata": {"g": ("a", "b"), "y": ("0", "1")}}),
    # kappa has no registry null (metric-dependent; `> 0` is E0424): the claim is `kappa > 0.3`, truth 0.3 at "null";
    # the cut point 1 (≈ 0.9 score SD) lets kappa reach 0.81, so the strong level 0.6 exists (at 0 it tops at 0.5)
    "agreement_kappa": Kind("agreement_kappa", "agreement(label: y, metric: kappa, threshold: 1)", "effect", 0.1,
                            {"factor": "y", "level": "1"}, null=0.3, equivalence="{e} within [{lo}, {hi}]",
                            shape={"strata": {"g": ("a", "b"), "y": ("0", "1")}}),
    # two scorers' accuracies on the same pairs with discrete scores (rounded to whole units: ~22% of pairs tie
    # within a scorer): the sign-flip test of per-pair credit differences, ties half (planted: s2, s4 at gap
    # BASE_GAP, s1, s3 at the gap that puts the difference at 0, δ, 3δ)
    "accuracy_difference_ties": Kind("accuracy_difference_ties",
                                     "difference(pairwise_accuracy() for {a}, pairwise_accuracy() for {b})", "gap",
                                     0.05, {"step": 1.0}, arm="wide", needs=("pairs",), scorer_pairs=True,
                                     rep_factor=2),
    # correlation with a rating column, 4 images per cluster sharing half the rating's variance (planted:
    # h = sqrt(½)·a_cluster + sqrt(½)·e_image, score b + R·h + ε; r = R / sqrt(1 + noise² + R²))
    "spearman_clusters": Kind("spearman_clusters", "spearman(score, column: h)", "rating", 0.1, {"rated_by": "h"},
                              shape={"per_cluster": 4}),
    "pearson_clusters": Kind("pearson_clusters", "pearson(score, column: h)", "rating", 0.1, {"rated_by": "h"},
                             shape={"per_cluster": 4}),
}
BASE_GAP = 1.0  # accuracy_difference_ties: the reference scorers' planted gap (accuracy 0.72 with ties half)
SCORER_PAIRS = (("s1", "s2"), ("s3", "s4"))


def _spec(kind: Kind, scale: str, ci: str, boot: int) -> AuditIR:
    e = kind.expr.replace("{d}", f"{kind.delta:g}")
    if kind.scorer_pairs:  # one cell per pair of scorers, no `for each scorer`
        cells = [e.format(a=a, b=b) for a, b in SCORER_PAIRS]
        hyps = (f'hypothesis P "p" {{\n' + "".join(f"  {c} > {kind.null:g} on {kind.arm}\n" for c in cells) + "}\n"
                + f'hypothesis E "e" {{\n'
                + "".join(f"  {kind.equivalence.format(e=c, d=f'{kind.delta:g}')} on {kind.arm}\n" for c in cells)
                + "}\n")
    elif kind.name in ("transfers", "homogeneous"):
        on = f" on {kind.arm}" if kind.name == "homogeneous" else ""
        hyps = f'hypothesis E "e" {{\n  {e}{on} for each scorer\n}}\n'
    elif kind.name in ("placebo_ratio", "ratio_strata"):  # null value 1: only the equivalence claim is meaningful
        hyps = f'hypothesis E "e" {{\n  {kind.equivalence.format(e=e, d=f"{kind.delta:g}")} on {kind.arm} for each scorer\n}}\n'
    else:
        eq = kind.equivalence.format(e=e, d=f"{kind.delta:g}", lo=f"{kind.null - kind.delta:g}",
                                     hi=f"{kind.null + kind.delta:g}")
        hyps = (f'hypothesis P "p" {{\n  {e} > {kind.null:g} on {kind.arm} for each scorer\n}}\n'
                f'hypothesis E "e" {{\n  {eq} on {kind.arm} for each scorer\n}}\n')
    src = HEAD.format(boot=boot, scale=scale, ci=ci) + "".join(OPTIONAL[k] for k in OPTIONAL if k in kind.needs) + hyps
    checked = api.check("calibration.audit", source=src)
    if not checked.ok:
        raise SystemExit("\n".join(d.message for d in checked.diagnostics))
    return checked.ir


def _truth_for_level(ir: AuditIR, kind: Kind, level: str, scale: str) -> dict:
    """Planted parameters that put the statistic at 0 (null), δ (boundary) or 3δ (strong)."""
    base = {"noise": NOISE, **kind.base}
    if kind.name == "placebo_ratio":  # ratio 1/P: 1 (null: inside), δ (boundary), 4 (strong: outside)
        return {"*": {**base, "placebo": {"null": 1.0, "boundary": 1 / kind.delta, "strong": 0.25}[level]}}
    if kind.name == "transfers":  # ρ = θ_real / θ_syn: 1 (null), δ (boundary), 4 (strong)
        rho = {"null": 1.0, "boundary": kind.delta, "strong": 4.0}[level]
        return {"*": {**base, "asymmetry": 0.3, "arms": {"real": {"asymmetry": 0.3 * rho}}}}
    if kind.name == "ratio_strata":  # FI(g=b) / FI(g=a): 1 (null: inside), δ (boundary), 4 (strong: outside)
        rho = {"null": 1.0, "boundary": kind.delta, "strong": 4.0}[level]
        return {"*": {**base, "strata": {"g=b": {"fidelity": base["fidelity"] * rho}}}}
    if kind.name in ("homogeneous", "difference_strata"):  # stratum b − stratum a: 0, δ, 3δ
        cell = next(c for c in ir.cells() if c.hypothesis == "E").statistic
        call = cell.inner if cell.inner is not None else readings_of(cell)[0].statistic
        unit = true_value(ir, call, TruthContext({"*": {"noise": NOISE, "fidelity": 1.0}}, "s1", "real",
                                                 raw=scale == "raw"))
        diff = {"null": 0.0, "boundary": kind.delta, "strong": 3 * kind.delta}[level] / unit
        return {"*": {**base, "strata": {"g=b": {"fidelity": base["fidelity"] + diff}}}}
    offset = {"null": 0.0, "boundary": kind.delta, "strong": 3 * kind.delta}[level]
    if kind.scorer_pairs:  # s2, s4 at BASE_GAP; s1, s3 at the gap whose accuracy is `offset` above theirs
        return _scorer_pair_truth(ir, kind, base, offset, scale)
    call = next(c for c in ir.cells() if c.hypothesis == "P").statistic

    def truth_at(x: float) -> float:
        return true_value(ir, call, TruthContext({"*": {**base, kind.param: x}}, "s1", kind.arm,
                                                 raw=scale == "raw")) - (kind.null + offset)

    if offset == 0.0:  # the parameter's zero is the null level, unless the claim's threshold is elsewhere (kappa)
        at0 = true_value(ir, call, TruthContext({"*": {**base, kind.param: 0.0}}, "s1", kind.arm, raw=scale == "raw"))
        if at0 is None or abs(at0 - kind.null) < 1e-12:
            return {"*": dict(base)}

    hi = 1.0
    while truth_at(hi) < 0:  # the truth rises with the parameter (linearly for most kinds)
        hi *= 2
        if hi > 1e6:
            raise SystemExit(f"{kind.name}: no planted {kind.param} reaches the {level} level {kind.null + offset:g}")
    from scipy.optimize import brentq

    return {"*": {**base, kind.param: brentq(truth_at, 0.0, hi, xtol=1e-12)}}


def _scorer_pair_truth(ir: AuditIR, kind: Kind, base: dict, offset: float, scale: str) -> dict:
    from scipy.optimize import brentq

    call = next(c for c in ir.cells() if c.hypothesis == "P").statistic
    ref = {**base, kind.param: BASE_GAP}

    def truth_at(x: float) -> float:
        t = {"*": ref, **{a: {**base, kind.param: x} for a, _ in SCORER_PAIRS}}
        return true_value(ir, call, TruthContext(t, "s1", kind.arm, raw=scale == "raw")) - offset

    x = BASE_GAP if offset == 0.0 else brentq(truth_at, BASE_GAP, BASE_GAP + 20.0, xtol=1e-12)
    return {"*": ref, **{a: {**base, kind.param: x} for a, _ in SCORER_PAIRS}}


def _band(n: int, rate: float, z: float = 3.0) -> tuple[float, float]:
    sd = math.sqrt(rate * (1 - rate) / max(n, 1))
    return max(0.0, rate - z * sd), rate + z * sd


def _mean(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    return float(np.mean(v)) if v else None


def _point_seed(seed: int, kind: str, scale: str, clusters: int, level: str) -> int:
    """Every grid point draws its own data: levels and scales are independent trials (they can be pooled)."""
    return int(np.random.SeedSequence([seed, stable_hash(f"{kind}/{scale}/{clusters}/{level}")]).generate_state(1)[0])


def run_point(kind: Kind, scale: str, clusters: int, level: str, reps: int, boot: int, ci: str, seed: int) -> dict:
    ir = _spec(kind, scale, ci, boot)
    shapes = {"real": ArmShape(clusters, 1, {"g": ("a", "b")}),
              "syn": ArmShape(max(clusters // 2, 10), 2),
              "wide": ArmShape(clusters, 2)}  # a pairs arm: one cluster per pair
    if kind.shape:
        from dataclasses import replace

        shapes[kind.arm] = replace(shapes[kind.arm], **kind.shape)
    used = {a for c in ir.cells() for a in (c.arms or (c.arm,)) if a}
    shapes = {k: v for k, v in shapes.items() if k in used}  # only the arms the cells read (speed)
    truth = _truth_for_level(ir, kind, level, scale)
    rows = run_simulation(ir, reps, truth, shapes, n_boot=boot, model=MeasureModel(),
                          seed=_point_seed(seed, kind.name, scale, clusters, level))
    def of(h):  # a hypothesis's cells: "P/s1/real", or "P.1/s1:s2/wide" when it has several claims
        return [r for r in rows if r["cell"].split("/")[0].split(".")[0] == h]

    one, eq = of("P") or of("E"), of("E")
    cov_rows = [r for r in one if r.get("coverage") is not None]
    out = {"kind": kind.name, "scale": scale, "clusters": clusters, "level": level, "trials": reps * len(one),
           "truth": _mean(one, "truth"), "bias": _mean(one, "bias"), "coverage": _mean(cov_rows, "coverage"),
           "coverage_trials": sum(r["coverage_n"] for r in cov_rows)}
    if kind.name in CLAIM_KINDS:
        # claim-like kinds: the equivalence claim is the hypothesis at every level
        src = eq
        out["supported"], out["refuted"] = _mean(src, "supported"), _mean(src, "refuted")
    elif level == "boundary":
        out["supported"], out["refuted"] = _mean(eq, "supported"), _mean(eq, "refuted")
    else:
        out["supported"], out["refuted"] = _mean(one, "supported"), _mean(one, "refuted")
    return out


def pooled(rows: list[dict]) -> list[dict]:
    """Coverage pooled over the effect levels of each (scale, clusters): the bar's coverage estimate."""
    out = []
    keys = sorted({(r["scale"], r["clusters"]) for r in rows}, key=lambda k: (k[0] != "sd", k[1]))
    for scale, clusters in keys:
        rs = [r for r in rows if r["scale"] == scale and r["clusters"] == clusters and r["coverage"] is not None]
        n = sum(r["coverage_trials"] for r in rs)
        cov = sum(r["coverage"] * r["coverage_trials"] for r in rs) / n if n else None
        out.append({"scale": scale, "clusters": clusters, "trials": n, "coverage": cov,
                    "mc_se": math.sqrt(cov * (1 - cov) / n) if n and cov is not None else None})
    return out


def verdict(row: dict, alpha: float = 0.05) -> str:
    """Which rate bars a grid point meets: boundary false support / false refutation within the band of alpha.

    Coverage is judged on the pooled row (`coverage_verdict`), not per point.
    """
    notes = []
    n = row["trials"]
    _, hi = _band(n, alpha)
    cov, cn = row.get("coverage"), row.get("coverage_trials") or 0
    if cov is not None and cn:  # gross miscalibration at one point: its 99.7% band misses 93–97% entirely
        half = 3.0 * math.sqrt(max(cov * (1 - cov), 0.05 * 0.95) / cn)
        if cov + half < COVERAGE_BAR[0] or cov - half > COVERAGE_BAR[1]:
            notes.append("coverage")
    k = row["kind"]
    boundary = (row["level"] == "boundary") or (row["level"] == "null" and k not in CLAIM_KINDS)
    if boundary:
        if row["supported"] is not None and row["supported"] > hi:
            notes.append("false support")
        if row["refuted"] is not None and row["refuted"] > hi:
            notes.append("false refutation")
    if k in CLAIM_KINDS and row["level"] == "null" and row["refuted"] > hi:
        notes.append("false refutation")
    return "ok" if not notes else "MISSES: " + ", ".join(notes)


def coverage_verdict(p: dict) -> str:
    """The coverage bar on the coverage pooled over the effect levels: within 93–97%."""
    cov = p.get("coverage")
    if cov is None:
        return "no truth"
    return "ok" if COVERAGE_BAR[0] <= cov <= COVERAGE_BAR[1] else "MISSES: coverage"


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def _md(heads, data) -> list[str]:
    w = [max(len(h), *(len(d[i]) for d in data)) for i, h in enumerate(heads)]
    lines = ["| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(heads)) + " |",
             "|" + "|".join("-" * (x + 2) for x in w) + "|"]
    return lines + ["| " + " | ".join(d[i].ljust(w[i]) for i in range(len(heads))) + " |" for d in data]


def table(kind: str, rows: list[dict]) -> str:
    heads = ("scale", "clusters", "level", "trials", "truth", "coverage", "supported", "refuted", "bias", "bar")
    data = [[_fmt(r["scale"]), _fmt(r["clusters"]), r["level"], _fmt(r["trials"]), _fmt(r["truth"]),
             _fmt(r["coverage"]), _fmt(r["supported"]), _fmt(r["refuted"]), _fmt(r["bias"]), verdict(r)]
            for r in rows]
    lines = [f"### {kind}", ""] + _md(heads, data)
    pool = pooled(rows)
    pheads = ("scale", "clusters", "pooled trials", "pooled coverage", "MC SE", "coverage bar")
    pdata = [[p["scale"], str(p["clusters"]), str(p["trials"]), _fmt(p["coverage"]), _fmt(p["mc_se"]),
              coverage_verdict(p)] for p in pool]
    note = NOTES.get(kind)
    return "\n".join(lines + [""] + _md(pheads, pdata) + ([f"\n{note}"] if note else []))


def _task(args):
    kind, scale, c, lv, reps, boot, ci, seed = args
    return run_point(KINDS[kind], scale, c, lv, reps, boot, ci, seed)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tiny grid (what the tests run)")
    ap.add_argument("--kinds", nargs="*", default=None, choices=list(KINDS))
    ap.add_argument("--clusters", nargs="*", type=int, default=None)
    ap.add_argument("--scales", nargs="*", default=None, choices=["sd", "raw"])
    ap.add_argument("--reps", type=int, default=None,
                    help="replications per grid point (× 4 scorers); default 60 (20 at 300 clusters)")
    ap.add_argument("--boot", type=int, default=None)
    ap.add_argument("--ci", default="bca", choices=["bca", "percentile", "studentized"])
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--jobs", type=int, default=None, help="worker processes (default: 2, 1 with --quick)")
    a = ap.parse_args(argv)
    kinds = a.kinds or list(KINDS)
    clusters = a.clusters or ([20] if a.quick else [20, 50, 300])
    scales = a.scales or (["sd"] if a.quick else ["sd", "raw"])
    boot = a.boot or (200 if a.quick else 1000)
    jobs = a.jobs or (1 if a.quick else 2)

    def reps_for(c: int) -> int:
        return a.reps or (3 if a.quick else DEFAULT_REPS.get(c, 60))

    t0 = time.perf_counter()
    print(f"calibration: ci={a.ci}, replications × 4 scorers per point: "
          + ", ".join(f"{reps_for(c)} at {c} clusters" for c in clusters)
          + f"; B = {boot}, noise = {NOISE}, alpha = 0.05, {jobs} worker(s)")
    tasks = [(k, s, c, lv, reps_for(c) * KINDS[k].rep_factor, boot, a.ci, a.seed)
             for k in kinds for s in scales for c in clusters for lv in KINDS[k].levels]
    # the slowest points first, so two workers finish together
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i][2] * tasks[i][4])
    results: list[dict | None] = [None] * len(tasks)
    if jobs > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(jobs) as pool:
            for i, row in zip(order, pool.imap(_task, [tasks[i] for i in order])):
                results[i] = row
    else:
        for i in order:
            results[i] = _task(tasks[i])
    misses = []
    for k in kinds:
        rows = [r for r in results if r is not None and r["kind"] == k]
        print()
        print(table(k, rows))
        misses += [f"{k} {r['scale']} {r['clusters']} {r['level']}: {verdict(r)}" for r in rows if verdict(r) != "ok"]
        misses += [f"{k} {p['scale']} {p['clusters']} pooled: coverage {p['coverage']:.3f}" for p in pooled(rows)
                   if coverage_verdict(p).startswith("MISSES")]
    print("\n### Summary\n")
    print("every point meets the bar" if not misses else "misses:\n" + "\n".join(f"- {m}" for m in misses))
    sys.stdout.flush()
    elapsed = time.perf_counter() - t0
    t = os.times()
    cpu = t.user + t.system + t.children_user + t.children_system
    print(f"\nrun time: {elapsed:.0f} s wall, {cpu:.0f} s CPU ({jobs} worker(s); "
          f"≈ {cpu / 2:.0f} s on 2 idle cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
