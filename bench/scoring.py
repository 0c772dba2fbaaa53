"""Scoring throughput of the model scorers on small random models (offline, CPU or GPU).

For each scorer, on the same images: the runtime path (runtime.scorers.make_scorer →
scorer.score on the runtime's batches, preprocessing included), the bare model forward on the
same batches already preprocessed (image side only: the runtime encodes each distinct prompt
once per scorer, so after the warm-up its text cost is nil; ImageReward's text encoder attends
to the image, so its bare forward is the whole model on pre-tokenised prompts), and the official per-image API loop (PIL preprocessing, one image per forward, as the
packages do). Targets: runtime ≥ 0.85 × bare forward, runtime ≥ 5 × the official loop.

Runtime and bare forward are timed in alternating rounds (best of --repeat each), so a
machine shared with other jobs slows both alike.

    python bench/scoring.py [--n 64] [--batch 32] [--device cpu] [--threads N] [--scale tiny|mid]

--scale tiny: the test models (32 px input; preprocessing a 256×192 image costs about as much
as the forward). --scale mid: ViT-B/32 CLIPs and a BLIP ViT-B/16 ImageReward at 224 px, where
the forward dominates as it does with the official models (use a smaller --n on a CPU).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(tempfile.mkdtemp(prefix="scoreaudit-bench-"))
os.environ.update({"HF_HUB_CACHE": str(ROOT / "hf"), "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(ROOT / "xdg")})
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "models"))  # ir_reference

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image  # noqa: E402

from scoreaudit.testing import tiny_models as tm  # noqa: E402


def best_time(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def paired_rates(runtime, bare, n_images: int, repeat: int) -> tuple[float, float]:
    """Images/s of both, timed in alternating rounds after one warm-up each."""
    runtime(), bare()
    rt = bb = float("inf")
    for _ in range(repeat):
        rt = min(rt, best_time(runtime, 1))
        bb = min(bb, best_time(bare, 1))
    return n_images / rt, n_images / bb


def make(name, args, device):
    from scoreaudit.runtime.scorers import make_scorer

    ir = types.SimpleNamespace(name=name, call=types.SimpleNamespace(plugin=name, params=args))
    return make_scorer(ir, device=device, precision="fp32")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=max(1, os.cpu_count() or 1))
    ap.add_argument("--scale", choices=("tiny", "mid"), default="tiny")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated scorer names")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    scale = tm.MID if a.scale == "mid" else tm.TINY
    only = set(filter(None, a.only.split(",")))
    want = (lambda name: not only or name in only)
    sync = torch.cuda.synchronize if a.device.startswith("cuda") else (lambda: None)
    saved = tm.register_tiny_open_clip(ROOT / "cfgs", scale=scale)
    try:
        tiny = tm.build_all(ROOT, scale=scale)
        imgs = (tm.test_images(8, seed=1) * (a.n // 8 + 1))[: a.n]
        imgs = [np.asarray(Image.fromarray(im).resize((256, 192))) for im in imgs]  # a realistic resize step
        prompts = [tm.PROMPTS[i % 3] for i in range(a.n)]
        batches = [slice(i, min(i + a.batch, a.n)) for i in range(0, a.n, a.batch)]
        rows = []

        def runtime_fn(s):
            def run():
                for b in batches:
                    s.score(imgs[b], prompts[b], [])
                sync()
            return run

        def rates(name, s, bare, official, off_repeat):
            rt, bb = paired_rates(runtime_fn(s), bare, a.n, a.repeat)
            official()  # warm-up
            rows.append((name, rt, bb, a.n / best_time(official, off_repeat)))

        # --- open_clip scorers
        import open_clip

        for name, args, arch, tag in (("laion_aesthetic", {}, "ViT-L-14-quickgelu", "openai"),
                                      ("hpsv2", {"prompt": "x"}, "ViT-H-14", None),
                                      ("clip_score", {}, "ViT-B-32", "openai")):
            if not want(name):
                continue
            s = make(name, args, a.device)
            clip = s.impl.clip
            pre = [clip.pre.batch(imgs[b], a.device, clip.dtype) for b in batches]

            def bare(clip=clip, pre=pre):
                with torch.inference_mode(), clip.precision.forward():  # the runtime's precision
                    for x in pre:
                        clip.model.encode_image(x)
                sync()

            model, _, ppil = open_clip.create_model_and_transforms(arch, pretrained=tag)
            model.eval()
            tok = open_clip.get_tokenizer(arch)

            def official(model=model, ppil=ppil, tok=tok, text=clip.tokenizer is not None):
                with torch.inference_mode():
                    for im, p in zip(imgs, prompts):
                        x = ppil(Image.fromarray(im)).unsqueeze(0)
                        model.encode_image(x)
                        if text:
                            model.encode_text(tok([p]))

            rates(name, s, bare, official, 1)

        # --- PickScore
        if want("pickscore"):
            from transformers import AutoModel, AutoProcessor

            s = make("pickscore", {}, a.device)
            impl = s.impl
            pre = [impl.pre.batch(imgs[b], a.device, impl.dtype) for b in batches]

            def bare_pick():
                with torch.inference_mode(), impl.precision.forward():
                    for x in pre:
                        impl.model.visual_projection(impl.model.vision_model(pixel_values=x).pooler_output)
                sync()

            proc = AutoProcessor.from_pretrained(tm.PICK_PROCESSOR_REPO, use_fast=False)
            model = AutoModel.from_pretrained(tm.PICK_REPO).eval()

            def official_pick():
                with torch.inference_mode():
                    for im, p in zip(imgs, prompts):
                        ii = proc(images=[Image.fromarray(im)], return_tensors="pt")
                        ti = proc(text=p, padding=True, truncation=True, max_length=77, return_tensors="pt")
                        model.get_image_features(**ii)
                        model.get_text_features(**ti)

            rates("pickscore", s, bare_pick, official_pick, 1)

        # --- ImageReward (official: the package's per-image score(), transcribed in ir_reference)
        if want("image_reward"):
            import ir_reference
            from transformers import BertTokenizer

            s = make("image_reward", {}, a.device)
            impl = s.impl
            pre = [impl.pre.batch(imgs[b], a.device, impl.dtype) for b in batches]
            ids, mask = impl._tokens(prompts)
            text = [impl.trim(ids[b], mask[b]) for b in batches]  # the inputs the runtime gives the model

            def bare_ir():
                with torch.inference_mode():
                    for x, t in zip(pre, text):
                        impl._reward(x, *t)
                sync()

            tok = BertTokenizer.from_pretrained(tm.BERT_REPO)
            tok.add_special_tokens({"bos_token": "[DEC]"})
            tok.add_special_tokens({"additional_special_tokens": ["[ENC]"]})
            sd = {k: v.float() for k, v in tiny["ir_state"].items()}
            vit = scale.ir_vit
            cfg = dict(tiny["med"], encoder_width=vit["dim"])

            def official_ir():
                for im, p in zip(imgs, prompts):
                    ir_reference.score(sd, cfg, tok, p, Image.fromarray(im), vit["image_size"], vit["dim"] // 64)

            rates("image_reward", s, bare_ir, official_ir, 1)
    finally:
        tm.restore_open_clip(saved)

    print(f"{a.scale} models ({scale.image} px input), {a.n} images of 256×192, batches of {a.batch}, "
          f"device {a.device}, {torch.get_num_threads()} threads (images/s)")
    print(f"{'scorer':16} {'runtime':>9} {'bare fwd':>9} {'official':>9} {'rt/bare':>8} {'rt/official':>11}")
    ok = True
    for name, rt, bare, off in rows:
        r1, r2 = rt / bare, rt / off
        ok &= r1 >= 0.85 and r2 >= 5
        print(f"{name:16} {rt:9.1f} {bare:9.1f} {off:9.1f} {r1:8.2f} {r2:11.1f}")
    print("targets (runtime >= 0.85x bare, >= 5x official):", "met" if ok else "NOT met")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
