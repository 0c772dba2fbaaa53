"""Reduced-precision forwards against fp32, per model scorer: max |Δ|, max |Δ| / score SD, Spearman ρ.

For each model scorer, N images are scored in fp32 and then, on the same loaded weights, under
torch.autocast at every reduced precision the device offers (CPU: bf16; CUDA: fp16 and bf16;
--dtypes overrides). Printed per scorer and precision:

  max|Δ|       the largest absolute score difference from fp32, over the N images
  max|Δ|/SD    the same relative to the SD of the fp32 scores across the images (how far a score
               moves against the spread an audit's statistics work with)
  Spearman ρ   rank correlation of the scores with fp32's
  effect Δ/SD  the largest error of a within-photo effect (variant score − original score),
               relative to the SD of those effects in fp32: what an audit's dose contrasts see
  s/image      forward time per image at that precision (CPU bf16 without native bf16 units is
               slower than fp32; the figure says nothing about a GPU)

Weights: the official files when they are in the Hugging Face cache (`scoreaudit weights`);
otherwise random weights of the official architecture (open_clip's own ViT-L-14-quickgelu,
ViT-H-14 and ViT-B-32 configs; transformers CLIP ViT-H/14; BLIP ViT-L/16 + 12-layer BERT),
built locally into a temporary fake cache, nothing downloaded. Random weights are NOT the
official ones: their activations lack the trained models' outlier features, so the figures are a
proxy (fp16 overflow in particular cannot show on them). The output says which was used.
--scale mid uses ViT-B-sized stand-ins (documented reduction for slow machines).

Images: four photos shipped with scikit-image (astronaut, chelsea, coffee, rocket), each as
is, brightened, hue-mixed and blurred (16 images by default).

    python bench/precision.py                       # this machine's device, all five scorers
    python bench/precision.py --device cuda         # fp16 and bf16 autocast against fp32
    python bench/precision.py --scorers hpsv2 --json out.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

USER_CACHE = os.environ.get("HF_HUB_CACHE")  # the user's cache: official weights are looked up there first
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image, ImageFilter  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

from scoreaudit.registry import load_plugins, scorers  # noqa: E402
from scoreaudit.testing import tiny_models as tm  # noqa: E402

PROMPT = "a portrait photo of a smiling person"  # BERT words the random ImageReward vocabulary knows
SCORERS = {"laion_aesthetic": {}, "pickscore": {"prompt": PROMPT}, "image_reward": {"prompt": PROMPT},
           "hpsv2": {"prompt": PROMPT, "version": "2.1"}, "clip_score": {"prompt": PROMPT}}
VARIANTS = 4  # per photo: original, brighter, hue-mixed, blurred


def images(n: int) -> list[np.ndarray]:
    """n images: photos × VARIANTS, in that order (variant 0 of each photo is the original)."""
    import skimage.data as data

    photos = [data.astronaut(), data.chelsea(), data.coffee(), data.rocket()]
    mix = np.array([[0.85, 0.15, 0.0], [0.0, 0.85, 0.15], [0.15, 0.0, 0.85]])
    out = []
    for k in range(-(-n // VARIANTS)):
        p = photos[k % len(photos)]
        if k >= len(photos):  # more images than photos: shifted crops
            p = p[k % 7 * 9:, k % 5 * 11:]
        f = p.astype(np.float64)
        out += [p, np.clip(f * 1.15 + 10, 0, 255).astype(np.uint8), np.clip(f @ mix.T, 0, 255).astype(np.uint8),
                np.asarray(Image.fromarray(p).filter(ImageFilter.GaussianBlur(2)))]
    return out[:n]


def official_ready(name: str, params: dict) -> bool:
    if USER_CACHE is None:
        os.environ.pop("HF_HUB_CACHE", None)
    else:
        os.environ["HF_HUB_CACHE"] = USER_CACHE
    e = scorers.get(name)
    ok, _ = e.impl.readiness(e.params(**params))
    return ok


def build_random(name: str, cache: Path, scale: str) -> None:
    """Random weights of `name`'s official architecture (or the mid stand-in) into a fake HF cache."""
    s = tm.OFFICIAL if scale == "official" else tm.MID
    if name == "laion_aesthetic":
        head = tm.laion_head_state(1, in_dim=tm.open_clip_state_dim("ViT-L-14-quickgelu"))
        torch.save(head, tm.hf_snapshot(cache, "camenduru/improved-aesthetic-predictor") / "sac+logos+ava1-l14-linearMSE.pth")
        tm.save_safetensors(tm.open_clip_state("ViT-L-14-quickgelu", 2),
                            tm.hf_snapshot(cache, "timm/vit_large_patch14_clip_224.openai") / "open_clip_model.safetensors")
    elif name == "hpsv2":
        torch.save({"state_dict": tm.open_clip_state("ViT-H-14", 3)},
                   tm.hf_snapshot(cache, "xswu/HPSv2") / "HPS_v2.1_compressed.pt")
    elif name == "clip_score":
        tm.save_safetensors(tm.open_clip_state("ViT-B-32", 5),
                            tm.hf_snapshot(cache, "timm/vit_base_patch32_clip_224.openai") / "open_clip_model.safetensors")
    elif name == "pickscore":
        tm.build_pickscore(cache, None, 0, s)
    elif name == "image_reward":
        tm.build_image_reward(cache, None, 0, s)
    gc.collect()


