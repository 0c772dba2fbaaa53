"""Benchmark of the operator stage: throughput vs a naive implementation, and streamed memory.

The stage, per image: decode a PNG file, regions face() and skin(within: face),
a 7-dose lab_shift(channel: L, region: skin) sweep, and the measures ita,
gamut_clip and leakage on every dose. Images are generated procedurally
(affine-jittered, colour-jittered, noisy copies of skimage's astronaut, so
faces are found), written as PNG files first.

- fast:  scoreaudit's path (runtime.images.decode_image, RegionEvaluator,
         LabShift.sweep: region pixels → CIELAB once per image, float32).
- naive: the obvious path: per image and per dose, skimage rgb2lab of the
         whole image, shift, lab2rgb, paste into the region, then rgb2lab of
         the variant for ITA (same regions, same decode).
- memory: peak RSS (ru_maxrss) of child processes that stream the fast stage
         over 200 and 2,000 images (files cycled from a pool; results kept as
         plain rows), which should stay flat.

Usage (from the repository root):
    python bench/operators.py            # default, ~1.5-2 min on 2 cores
    python bench/operators.py --quick    # smoke run, ~30 s
    python bench/operators.py --n 60 --mem-sizes 200,2000 --mem-size 512   # the full-size version
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DOSES = (-15.0, -10.0, -5.0, 0.0, 5.0, 10.0, 15.0)


def make_images(folder: Path, n: int, size: int, seed: int = 0) -> list[Path]:
    """n procedural PNGs of side `size` (astronaut jittered in pose, colour and noise)."""
    import cv2
    from skimage import data

    base = cv2.resize(data.astronaut(), (size, size), interpolation=cv2.INTER_AREA).astype(np.float32)
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        scale = rng.uniform(0.85, 1.15)
        angle = rng.uniform(-8, 8)
        m = cv2.getRotationMatrix2D((size / 2, size / 2), angle, scale)
        m[:, 2] += rng.uniform(-0.08, 0.08, 2) * size
        img = cv2.warpAffine(base, m, (size, size), borderMode=cv2.BORDER_REFLECT_101)
        if rng.random() < 0.5:
            img = img[:, ::-1]
        img = img * rng.uniform(0.8, 1.15, 3) + rng.uniform(-15, 15)  # white balance, exposure
        img = img + rng.normal(0, 3, img.shape)
        path = folder / f"img{i:05d}.png"
        cv2.imwrite(str(path), np.clip(np.rint(img), 0, 255).astype(np.uint8)[..., ::-1],
                    [cv2.IMWRITE_PNG_COMPRESSION, 1])
        paths.append(path)
    return paths


def build_stage():
    from scoreaudit.compiler import ir
    from scoreaudit.registry import covariates, load_plugins, measures, operators
    from scoreaudit.runtime.regions import RegionEvaluator

    load_plugins()

    def call(plugin, **params):
        return ir.RegionCallIR(call=ir.PluginCall(plugin=plugin, version="1", params=params))

    regions = RegionEvaluator({
        "face": ir.RegionIR(name="face", expr=call("face")),
        "skin": ir.RegionIR(name="skin", expr=call("skin", within="face"), depends_on=("face",)),
    })
    op = operators.get("lab_shift").impl(operators.get("lab_shift").validate({"channel": "L", "region": "skin"}))
    meas = {
        "ita": measures.get("ita").impl(measures.get("ita").validate({"region": "skin"})),
        "gamut_clip": covariates.get("gamut_clip").impl(covariates.get("gamut_clip").validate({})),
        "leakage": covariates.get("leakage").impl(covariates.get("leakage").validate({})),
    }
    return regions, op, meas


def fast_image(path: Path, stage) -> list[tuple[float, str, float]]:
    from scoreaudit.plugins.base import MeasureContext
    from scoreaudit.runtime.images import decode_image

    regions, op, meas = stage
    image = decode_image(path)
    res = regions.evaluate(image, {}, path.parent)
    skin = res.masks["skin"]
    rows = []
    for dose, out in zip(DOSES, op.sweep(image, skin, DOSES, seed=0)):
        ctx = MeasureContext(image, out.image, res.masks, skin, out.info, dose, 0.0)
        rows += [(dose, name, m.compute(ctx)) for name, m in meas.items()]
    return rows


def naive_image(path: Path, stage) -> list[tuple[float, str, float]]:
    from skimage.color import lab2rgb, rgb2lab

    from scoreaudit.runtime.images import decode_image

    regions, _, _ = stage
    image = decode_image(path)
    res = regions.evaluate(image, {}, path.parent)
    skin = res.masks["skin"]
    rows = []
    for dose in DOSES:
        lab = rgb2lab(image)
        lab[..., 0] += dose
        back = lab2rgb(lab)
        clipped = ((back * 255 < -0.5) | (back * 255 > 255.5)).any(axis=2)  # lab2rgb clips: ~0
        variant = image.copy()
        variant[skin] = np.rint(np.clip(back[skin], 0, 1) * 255).astype(np.uint8)
        vlab = rgb2lab(variant)[skin]
        ita = float(np.median(np.degrees(np.arctan2(vlab[:, 0] - 50, vlab[:, 2])))) if skin.any() else np.nan
        changed = (np.abs(variant.astype(int) - image).max(axis=2) > 1) & ~skin
        rows += [(dose, "ita", ita), (dose, "gamut_clip", float(clipped[skin].mean()) if skin.any() else 0.0),
                 (dose, "leakage", float(changed.sum() / max(1, (~skin).sum())))]
    return rows


def throughput(paths: list[Path], fn, stage) -> tuple[float, list]:
    fn(paths[0], stage)  # warm-up (imports, cascade load)
    start = time.perf_counter()
    out = [fn(p, stage) for p in paths]
    return len(paths) / (time.perf_counter() - start), out


def child_stream(folder: Path, n: int) -> None:
    """Stream the fast stage over n images (cycling the pool); print peak RSS in MiB as JSON."""
    paths = sorted(folder.glob("*.png"))
    stage = build_stage()
    rows = []
    start = time.perf_counter()
    for i in range(n):
        rows.extend(fast_image(paths[i % len(paths)], stage))
    elapsed = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    print(json.dumps({"n": n, "rows": len(rows), "seconds": elapsed, "peak_mib": peak_kib / 1024}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small smoke run (~30 s)")
    ap.add_argument("--n", type=int, default=None, help="images for the throughput comparison (default 20)")
    ap.add_argument("--size", type=int, default=512, help="image side for the throughput comparison")
    ap.add_argument("--mem-sizes", default=None, help="image counts for the memory runs (default 200,2000)")
    ap.add_argument("--mem-size", type=int, default=None, help="image side for the memory runs (default 128)")
    ap.add_argument("--child-stream", nargs=2, metavar=("FOLDER", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_stream:
        child_stream(Path(args.child_stream[0]), int(args.child_stream[1]))
        return 0
    n = args.n or (8 if args.quick else 20)
    mem_sizes = [int(x) for x in (args.mem_sizes or ("50,500" if args.quick else "200,2000")).split(",")]
    mem_side = args.mem_size or (96 if args.quick else 128)

    with tempfile.TemporaryDirectory(prefix="scoreaudit-bench-") as tmp:
        tmp = Path(tmp)
        paths = make_images(tmp / "tput", n, args.size)
        stage = build_stage()
        fast_rate, fast_rows = throughput(paths, fast_image, stage)
        naive_rate, naive_rows = throughput(paths, naive_image, stage)
        f = np.array([[v for _, name, v in rows if name == "ita"] for rows in fast_rows], float)
        g = np.array([[v for _, name, v in rows if name == "ita"] for rows in naive_rows], float)
        agree = np.nanmax(np.abs(f - g)) if np.isfinite(f).any() else float("nan")
        found = int(np.isfinite(f[:, 0]).sum())
        print(f"operator stage, {n} images {args.size}×{args.size}, faces found in {found}, "
              f"{len(DOSES)}-dose lab_shift + ita, gamut_clip, leakage")
        print(f"  fast  (scoreaudit):           {fast_rate:7.2f} images/s")
        print(f"  naive (skimage per dose):     {naive_rate:7.2f} images/s")
        print(f"  speed-up:                     {fast_rate / naive_rate:7.2f}x   (target >= 5x)")
        print(f"  max |ITA fast - ITA naive|:   {agree:7.3f} degrees")

        pool = tmp / "pool"
        make_images(pool, 50, mem_side, seed=1)
        print(f"streamed stage, peak memory (child processes, {mem_side}×{mem_side} images "
              f"cycled from a pool of 50):")
        peaks = []
        for count in mem_sizes:
            proc = subprocess.run([sys.executable, __file__, "--child-stream", str(pool), str(count)],
                                  capture_output=True, text=True, check=True)
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            peaks.append(res["peak_mib"])
            print(f"  {count:6d} images: peak RSS {res['peak_mib']:7.1f} MiB  "
                  f"({count / res['seconds']:.1f} images/s)")
        if len(peaks) > 1:
            print(f"  growth from {mem_sizes[0]} to {mem_sizes[-1]} images: "
                  f"{peaks[-1] - peaks[0]:+.1f} MiB ({(peaks[-1] / peaks[0] - 1) * 100:+.1f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
