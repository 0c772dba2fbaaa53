"""Scoring throughput of the model scorers on tiny models (offline, CPU or GPU).

For each scorer, on the same images: the runtime path (runtime.scorers.make_scorer →
scorer.score on batches), the bare model forward on already-preprocessed batches, and the
official per-image API loop (PIL preprocessing, one image per forward, as the packages do).
Targets: runtime ≥ 0.85 × bare forward, runtime ≥ 5 × the official per-image loop.

    python bench/scoring.py [--n 64] [--batch 32] [--device cpu]
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "models"))

import numpy as np  # noqa: E402
import torch  # noqa: E402
import tiny_models as tm  # noqa: E402
from PIL import Image  # noqa: E402


def rate(fn, n_images, repeat=3):
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return n_images / best


def make(name, args, device):
    from scoreaudit.runtime.scorers import make_scorer

    ir = types.SimpleNamespace(name=name, call=types.SimpleNamespace(plugin=name, params=args))
    return make_scorer(ir, device=device, precision="fp32")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    saved = tm.register_tiny_open_clip(ROOT / "cfgs")
    try:
        tiny = tm.build_all(ROOT)
        imgs = (tm.test_images(8, seed=1) * (a.n // 8 + 1))[: a.n]
        imgs = [np.asarray(Image.fromarray(im).resize((256, 192))) for im in imgs]  # a realistic resize step
        prompts = [tm.PROMPTS[i % 3] for i in range(a.n)]
        batches = [slice(i, min(i + a.batch, a.n)) for i in range(0, a.n, a.batch)]
        rows = []

        def runtime_fn(s):
            return lambda: [s.score(imgs[b], prompts[b], []) for b in batches]

        # --- open_clip scorers
        import open_clip

        for name, args, arch, tag in (("laion_aesthetic", {}, "ViT-L-14-quickgelu", "openai"),
                                      ("hpsv2", {"prompt": "x"}, "ViT-H-14", None),
                                      ("clip_score", {}, "ViT-B-32", "openai")):
            s = make(name, args, a.device)
            clip = s.impl.clip
            pre = [clip.pre.batch(imgs[b], a.device, clip.dtype) for b in batches]
            tokens = clip.tokenizer(prompts).to(a.device) if clip.tokenizer else None

            def bare(clip=clip, pre=pre, tokens=tokens):
                with torch.inference_mode():
                    for x, b in zip(pre, batches):
                        clip.model.encode_image(x)
                    if tokens is not None:  # text once per distinct prompt, as the runtime does
                        clip.model.encode_text(tokens[:3])

            model, _, ppil = open_clip.create_model_and_transforms(arch, pretrained=tag)
            model.eval()
            tok = open_clip.get_tokenizer(arch)

            def official(model=model, ppil=ppil, tok=tok, text=tokens is not None):
                with torch.inference_mode():
                    for im, p in zip(imgs, prompts):
                        x = ppil(Image.fromarray(im)).unsqueeze(0)
                        model.encode_image(x)
                        if text:
                            model.encode_text(tok([p]))

            rows.append((name, rate(runtime_fn(s), a.n), rate(bare, a.n), rate(official, a.n, 1)))

        # --- PickScore
        from transformers import AutoModel, AutoProcessor

        s = make("pickscore", {}, a.device)
        impl = s.impl
        pre = [impl.pre.batch(imgs[b], a.device, impl.dtype) for b in batches]

        def bare_pick():
            with torch.inference_mode():
                for x in pre:
                    impl.model.visual_projection(impl.model.vision_model(pixel_values=x).pooler_output)

        proc = AutoProcessor.from_pretrained("laion/CLIP-ViT-H-14-laion2B-s32B-b79K", use_fast=False)
        model = AutoModel.from_pretrained("yuvalkirstain/PickScore_v1").eval()

        def official_pick():
            with torch.inference_mode():
                for im, p in zip(imgs, prompts):
                    ii = proc(images=[Image.fromarray(im)], return_tensors="pt")
                    ti = proc(text=p, padding=True, truncation=True, max_length=77, return_tensors="pt")
                    model.get_image_features(**ii)
                    model.get_text_features(**ti)

        rows.append(("pickscore", rate(runtime_fn(s), a.n), rate(bare_pick, a.n), rate(official_pick, a.n, 1)))

        # --- ImageReward (official: the package's per-image score(); transcribed forward in ir_reference)
        import ir_reference
        from transformers import BertTokenizer

        s = make("image_reward", {}, a.device)
        impl = s.impl
        pre = [impl.pre.batch(imgs[b], a.device, impl.dtype) for b in batches]
        ids, mask = impl._tokens(prompts)

        def bare_ir():
            with torch.inference_mode():
                for x, b in zip(pre, batches):
                    impl.model(x, ids[b], mask[b])

        tok = BertTokenizer.from_pretrained("bert-base-uncased")
        tok.add_special_tokens({"bos_token": "[DEC]"})
        tok.add_special_tokens({"additional_special_tokens": ["[ENC]"]})
        sd = {k: v.float() for k, v in tiny["ir_state"].items()}
        cfg = dict(tiny["med"], encoder_width=tm.TINY_VIT["dim"])

        def official_ir():
            for im, p in zip(imgs, prompts):
                ir_reference.score(sd, cfg, tok, p, Image.fromarray(im), tm.TINY_IMAGE, tm.TINY_VIT["dim"] // 64)

        rows.append(("image_reward", rate(runtime_fn(s), a.n), rate(bare_ir, a.n), rate(official_ir, a.n, 1)))
    finally:
        tm.restore_open_clip(saved)

    print(f"tiny models, {a.n} images of 256×192, batches of {a.batch}, device {a.device}, "
          f"{torch.get_num_threads()} threads (images/s)")
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