def timed_scores(scorer, imgs, prompts, batch: int) -> tuple[np.ndarray, float]:
    scorer.batch_size = batch
    t = time.perf_counter()
    out = scorer.score(imgs, prompts, [])
    if str(scorer.device).startswith("cuda"):
        torch.cuda.synchronize()
    return out, (time.perf_counter() - t) / len(imgs)


def compare(ref: np.ndarray, got: np.ndarray) -> dict:
    d = np.abs(got - ref)
    sd = float(ref.std(ddof=1))
    eff_ref = (ref.reshape(-1, VARIANTS)[:, 1:] - ref.reshape(-1, VARIANTS)[:, :1]).ravel()
    eff_got = (got.reshape(-1, VARIANTS)[:, 1:] - got.reshape(-1, VARIANTS)[:, :1]).ravel()
    eff_sd = float(eff_ref.std(ddof=1))
    return {"max_abs": float(d.max()), "sd_fp32": sd, "max_rel_sd": float(d.max() / sd) if sd > 0 else float("nan"),
            "spearman": float(spearmanr(ref, got).statistic),
            "effect_max_rel_sd": float(np.abs(eff_got - eff_ref).max() / eff_sd) if eff_sd > 0 else float("nan")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda")
    ap.add_argument("--images", type=int, default=16, help="a multiple of 4 (photos × variants)")
    ap.add_argument("--scorers", nargs="*", default=list(SCORERS), choices=list(SCORERS))
    ap.add_argument("--dtypes", default=None, help="comma-separated (default: bf16 on CPU, fp16,bf16 on CUDA)")
    ap.add_argument("--scale", choices=("official", "mid"), default="official",
                    help="random weights when the official ones are not cached: official shapes, or ViT-B-sized")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--json", default=None, help="also write the results here")
    a = ap.parse_args()
    if a.images % VARIANTS:
        ap.error(f"--images must be a multiple of {VARIANTS}")
    device = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
    dtypes = a.dtypes.split(",") if a.dtypes else (["fp16", "bf16"] if device.startswith("cuda") else ["bf16"])
    load_plugins()
    imgs = images(a.images)
    gpu = torch.cuda.get_device_name() if device.startswith("cuda") else ""
    cpu = torch.backends.cpu.get_cpu_capability()
    print(f"device {device} {gpu or f'(CPU capability {cpu}, {torch.get_num_threads()} threads)'}, torch {torch.__version__}, "
          f"{len(imgs)} images, autocast {', '.join(dtypes)} vs fp32")
    results = []
    for name in a.scorers:
        params = SCORERS[name]
        official = official_ready(name, params)
        tmp = None
        saved_cfgs = None
        if not official:
            tmp = Path(tempfile.mkdtemp(prefix="scoreaudit-bench-precision-"))
            os.environ["HF_HUB_CACHE"] = str(tmp / "hf")
            if a.scale == "mid":
                saved_cfgs = tm.register_tiny_open_clip(tmp / "cfgs", scale=tm.MID)
            build_random(name, tmp / "hf", a.scale)
        weights = "official" if official else f"random ({a.scale} architecture)"
        try:
            e = scorers.get(name)
            scorer = e.impl(e.params(**params), device, "fp32")
            prompts = None if name == "laion_aesthetic" else [PROMPT] * len(imgs)
            scorer.score(imgs[:1], None if prompts is None else prompts[:1], [])  # warm-up; the prompt is cached
            ref, t32 = timed_scores(scorer, imgs, prompts, a.batch)
            row = {"scorer": name, "weights": weights, "device": device, "fp32_s_per_image": t32,
                   "fp32_scores": ref.tolist(), "by_precision": {}}
            print(f"\n{name} [{weights}]: fp32 {t32:.2f} s/image, scores mean {ref.mean():.4g}, SD {ref.std(ddof=1):.4g}")
            print(f"  {'precision':<16}{'max|Δ|':>12}{'max|Δ|/SD':>12}{'Spearman ρ':>12}{'effect Δ/SD':>13}{'s/image':>10}")
            for dt in dtypes:
                scorer.use_precision(dt)
                got, t = timed_scores(scorer, imgs, prompts, a.batch)
                c = compare(ref, got)
                c["s_per_image"] = t
                row["by_precision"][dt] = c
                print(f"  {dt + ' autocast':<16}{c['max_abs']:>12.4g}{c['max_rel_sd']:>12.4f}{c['spearman']:>12.4f}"
                      f"{c['effect_max_rel_sd']:>13.4f}{t:>10.2f}")
            results.append(row)
            del scorer
        finally:
            gc.collect()
            if saved_cfgs is not None:
                tm.restore_open_clip(saved_cfgs)
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        sys.stdout.flush()
    if a.json:
        Path(a.json).write_text(json.dumps({"device": device, "gpu": gpu, "cpu_capability": cpu,
                                            "torch": torch.__version__, "images": len(imgs), "results": results},
                                           indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
