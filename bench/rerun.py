"""Cached re-runs: a first run vs a fully cached re-run vs a stats-only re-run, side by side.

Data: the demo audit (examples/demo.audit: mask/skin regions, lab_shift with a
placebo, gaussian_blur, two classical and two planted scorers, ita and
gamut_clip) on generated demo data scaled to --n images (scripts/make_demo_data.py:
astronaut views and procedurally drawn faces with masks), in a temporary folder.

Pipeline time is `runtime.executor.execute` (manifests → tables): what a re-run
must not spend on images. Three runs, one process, one fresh cache:
- first:     empty cache, everything computed (the baseline of the ratios);
- cached:    the same spec again, every step cached (target: ≤ 5% of first);
- stats-only: one hypothesis threshold edited, every step cached (target: < 3 s).
The statistics (`stats.engine.analyse`) are timed apart and are not part of the targets.
On a shared machine absolute seconds move with the load: the ratios to the first
run, measured in the same process minutes apart, are the figures to compare
(the load average is printed with each run).

    python bench/rerun.py [--size full|medium|small | --n N] [--batch 16] [--data DIR]
                          [--profile] [--keep]

Sizes: full = 1,500 images (the issue's figure), medium = 300, small = 60.
`--data DIR` reuses images drawn by an earlier run (`--keep` prints where they are);
`--profile` prints where the stats-only re-run spends its time (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import io
import os
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _demo_builder():
    spec = importlib.util.spec_from_file_location("make_demo_data", ROOT / "scripts" / "make_demo_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build


SIZES = {"full": 1500, "medium": 300, "small": 60}


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "?"


def _timed_run(spec: Path, out: Path, cache: Path, profile: bool = False) -> tuple[float, float, dict, str]:
    from scoreaudit import api
    from scoreaudit.runtime.executor import execute
    from scoreaudit.stats.engine import analyse

    ir, plan = api.compile(spec, tables=False)
    load = _load()
    prof = cProfile.Profile() if profile else None
    t = time.perf_counter()
    if prof:
        prof.enable()
    summary = execute(ir, plan, spec_path=spec, out_dir=out, cache_path=cache, progress=False)
    pipeline = time.perf_counter() - t
    if prof:
        prof.disable()
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(25)
        print(buf.getvalue())
    t = time.perf_counter()
    analyse(out, progress=False)
    stats = time.perf_counter() - t
    return pipeline, stats, summary.counts["steps"], load


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=tuple(SIZES), default="full")
    ap.add_argument("--n", type=int, default=None, help="images in all (a fifth real views, the rest faces); "
                                                         "default from --size")
    ap.add_argument("--batch", type=int, default=16, help="batch_size setting")
    ap.add_argument("--data", type=Path, default=None, help="reuse the demo images in DIR (from --keep)")
    ap.add_argument("--profile", action="store_true", help="profile the stats-only re-run")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args(argv)
    n = args.n or SIZES[args.size]

    work = Path(tempfile.mkdtemp(prefix="scoreaudit-rerun-"))
    try:
        n_real = max(1, n // 5)
        per_prompt = 3
        n_prompts = max(1, (n - n_real) // per_prompt)
        t = time.perf_counter()
        if args.data is not None:  # drawn by an earlier run: copied, so this run's cache and files are its own
            shutil.copytree(args.data, work / "data" / "demo")
        else:
            _demo_builder()(work / "data" / "demo", n_real=n_real, n_prompts=n_prompts, per_prompt=per_prompt)
        made = time.perf_counter() - t
        source = (ROOT / "examples" / "demo.audit").read_text(encoding="utf-8")
        source = source.replace("bootstrap: 2000", f"bootstrap: 200\n  batch_size: {args.batch}")
        spec = work / "demo.audit"
        spec.write_text(source, encoding="utf-8")
        cache = work / "cache.sqlite"
        n_images = sum(1 for f in (work / "data" / "demo").glob("*/*.png"))
        print(f"{n_images} images ({made:.1f} s to {'copy' if args.data else 'draw'}), batch_size {args.batch}, "
              f"cache {cache}", flush=True)

        first = _timed_run(spec, work / "out1", cache)
        cached = _timed_run(spec, work / "out2", cache)
        edited = source.replace("abs(asymmetry(light)) < 0.1", "abs(asymmetry(light)) < 0.2")
        assert edited != source, "the demo's H2 threshold moved: edit another hypothesis here"
        spec.write_text(edited, encoding="utf-8")
        stats_only = _timed_run(spec, work / "out3", cache, profile=args.profile)

        same = all((work / "out1" / "tables" / f).read_bytes() == (work / o / "tables" / f).read_bytes()
                   for o in ("out2", "out3") for f in ("images.parquet", "scores.parquet", "measures.parquet"))
        ran = {name: sum(n for kind in r[2].values() for reason, n in kind.items() if reason != "cached")
               for name, r in (("first", first), ("cached", cached), ("stats-only", stats_only))}
        print(f"{'run':<12}{'pipeline s':>12}{'/ first':>9}{'stats s':>10}{'steps ran':>11}{'load':>7}")
        for name, r in (("first", first), ("cached", cached), ("stats-only", stats_only)):
            print(f"{name:<12}{r[0]:>12.2f}{r[0] / first[0]:>9.1%}{r[1]:>10.2f}{ran[name]:>11}{r[3]:>7}")
        ratio = cached[0] / first[0]
        print(f"cached re-run / first run: {ratio:.1%} (target ≤ 5%): {'PASS' if ratio <= 0.05 else 'FAIL'}")
        print(f"stats-only re-run pipeline: {stats_only[0]:.2f} s, {stats_only[0] / first[0]:.1%} of the first "
              f"run (target < 3 s): {'PASS' if stats_only[0] < 3.0 else 'FAIL'}")
        print(f"tables byte-identical across the three runs: {same}")
        return 0 if same else 1
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
