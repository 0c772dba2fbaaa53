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

The bar (spec/methods.md): coverage within 93–97% and boundary false-support
and false-refutation rates within the binomial band of alpha (z = 3 over the
pooled trials). Four planted scorers per audit are independent trials.

    python bench/calibration.py                # default grid (< 15 min on 2 cores)
    python bench/calibration.py --quick        # seconds; what the tests run
    python bench/calibration.py --ci percentile --kinds fidelity_index --clusters 20 50
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from scoreaudit import api  # noqa: E402
from scoreaudit.compiler.ir import AuditIR  # noqa: E402
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
measure ita = ita(region: skin)
operator light = lab_shift(channel: L, region: skin) doses -15, -10, -5, 0, 5, 10, 15
placebo light_rest = lab_shift(channel: L, region: rest) of light
operator blur = gaussian_blur(region: skin) doses 0, 1, 2, 4
select best4 = best_of 4 under light by ita
"""
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


KINDS = {
    "fidelity_index": Kind("fidelity_index", "fidelity_index(light)", "fidelity", 0.1),
    "penalty_index": Kind("penalty_index", "fidelity_index(blur)", "fidelity", 0.1),
    "asymmetry": Kind("asymmetry", "asymmetry(light)", "asymmetry", 0.1),
    "curve": Kind("curve", "curve(light, 15)", "asymmetry", 0.1),
    "trend": Kind("trend", "trend(light)", "asymmetry", 0.005),
    "attribute_effect": Kind("attribute_effect", "attribute_effect(light, measure: ita)", "slope", 0.02,
                             {"slope_by": "ita"}),
    "net_drift": Kind("net_drift", "net_drift(best4)", "asymmetry", 1.0, levels=("null",)),
    "directional_drift": Kind("directional_drift", "directional_drift(best4)", "fidelity", 1.0, levels=("null",)),
    "placebo_ratio": Kind("placebo_ratio", "placebo_ratio(light, light_rest)", "placebo", 2.0,
                          {"fidelity": 1.0}, equivalence="{e} within [0.5, {d}]"),
    "transfers": Kind("transfers", "transfers(asymmetry(light), from: syn, to: real)", "asymmetry", 2.0),
    "homogeneous": Kind("homogeneous", "homogeneous(fidelity_index(light), by: g, margin: {d})", "fidelity", 0.1,
                        {"fidelity": 0.5}),
}


def _spec(kind: Kind, scale: str, ci: str, boot: int) -> AuditIR:
    e = kind.expr.replace("{d}", f"{kind.delta:g}")
    if kind.name in ("transfers", "homogeneous"):
        on = f" on {kind.arm}" if kind.name == "homogeneous" else ""
        hyps = f'hypothesis E "e" {{\n  {e}{on} for each scorer\n}}\n'
    elif kind.name == "placebo_ratio":  # null value 1: only the equivalence claim is meaningful
        hyps = f'hypothesis E "e" {{\n  {kind.equivalence.format(e=e, d=f"{kind.delta:g}")} on {kind.arm} for each scorer\n}}\n'
    else:
        eq = kind.equivalence.format(e=e, d=f"{kind.delta:g}")
        hyps = (f'hypothesis P "p" {{\n  {e} > 0 on {kind.arm} for each scorer\n}}\n'
                f'hypothesis E "e" {{\n  {eq} on {kind.arm} for each scorer\n}}\n')
    src = HEAD.format(boot=boot, scale=scale, ci=ci) + hyps
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
    if kind.name == "homogeneous":  # largest stratum difference: 0, δ, 3δ
        call = next(c for c in ir.cells() if c.hypothesis == "E").statistic.inner
        unit = true_value(ir, call, TruthContext({"*": {"noise": NOISE, "fidelity": 1.0}}, "s1", "real",
                                                 raw=scale == "raw"))
        diff = {"null": 0.0, "boundary": kind.delta, "strong": 3 * kind.delta}[level] / unit
        return {"*": {**base, "strata": {"g=b": {"fidelity": base["fidelity"] + diff}}}}
    target = {"null": 0.0, "boundary": kind.delta, "strong": 3 * kind.delta}[level]
    if target == 0.0:
        return {"*": dict(base)}
    call = next(c for c in ir.cells() if c.hypothesis == "P").statistic
    unit = true_value(ir, call, TruthContext({"*": {**base, kind.param: 1.0}}, "s1", kind.arm,
                                             raw=scale == "raw"))
    return {"*": {**base, kind.param: target / unit}}


def _band(n: int, rate: float, z: float = 3.0) -> tuple[float, float]:
    sd = math.sqrt(rate * (1 - rate) / max(n, 1))
    return max(0.0, rate - z * sd), rate + z * sd


def _mean(rows, key):
    v = [r[key] for r in rows if r.get(key) is not None]
    return float(np.mean(v)) if v else None


def run_point(kind: Kind, scale: str, clusters: int, level: str, reps: int, boot: int, ci: str, seed: int) -> dict:
    ir = _spec(kind, scale, ci, boot)
    shapes = {"real": ArmShape(clusters, 1, {"g": ("a", "b")}),
              "syn": ArmShape(max(clusters // 2, 10), 2)}
    truth = _truth_for_level(ir, kind, level, scale)
    rows = run_simulation(ir, reps, truth, shapes, n_boot=boot, model=MeasureModel(), seed=seed)
    one = [r for r in rows if r["cell"].startswith("P/")] or [r for r in rows if r["cell"].startswith("E")]
    eq = [r for r in rows if r["cell"].startswith("E")]
    out = {"kind": kind.name, "scale": scale, "clusters": clusters, "level": level, "trials": reps * len(one),
           "truth": _mean(one, "truth"), "bias": _mean(one, "bias"), "coverage": _mean(one + (eq if kind.name in (
               "transfers", "homogeneous") else []), "coverage")}
    if kind.name in ("transfers", "homogeneous", "placebo_ratio"):
        # claim-like kinds: the equivalence claim is the hypothesis at every level
        src = eq
        out["supported"], out["refuted"] = _mean(src, "supported"), _mean(src, "refuted")
    elif level == "boundary":
        out["supported"], out["refuted"] = _mean(eq, "supported"), _mean(eq, "refuted")
    else:
        out["supported"], out["refuted"] = _mean(one, "supported"), _mean(one, "refuted")
    return out


def verdict(row: dict, alpha: float = 0.05) -> str:
    """Which bars the grid point meets: coverage in 93–97%, boundary rates within the band of alpha."""
    notes = []
    cov = row.get("coverage")
    if cov is not None and not 0.93 <= cov <= 0.97:
        notes.append("coverage")
    n = row["trials"]
    _, hi = _band(n, alpha)
    k = row["kind"]
    boundary = (row["level"] == "boundary") or (row["level"] == "null" and k not in (
        "transfers", "homogeneous", "placebo_ratio"))
    if boundary:
        if row["supported"] is not None and row["supported"] > hi:
            notes.append("false support")
        if row["refuted"] is not None and row["refuted"] > hi:
            notes.append("false refutation")
    if k in ("transfers", "homogeneous", "placebo_ratio") and row["level"] == "null" and row["refuted"] > hi:
        notes.append("false refutation")
    return "ok" if not notes else "MISSES: " + ", ".join(notes)


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def table(kind: str, rows: list[dict]) -> str:
    heads = ("scale", "clusters", "level", "trials", "truth", "coverage", "supported", "refuted", "bias", "bar")
    data = [[_fmt(r["scale"]), _fmt(r["clusters"]), r["level"], _fmt(r["trials"]), _fmt(r["truth"]),
             _fmt(r["coverage"]), _fmt(r["supported"]), _fmt(r["refuted"]), _fmt(r["bias"]), verdict(r)]
            for r in rows]
    w = [max(len(h), *(len(d[i]) for d in data)) for i, h in enumerate(heads)]
    lines = [f"### {kind}", "", "| " + " | ".join(h.ljust(w[i]) for i, h in enumerate(heads)) + " |",
             "|" + "|".join("-" * (x + 2) for x in w) + "|"]
    lines += ["| " + " | ".join(d[i].ljust(w[i]) for i in range(len(heads))) + " |" for d in data]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tiny grid (what the tests run)")
    ap.add_argument("--kinds", nargs="*", default=None, choices=list(KINDS))
    ap.add_argument("--clusters", nargs="*", type=int, default=None)
    ap.add_argument("--scales", nargs="*", default=None, choices=["sd", "raw"])
    ap.add_argument("--reps", type=int, default=None, help="replications per grid point (× 4 scorers)")
    ap.add_argument("--boot", type=int, default=None)
    ap.add_argument("--ci", default="bca", choices=["bca", "percentile", "studentized"])
    ap.add_argument("--seed", type=int, default=2026)
    a = ap.parse_args(argv)
    kinds = a.kinds or list(KINDS)
    clusters = a.clusters or ([20] if a.quick else [20, 50, 300])
    scales = a.scales or (["sd"] if a.quick else ["sd", "raw"])
    reps = a.reps or (3 if a.quick else 60)
    boot = a.boot or (200 if a.quick else 1000)
    t0 = time.perf_counter()
    print(f"calibration: ci={a.ci}, {reps} replications × 4 scorers per point, B = {boot}, noise = {NOISE}, "
          f"alpha = 0.05")
    all_rows = []
    for k in kinds:
        kind = KINDS[k]
        rows = [run_point(kind, s, c, lv, reps, boot, a.ci, a.seed)
                for s in scales for c in clusters for lv in kind.levels]
        all_rows += rows
        print()
        print(table(k, rows))
        sys.stdout.flush()
    elapsed = time.perf_counter() - t0
    print(f"\nrun time: {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
