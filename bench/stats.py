"""Benchmark of the statistics engine at the seed paper's scale, from synthetic tables.

1,470 real clusters (one image each) + 54 synthetic clusters × 10 images, 7 doses per
operator, 4 scorers, 4 symmetric operators + 1 placebo, B = 10,000 bootstrap resamples.
Prints the statistics time (tables → every cell, q, outcome, section) and peak memory.
Targets on the 2-core dev machine: ≤ 20 s and ≤ 2 GiB.

`--growth` measures the same audit at 1×, 2× and 4× the clusters (both arms) in one process,
interleaved over `--repeat` rounds (best time per size; peak traced memory in a separate
pass so tracing does not slow the timed one) and prints the ratios to 1×: the work is
clusters × B, so a linear engine shows ≈ 2× and ≈ 4× (target ≤ 4.5× time and memory at 4×).

    .venv/bin/python bench/stats.py [--boot 10000]
    .venv/bin/python bench/stats.py --growth --boot 1000 [--repeat 2]
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

SPEC = """
audit "benchmark" { seed: 1 bootstrap: BOOT }
scorer laion = planted(fidelity: 0.3, noise: 1.0, seed: 1)
scorer pick  = planted(asymmetry: 0.2, noise: 1.0, seed: 2)
scorer ir    = planted(fidelity: 0.1, noise: 1.0, seed: 3)
scorer hps   = planted(noise: 1.0, seed: 4)
arm real      = images("data/real", manifest: "data/real.csv", kind: real, strata: race)
arm synthetic = images("data/synthetic", manifest: "data/synthetic.csv", kind: synthetic, cluster: prompt_id)
region face = face()
region skin = skin(within: face)
region rest = not skin
measure ita = ita(region: skin)
covariate clipping = gamut_clip()
operator light = lab_shift(channel: L, region: skin) doses -15..15 step 5
placebo light_rest = lab_shift(channel: L, region: rest) of light
operator red = lab_shift(channel: a, region: skin) doses -15..15 step 5
operator yellow = lab_shift(channel: b, region: skin) doses -15..15 step 5
operator hue = hue_rotate(region: skin) doses -30..30 step 10
validate ita under light: r2 >= 0.5, monotonic >= 0.95
select best4 = best_of 4 under light by ita
hypothesis H1 "inverted U" {
  fidelity_index(light) > 0 on real, synthetic for each scorer
  fidelity_index(red) > 0 on real, synthetic for each scorer
  fidelity_index(yellow) > 0 on real, synthetic for each scorer
  fidelity_index(hue) > 0 on real, synthetic for each scorer
}
hypothesis H2 "no direction" { abs(asymmetry(light)) < 0.05 on real, synthetic for each scorer }
hypothesis H3 "not skin-specific" { placebo_ratio(light, light_rest) within [0.5, 2] on real for each scorer }
hypothesis H4 "transfer" { transfers(asymmetry(light), from: synthetic, to: real) for each scorer }
hypothesis H5 "selection" { abs(net_drift(best4)) < 1.0 on real for each scorer }
hypothesis H6 "homogeneous" { homogeneous(fidelity_index(light), by: race) on real for each scorer }
hypothesis H7 "artifacts" {
  abs(attribute_effect(light, measure: ita, controlling: clipping)) < 0.05 on real for each scorer
}
"""


def _ir(boot: int):
    from scoreaudit import api

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "bench.audit"
        p.write_text(SPEC.replace("BOOT", str(boot)), encoding="utf-8")
        checked = api.check(p)
        if not checked.ok:
            print("\n".join(m.message for m in checked.diagnostics), file=sys.stderr)
            return None
        return checked.ir


def _shapes(scale: int):
    from scoreaudit.stats.planted import ArmShape

    return {"real": ArmShape(round(1470 * scale), 1, {"race": ("A", "B", "C", "D")}),
            "synthetic": ArmShape(round(54 * scale), 10)}


def growth(boot: int, repeat: int, scales=(1, 2, 4)) -> int:
    """Time and peak traced memory of the statistics at each cluster scale, as ratios to 1×."""
    import gc
    import os

    from scoreaudit.stats.engine import compute
    from scoreaudit.stats.planted import planted_tables

    ir = _ir(boot)
    if ir is None:
        return 1
    truth = {name: dict(s.call.params) for name, s in ir.scorers.items()}
    tables = {k: planted_tables(ir, _shapes(k), truth, seed=1) for k in scales}
    best = {k: float("inf") for k in scales}
    peak = {}
    for _ in range(repeat):
        for k in scales:  # interleaved: load drifts hit every size alike
            gc.collect()
            t0 = time.perf_counter()
            compute(ir, tables[k], progress=False)
            best[k] = min(best[k], time.perf_counter() - t0)
    for k in scales:
        gc.collect()
        tracemalloc.start()
        compute(ir, tables[k], progress=False)
        peak[k] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(f"load average {os.getloadavg()[0]:.2f}; B = {boot:,}; best of {repeat} interleaved rounds")
    print(f"{'clusters':>9} {'score rows':>11} {'time s':>8} {'ratio':>6} {'peak MiB':>9} {'ratio':>6}")
    for k in scales:
        n_cl = round(1470 * k) + round(54 * k)
        print(f"{n_cl:>9,} {len(tables[k]['scores']):>11,} {best[k]:>8.2f} {best[k] / best[scales[0]]:>6.2f} "
              f"{peak[k] / 2**20:>9.0f} {peak[k] / peak[scales[0]]:>6.2f}")
    top, f = scales[-1], scales[-1] / scales[0]
    ok = best[top] / best[scales[0]] <= 1.125 * f and peak[top] / peak[scales[0]] <= 1.125 * f
    print(f"at {f:g}× the clusters: time {best[top] / best[scales[0]]:.2f}×, memory {peak[top] / peak[scales[0]]:.2f}× "
          f"(target ≤ {1.125 * f:g}×): {'ok' if ok else 'MISSED'}")
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boot", type=int, default=10_000)
    ap.add_argument("--growth", action="store_true", help="time and memory ratios at 1×, 2×, 4× the clusters")
    ap.add_argument("--repeat", type=int, default=2, help="interleaved rounds for --growth (best time counts)")
    ap.add_argument("--scales", default="1,2,4", help="cluster multiples for --growth (ratios to the first)")
    args = ap.parse_args(argv)
    if args.growth:
        return growth(args.boot, args.repeat, tuple(float(x) for x in args.scales.split(",")))
    from scoreaudit.stats.engine import compute
    from scoreaudit.stats.planted import planted_tables

    ir = _ir(args.boot)
    if ir is None:
        return 1
    truth = {name: dict(s.call.params) for name, s in ir.scorers.items()}
    shapes = _shapes(1)
    t0 = time.perf_counter()
    tables = planted_tables(ir, shapes, truth, seed=1)
    t_gen = time.perf_counter() - t0
    n_rows = len(tables["scores"])
    tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    res, derived, _ = compute(ir, tables, progress=False)
    t_stats, c_stats = time.perf_counter() - t0, time.process_time() - c0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB → GiB
    n_cells = len(res["cells"])
    print(f"tables: {n_rows:,} score rows generated in {t_gen:.1f} s")
    print(f"statistics: {n_cells} cells, {len(res['sections']['curves'])} curve points, B = {args.boot:,}: "
          f"{t_stats:.1f} s wall, {c_stats:.1f} s CPU (target ≤ 20 s)")
    print(f"peak memory: {peak / 2**30:.2f} GiB traced during statistics, {rss:.2f} GiB process max RSS "
          f"(target ≤ 2 GiB)")
    return 0 if t_stats <= 20 and rss <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
