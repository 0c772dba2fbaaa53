"""Benchmark of the statistics engine at the seed paper's scale, from synthetic tables.

1,470 real clusters (one image each) + 54 synthetic clusters × 10 images, 7 doses per
operator, 4 scorers, 4 symmetric operators + 1 placebo, B = 10,000 bootstrap resamples.
Prints the statistics time (tables → every cell, q, outcome, section) and peak memory.
Targets on the 2-core dev machine: ≤ 20 s and ≤ 2 GiB.

    /work/venv/bin/python bench/stats.py [--boot 10000]
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boot", type=int, default=10_000)
    args = ap.parse_args(argv)
    from scoreaudit import api
    from scoreaudit.stats.engine import compute
    from scoreaudit.stats.planted import ArmShape, planted_tables

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "bench.audit"
        p.write_text(SPEC.replace("BOOT", str(args.boot)), encoding="utf-8")
        checked = api.check(p)
        if not checked.ok:
            print("\n".join(m.message for m in checked.diagnostics), file=sys.stderr)
            return 1
        ir = checked.ir
    truth = {name: dict(s.call.params) for name, s in ir.scorers.items()}
    shapes = {"real": ArmShape(1470, 1, {"race": ("A", "B", "C", "D")}), "synthetic": ArmShape(54, 10)}
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
