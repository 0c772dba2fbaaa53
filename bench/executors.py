"""Throughput of `--executor local` vs `--executor ray` on the same audit, side by side.

The demo audit (examples/demo.audit) on --n generated images (scripts/make_demo_data.py),
run once per executor with its own empty cache, so every step is computed. Ray runs on a
local instance started for the run (all CPUs of this machine, or --ray-address ADDR for an
existing cluster); its start-up is timed apart from the run, and the run's tables are
compared byte for byte with the local executor's.

    python bench/executors.py [--n 300] [--batch 8] [--ray-address ADDR]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _build():
    spec = importlib.util.spec_from_file_location("make_demo_data", ROOT / "scripts" / "make_demo_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--ray-address", default=None)
    args = ap.parse_args(argv)

    import ray

    from scoreaudit import api
    from scoreaudit.runtime.executor import execute

    work = Path(tempfile.mkdtemp(prefix="scoreaudit-executors-"))
    try:
        n_real = max(1, args.n // 5)
        n_prompts = max(1, (args.n - n_real) // 3)
        _build()(work / "data" / "demo", n_real=n_real, n_prompts=n_prompts, per_prompt=3)
        n = n_real + 3 * n_prompts
        source = (ROOT / "examples" / "demo.audit").read_text(encoding="utf-8")
        spec = work / "demo.audit"
        spec.write_text(source.replace("bootstrap: 2000", f"bootstrap: 200\n  batch_size: {args.batch}"),
                        encoding="utf-8")
        ir, plan = api.compile(spec, tables=False)

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
        t = time.perf_counter()
        execute(ir, plan, spec_path=spec, out_dir=work / "ray", cache_path=work / "ray.sqlite", progress=False,
                executor="ray")
        on_ray = time.perf_counter() - t
        ray.shutdown()

        same = all((work / "local" / "tables" / f.name).read_bytes() == f.read_bytes()
                   for f in sorted((work / "ray" / "tables").glob("*.parquet")))
        print(f"{n} images, batch_size {args.batch}, Ray: {cpus} CPU(s) "
              f"({'cluster ' + args.ray_address if args.ray_address else 'local instance'})")
        print(f"{'executor':<10}{'seconds':>10}{'images/s':>10}")
        print(f"{'local':<10}{local:>10.1f}{n / local:>10.2f}")
        print(f"{'ray':<10}{on_ray:>10.1f}{n / on_ray:>10.2f}   (+ {startup:.1f} s to start or join Ray)")
        print(f"ray / local throughput: {local / on_ray:.2f}x; tables byte-identical: {same}")
        return 0 if same else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
