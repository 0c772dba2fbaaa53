"""Generation throughput: images/s and denoising steps/s of a generated arm, cold (generated) and warm (store).

Runs the same code path as `scoreaudit run` (runtime/generation.generate_arm) on a
pipeline folder, or on a tiny random pipeline built here when none is given:

    PYTHONPATH=src python bench/generation.py                         # tiny pipeline, CPU
    PYTHONPATH=src python bench/generation.py --pipeline DIR --device cuda --size 1024 --steps 30 --batch 4
    PYTHONPATH=src python bench/generation.py --executor ray          # in a Ray pipeline actor (local Ray)

Printed: images, denoising steps, seconds, images/s and steps/s for a first
run (every image generated) and a second run (every image read from the
content-addressed store), and the ratio of the two.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from scoreaudit.compiler.ir import ArmIR, PluginCall
from scoreaudit.runtime.generation import generate_arm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pipeline", help="a diffusers pipeline folder (default: a tiny random one)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--executor", choices=("local", "ray"), default="local",
                    help="ray: generate in a pipeline actor of a local Ray instance (as `run --executor ray`)")
    args = ap.parse_args()
    make = {}
    conn = None
    if args.executor == "ray":
        from scoreaudit.runtime.ray_pipelines import RayConnection

        conn = RayConnection()
        t0 = time.perf_counter()
        conn.get()
        print(f"{'ray start':>15}: {time.perf_counter() - t0:.2f} s (not counted below)")
        make = {"make": conn.generator}
    try:
        _bench(args, make)
    finally:
        if conn is not None:
            conn.close()


def _bench(args, make: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.pipeline:
            folder = Path(args.pipeline).resolve()
        else:
            from scoreaudit.testing.tiny_diffusion import save_tiny_sd

            folder = save_tiny_sd(tmp / "pipe")
        (tmp / "prompts.txt").write_text("".join(f"a photo of object number {i}\n" for i in range(args.prompts)))
        arm = ArmIR(name="gen", source="images", cluster="cluster", call=PluginCall(
            plugin="generate", version="1",
            params={"pipeline": str(folder), "prompts": "prompts.txt", "seeds": args.seeds, "steps": args.steps,
                    "guidance": 7.0, "size": args.size, "batch_size": args.batch, "dtype": args.dtype}))
        n = args.prompts * args.seeds
        times = []
        for label in ("generated", "from the store"):
            t0 = time.perf_counter()
            generate_arm(arm, spec_dir=tmp, out_dir=tmp / f"out-{len(times)}", store=tmp / "store",
                         device=args.device, **make)
            dt = time.perf_counter() - t0
            times.append(dt)
            print(f"{label:>15}: {n} images, {n * args.steps} denoising steps in {dt:.2f} s: "
                  f"{n / dt:.2f} images/s, {n * args.steps / dt:.1f} steps/s")
        print(f"store speed-up: {times[0] / times[1]:.1f}x (the first run includes loading the pipeline)")


if __name__ == "__main__":
    main()
