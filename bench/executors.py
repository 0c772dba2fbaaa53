"""Throughput of `--executor local` vs `--executor ray` on the same audit, side by side.

The demo audit (examples/demo.audit) on --n generated images (scripts/make_demo_data.py),
run once per executor with its own empty cache, so every step is computed. Ray runs on a
local instance started for the run (all CPUs of this machine, or --ray-address ADDR for an
existing cluster); its start-up is timed apart from the run, and the run's tables are
compared byte for byte with the local executor's.

On a shared machine absolute seconds move with the load: the ratio (local / Ray,
measured in the same process) is the figure to compare; the load average is printed.

    python bench/executors.py [--size full|medium|small | --n N] [--batch 8] [--data DIR]
                              [--ray-address ADDR]

Sizes: full = 1,500 images, medium = 300, small = 60. `--data DIR` reuses demo images
drawn earlier (bench/rerun.py --keep).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = {"full": 1500, "medium": 300, "small": 60}


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else "?"


def _build():
    spec = importlib.util.spec_from_file_location("make_demo_data", ROOT / "scripts" / "make_demo_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", choices=tuple(SIZES), default="medium")
    ap.add_argument("--n", type=int, default=None, help="images in all (default from --size)")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--data", type=Path, default=None, help="reuse the demo images in DIR")
    ap.add_argument("--ray-address", default=None)
    args = ap.parse_args(argv)
    n_wanted = args.n or SIZES[args.size]

    import ray

    from scoreaudit import api
    from scoreaudit.runtime.executor import execute

    work = Path(tempfile.mkdtemp(prefix="scoreaudit-executors-"))
    try:
        n_real = max(1, n_wanted // 5)
        n_prompts = max(1, (n_wanted - n_real) // 3)
        if args.data is not None:
            shutil.copytree(args.data, work / "data" / "demo")
        else:
            _build()(work / "data" / "demo", n_real=n_real, n_prompts=n_prompts, per_prompt=3)
        n = sum(1 for f in (work / "data" / "demo").glob("*/*.png"))
        source = (ROOT / "examples" / "demo.audit").read_text(encoding="utf-8")
        spec = work / "demo.audit"
        spec.write_text(source.replace("bootstrap: 2000", f"bootstrap: 200\n  batch_size: {args.batch}"),
                        encoding="utf-8")
        ir, plan = api.compile(spec, tables=False)

        load_local = _load()
        t = time.perf_counter()
        execute(ir, plan, spec_path=spec, out_dir=work / "local", cache_path=work / "local.sqlite", progress=False)
        local = time.perf_counter() - t

        t = time.perf_counter()
        if args.ray_address:
            ray.init(address=args.ray_address, log_to_driver=False)
        else:
            ray.init(address="local", include_dashboard=False, log_to_driver=False,
                     object_store_memory=200 * 1024 * 1024)
        startup = time.perf_counter() - t
        cpus = int(ray.cluster_resources().get("CPU", 0))
        load_ray = _load()
        t = time.perf_counter()
        execute(ir, plan, spec_path=spec, out_dir=work / "ray", cache_path=work / "ray.sqlite", progress=False,
                executor="ray")
        on_ray = time.perf_counter() - t
        ray.shutdown()

        same = all((work / "local" / "tables" / f.name).read_bytes() == f.read_bytes()
                   for f in sorted((work / "ray" / "tables").glob("*.parquet")))
        print(f"{n} images, batch_size {args.batch}, Ray: {cpus} CPU(s) "
              f"({'cluster ' + args.ray_address if args.ray_address else 'local instance'})")
        print(f"{'executor':<10}{'seconds':>10}{'images/s':>10}{'load':>7}")
        print(f"{'local':<10}{local:>10.1f}{n / local:>10.2f}{load_local:>7}")
        print(f"{'ray':<10}{on_ray:>10.1f}{n / on_ray:>10.2f}{load_ray:>7}   (+ {startup:.1f} s to start or join Ray)")
        print(f"ray / local throughput: {local / on_ray:.2f}x; tables byte-identical: {same}")
        return 0 if same else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
