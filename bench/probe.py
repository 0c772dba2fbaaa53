"""Probe throughput: ReNO iterations/s (one-step generation + scorer forward and backward), and the ratio of
a cached re-run to the first run.

Runs the code path of `scoreaudit run` (runtime/probe.run_probe) on a pipeline folder, or on tiny random
models built here when none is given (a tiny SD pipeline and a tiny PickScore in a temporary HF cache):

    PYTHONPATH=src python bench/probe.py                                    # tiny models, CPU
    PYTHONPATH=src python bench/probe.py --pipeline DIR --device cuda --size 512 --iterations 50

With `--pipeline` the scorer is PickScore from the Hugging Face cache (yuvalkirstain/PickScore_v1).
Printed: trajectories, iterations, seconds and iterations/s for a first run (every trajectory optimised)
and a second run (every trajectory read from the store; measures recomputed).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pipeline", help="a diffusers pipeline folder (default: a tiny random one)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--size", type=int, default=32)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.pipeline:
            folder = Path(args.pipeline).resolve()
        else:
            os.environ["HF_HUB_CACHE"] = str(tmp / "hf")
            os.environ["HF_HUB_OFFLINE"] = "1"
            from scoreaudit.testing.tiny_diffusion import save_tiny_sd
            from scoreaudit.testing.tiny_models import build_prompt_scorers

            folder = save_tiny_sd(tmp / "pipe")
            build_prompt_scorers(tmp / "hf")
        from scoreaudit.compiler.ir import PluginCall, ProbeIR, ScorerIR
        from scoreaudit.runtime.probe import run_probe

        (tmp / "prompts.txt").write_text("".join(f"a photo of person number {i}\n" for i in range(args.prompts)))
        probe = ProbeIR(name="p", scorer="pick", measures=("skin_exposure",), call=PluginCall(
            plugin="reno", version="1",
            params={"scorer": "pick", "pipeline": str(folder), "prompts": "prompts.txt",
                    "seeds": list(range(args.seeds)), "iterations": args.iterations, "lr": 5.0,
                    "direction": "maximize", "regulariser": 0.01, "grad_clip": 0.1, "size": args.size,
                    "guidance": 0.0, "dtype": "auto", "keep": "ends",
                    "measures": [{"measure": "skin_exposure", "params": {}}]}))
        slot = _Slot(ScorerIR(name="pick", needs_prompt=True,
                              call=PluginCall(plugin="pickscore", version="1", params={})), args.device)
        n = args.prompts * args.seeds
        times = []
        for label in ("optimised", "from the store"):
            t0 = time.perf_counter()
            run_probe(probe, scorer_slot=slot, spec_dir=tmp, out_dir=tmp / f"out-{len(times)}", store=tmp / "store",
                      device=args.device)
            dt = time.perf_counter() - t0
            times.append(dt)
            its = n * (args.iterations + 1)
            print(f"{label:>15}: {n} trajectories, {its} iterations in {dt:.2f} s: {its / dt:.2f} iterations/s")
        print(f"store speed-up: {times[0] / times[1]:.1f}x (the first run includes loading the pipeline and scorer)")


class _Slot:
    """What run_probe needs from the executor's scorer slot: the IR, key parameters, the instance."""

    def __init__(self, sir, device: str):
        self.ir, self.params, self.key_params, self._device = sir, dict(sir.call.params), dict(sir.call.params), device
        self._instance = None

    @property
    def instance(self):
        if self._instance is None:
            from scoreaudit.runtime.scoring import build_scorer

            self._instance = build_scorer(self.ir, self._device, None)
        return self._instance


if __name__ == "__main__":
    main()
