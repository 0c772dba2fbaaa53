"""The device path on a skin-tone audit: throughput per stage and per scorer, device busy share, share of peak.

The audit is examples/skin_tone.audit's shape: four scorers (laion_aesthetic, pickscore,
image_reward, hpsv2) on every base image and every non-identity variant of four operators
(light: lab_shift L* -15..15 step 5 on skin; light_rest: the same on the rest; blur:
gaussian_blur 1, 2, 4 on skin; hue: hue_rotate -20..20 step 10 on skin), with ITA and
gamut clipping measured on each variant: 20 scored images and 80 forward passes per base
image. The seed paper's audit is about 330,000 forward passes, i.e. --images 4125.

Per base image the pixels and masks go to the device once (gpu.pipeline.DeviceImage);
operators, measures and each scorer's preprocessing run there as torch ops and feed the
forwards directly. Models have the official architectures' shapes with random weights
(no official weights are needed): --scale official builds ViT-L/14 (LAION), ViT-H/14
(PickScore, HPSv2) and BLIP ViT-L/16 + BERT (ImageReward) so FLOPs per image are the real
ones; --scale mid / tiny are smaller stand-ins for CPU runs.

Printed: images/s of each stage (decode, upload, operators, measures, scoring), forward
passes/s and GFLOP per image of each scorer (torch.utils.flop_counter on one forward),
the share of wall time the device was busy (CUDA events around the device stages, which
are synchronised at their ends: an upper bound that counts the gaps between kernels inside
a stage as busy), and achieved TFLOP/s as a share of the device's bf16 dense peak
(--peak-tflops, or looked up from the device name).

--mode run drives `scoreaudit run`'s own runtime instead (runtime.executor.execute on a
hand-built IR of the same audit: decode, mask regions, the cache, the variant hashes, every
measure, every scorer): the same audit twice in one process, once on the reference path
(--tensor-path off) and once on the tensor path (on), each with a fresh cache, and prints
the wall time, base images/s and forward passes/s of each and their ratio (plus whether the
two runs' measures agree to 1e-4). The statistics and the report are not timed.

On a CUDA GPU (the intended use):
    python bench/gpu.py --device cuda --scale official --images 4125 --precision bf16
    python bench/gpu.py --mode run --device cuda --scale official --images 500 --precision bf16
On a CPU (a smoke run; the figures say nothing about a GPU):
    python bench/gpu.py --device cpu --scale tiny --images 8 --size 96
    python bench/gpu.py --mode run --device cpu --scale tiny --images 4 --size 64

Not run on a GPU while this was written (none was available); see README "GPU".
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(tempfile.mkdtemp(prefix="scoreaudit-bench-gpu-"))
os.environ.update({"HF_HUB_CACHE": str(ROOT / "hf"), "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(ROOT / "xdg")})

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from scoreaudit.plugins.gpu import pipeline  # noqa: E402
from scoreaudit.registry import covariates, load_plugins, measures, operators  # noqa: E402
from scoreaudit.testing import tiny_models as tm  # noqa: E402

PROMPT = "a photo of a person"
SCORERS = {"laion_aesthetic": {}, "pickscore": {"prompt": PROMPT}, "image_reward": {"prompt": PROMPT},
           "hpsv2": {"prompt": PROMPT, "version": "2.1"}}
# bf16 dense tensor-core peak (TFLOP/s) by device name fragment, from the vendors' data sheets.
PEAK_BF16 = {"H200": 989.0, "H100": 989.0, "A100": 312.0, "L40S": 362.0, "L4": 121.0, "A10": 125.0,
             "RTX 4090": 165.0}

# The official architectures' shapes (random weights): FLOPs per image as the real models.
OFFICIAL = tm.Scale(
    image=224,
    hf_vision={"hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32, "num_attention_heads": 16,
               "patch_size": 14},
    hf_text={"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16},
    hf_projection=1024,
    ir_vit=dict(image_size=224, patch=16, dim=1024, depth=24, heads=16),
    med_layers=12,
    med_intermediate=3072,
)


def skin_tone_operators():
    def op(name, plugin, params, region, doses):
        entry = operators.get(plugin)
        return pipeline.OperatorSpec(name, plugin, entry.params.model_validate(params), region, doses)

    return [
        op("light", "lab_shift", {"channel": "L", "region": "skin"}, "skin", [-15, -10, -5, 0, 5, 10, 15]),
        op("light_rest", "lab_shift", {"channel": "L", "region": "rest"}, "rest", [-15, -10, -5, 0, 5, 10, 15]),
        op("blur", "gaussian_blur", {"region": "skin"}, "skin", [0, 1, 2, 4]),
        op("hue", "hue_rotate", {"region": "skin"}, "skin", [-20, -10, 0, 10, 20]),
    ]


def skin_tone_measures():
    return [pipeline.MeasureSpec("ita", "measure", "ita", measures.get("ita").params.model_validate({"region": "skin"})),
            pipeline.MeasureSpec("clipping", "covariate", "gamut_clip", covariates.get("gamut_clip").params())]


def synthetic_faces(n: int, size: int, folder: Path) -> list[Path]:
    """PNG files of smooth random images (the decode stage reads real files)."""
    folder.mkdir(parents=True, exist_ok=True)
    base = tm.test_images(8, seed=3)
    paths = []
    for i in range(n):
        img = np.asarray(Image.fromarray(base[i % 8]).resize((size, size), Image.BICUBIC))
        p = folder / f"{i}.png"
        Image.fromarray(img).save(p, compress_level=1)
        paths.append(p)
    return paths


def skin_masks(size: int) -> dict[str, np.ndarray]:
    yy, xx = np.mgrid[0:size, 0:size] / size
    skin = ((xx - 0.5) / 0.22) ** 2 + ((yy - 0.42) / 0.3) ** 2 <= 1.0
    return {"skin": skin, "rest": ~skin}


def build_models(scale: str, device: str, precision: str):
    from scoreaudit.runtime.scorers import make_scorer

    if scale == "official":
        saved = {}  # open_clip's own ViT-L-14-quickgelu / ViT-H-14 configs: the real shapes
        built = tm.build_all(ROOT, scale=OFFICIAL)
    else:
        s = tm.MID if scale == "mid" else tm.TINY
        saved = tm.register_tiny_open_clip(ROOT / "cfgs", scale=s)
        built = tm.build_all(ROOT, scale=s)
    out = {}
    for name, params in SCORERS.items():
        sir = types.SimpleNamespace(name=name, call=types.SimpleNamespace(plugin=name, params=params))
        out[name] = make_scorer(sir, device=device, precision=precision)
    return out, saved, built


def flops_per_image(scorer, image: torch.Tensor) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    scorer.score([image], [PROMPT], [])  # the prompt is encoded (and cached) outside the count
    counter = FlopCounterMode(display=False)
    with counter:
        scorer.score([image], [PROMPT], [])
    return float(counter.get_total_flops())


class Clock:
    """Wall time per stage; on CUDA also device time (events), each stage synchronised at its end."""

    def __init__(self, device: str):
        self.cuda = device.startswith("cuda")
        self.wall: dict[str, float] = {}
        self.busy = 0.0

    def run(self, stage: str, fn, device_stage: bool = True):
        if self.cuda and device_stage:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        t = time.perf_counter()
        out = fn()
        if self.cuda:
            if device_stage:
                end.record()
            torch.cuda.synchronize()
            if device_stage:
                self.busy += start.elapsed_time(end) / 1000.0
        self.wall[stage] = self.wall.get(stage, 0.0) + time.perf_counter() - t
        return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda")
    ap.add_argument("--images", type=int, default=8, help="base images (4125 ≈ the seed paper's 330,000 forwards)")
    ap.add_argument("--size", type=int, default=96, help="image side in pixels")
    ap.add_argument("--scale", choices=("tiny", "mid", "official"), default="tiny")
    ap.add_argument("--precision", choices=("auto", "fp32", "fp16", "bf16"), default="auto")
    ap.add_argument("--group", type=int, default=4, help="base images per scoring call (20 variants each)")
    ap.add_argument("--peak-tflops", type=float, default=None, help="bf16 dense peak of the device")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--mode", choices=("pipeline", "run"), default="pipeline",
                    help="pipeline: the device pipeline alone (default); run: the real runtime, reference vs tensor path")
    a = ap.parse_args()
    device = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
    if a.threads:
        torch.set_num_threads(a.threads)
    load_plugins()
    if a.mode == "run":
        return run_mode(a, device)
    ops, specs = skin_tone_operators(), skin_tone_measures()
    identity = {o.name: operators.get(o.plugin).meta["identity"] for o in ops}
    t0 = time.perf_counter()
    scorers, saved, _ = build_models(a.scale, device, a.precision)
    print(f"models ({a.scale} scale) built in {time.perf_counter() - t0:.1f} s on {device}", file=sys.stderr)
    paths = synthetic_faces(a.images, a.size, ROOT / "images")
    masks = skin_masks(a.size)
    clock = Clock(device)
    forwards = {n: 0 for n in scorers}
    scored = variants_made = 0
    t_start = time.perf_counter()
    for g in range(0, len(paths), a.group):
        group = paths[g: g + a.group]
        decoded = clock.run("decode", lambda: [np.asarray(Image.open(p).convert("RGB")) for p in group], False)
        imgs = clock.run("upload", lambda: [pipeline.DeviceImage.upload(im, masks, device) for im in decoded])
        to_score = [im.image for im in imgs]
        for im in imgs:
            vs = clock.run("operators", lambda: pipeline.variants(im, ops, seed=1))
            fresh = [v for v in vs if not v.is_original]
            variants_made += len(fresh)
            by_op = {o.name: o for o in ops}
            clock.run("measures", lambda: [pipeline.measure(im, v, specs, by_op[v.operator], identity[v.operator])
                                           for v in fresh])
            to_score += [v.image for v in fresh]
        prompts = [PROMPT] * len(to_score)
        for name, s in scorers.items():
            clock.run(f"score {name}", lambda: s.score(to_score, prompts, []))
            forwards[name] += len(to_score)
        scored += len(to_score)
    wall = time.perf_counter() - t_start
    n = len(paths)

    print(f"\nskin-tone audit, device path: {n} base images of {a.size}² px, {variants_made} variants, "
          f"{sum(forwards.values())} forward passes in {wall:.2f} s on {device} ({a.scale} models, precision {a.precision})")
    print(f"{'stage':<24}{'seconds':>10}{'per second':>14}")
    per = {"decode": n, "upload": n, "operators": variants_made, "measures": variants_made}
    for stage, count in per.items():
        sec = clock.wall.get(stage, 0.0)
        print(f"{stage:<24}{sec:>10.3f}{count / sec if sec else float('inf'):>14.1f}  "
              f"{'images' if stage in ('decode', 'upload') else 'variants'}/s")
    peak = a.peak_tflops
    if peak is None and device.startswith("cuda"):
        gpu = torch.cuda.get_device_name()
        peak = next((v for k, v in PEAK_BF16.items() if k in gpu), None)
    sample = pipeline.DeviceImage.upload(np.asarray(Image.open(paths[0]).convert("RGB")), masks, device).image
    print(f"\n{'scorer':<18}{'forwards/s':>12}{'GFLOP/image':>13}{'TFLOP/s':>10}{'% bf16 peak':>13}")
    total_flops = 0.0
    for name, s in scorers.items():
        sec = clock.wall[f"score {name}"]
        rate = forwards[name] / sec
        f = flops_per_image(s, sample)
        total_flops += f * forwards[name]
        share = f"{100 * f * rate / (peak * 1e12):.1f}" if peak else "n/a"
        print(f"{name:<18}{rate:>12.1f}{f / 1e9:>13.4f}{f * rate / 1e12:>10.3f}{share:>13}")
    if device.startswith("cuda"):
        print(f"\ndevice busy: {100 * clock.busy / wall:.1f} % of wall time (upper bound; see the docstring)")
    else:
        print("\ndevice busy: n/a on the CPU (the device is the host)")
    full = 330_000 / (sum(forwards.values()) / wall)
    print(f"at this rate the seed paper's ~330,000 forward passes take {full / 60:.1f} min "
          f"(moonshot: under 10 min on one H200 at --scale official)")
    if peak:
        print(f"whole audit: {total_flops / wall / 1e12:.3f} TFLOP/s, {100 * total_flops / wall / (peak * 1e12):.1f} % "
              f"of the {peak:.0f} TFLOP/s bf16 peak")
    if saved:
        tm.restore_open_clip(saved)
    return 0


def skin_tone_ir(precision: str, batch_size: int):
    """The audit above as the IR `scoreaudit run` executes (mask regions instead of face/skin detection)."""
    from scoreaudit.compiler.ir import (ArmIR, AuditIR, MeasureIR, OperatorIR, PluginCall, RegionCallIR, RegionIR,
                                        ScorerIR, Settings)

    def c(plugin, **params):
        return PluginCall(plugin=plugin, version="1", params=params)

    scorers = {name: ScorerIR(name=name, call=c(name, precision=precision, **params), needs_prompt="prompt" in params)
               for name, params in SCORERS.items()}
    regions = {r: RegionIR(name=r, expr=RegionCallIR(call=c("mask", column=r))) for r in ("skin", "rest")}
    ops = {}
    for o in skin_tone_operators():
        ident = float(operators.get(o.plugin).meta["identity"])
        ops[o.name] = OperatorIR(name=o.name, call=c(o.plugin, **o.params.model_dump(exclude_none=True)),
                                 doses=tuple(float(d) for d in o.doses), identity=ident, pixel_local=True,
                                 region=o.region)
    meas = {"ita": MeasureIR(name="ita", call=c("ita", region="skin"), role="measure", region="skin"),
            "clipping": MeasureIR(name="clipping", call=c("gamut_clip"), role="covariate")}
    arm = ArmIR(name="real", call=c("images", folder="images", manifest="m.csv"), source="images")
    return AuditIR(settings=Settings(title="bench", batch_size=batch_size), scorers=scorers, arms={"real": arm},
                   regions=regions, measures=meas, operators=ops)


def run_mode(a, device: str) -> int:
    """The real runtime on the skin-tone audit: reference path vs tensor path, fresh caches, same process."""
    import pandas as pd

    from scoreaudit.runtime.executor import execute

    t0 = time.perf_counter()
    _, saved, _ = build_models(a.scale, device, a.precision)  # into the HF cache the runtime reads
    print(f"models ({a.scale} scale) built in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    proj = ROOT / "project"
    paths = synthetic_faces(a.images, a.size, proj / "images")
    masks = skin_masks(a.size)
    for name, m in masks.items():
        Image.fromarray((m * 255).astype(np.uint8)).save(proj / "images" / f"{name}.png")
    rows = ["id,path,skin,rest"] + [f"i{k},{p.name},skin.png,rest.png" for k, p in enumerate(paths)]
    (proj / "m.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = proj / "bench.audit"
    spec.write_text('audit "bench" { version: 1 }\n', encoding="utf-8")
    ir = skin_tone_ir(a.precision, max(1, a.group))
    figures = {}
    for path in ("off", "on"):
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        t = time.perf_counter()
        summary = execute(ir, None, spec_path=spec, out_dir=ROOT / f"out-{path}", cache_path=ROOT / f"{path}.sqlite",
                          device=device, progress=False, tensor_path=path)
        wall = time.perf_counter() - t
        forwards = sum(summary.counts["steps"].get("score", {}).values())
        figures[path] = (wall, forwards)
    print(f"\nscoreaudit run, skin-tone audit: {a.images} base images of {a.size}² px, 4 scorers, "
          f"{a.scale} models, precision {a.precision}, device {device}, batch_size {max(1, a.group)}")
    print(f"{'path':<28}{'seconds':>10}{'images/s':>10}{'forwards':>10}{'forwards/s':>12}")
    for path, label in (("off", "reference (--tensor-path off)"), ("on", "tensor path (on)")):
        wall, fw = figures[path]
        print(f"{label:<28}{wall:>10.2f}{a.images / wall:>10.2f}{fw:>10d}{fw / wall:>12.1f}")
    print(f"tensor path / reference wall time: {figures['on'][0] / figures['off'][0]:.2f}")
    m = [pd.read_parquet(ROOT / f"out-{p}" / "tables" / "measures.parquet") for p in ("off", "on")]
    diff = (m[0]["value"] - m[1]["value"]).abs().max()
    print(f"largest measure difference between the paths: {diff:.2e} (each path measures its own variants, which "
          "may differ by one 8-bit level; ITA, an angle, can move by degrees on a few pixels when b* is near 0; "
          "tests/runtime/test_tensor_path.py holds each path's measures to 1e-4 on the same pixels)")
    if saved:
        tm.restore_open_clip(saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
