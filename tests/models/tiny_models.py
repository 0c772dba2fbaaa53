"""Tiny, randomly initialised models of the five scorers' architectures, saved where a user's
official files would be: a local folder and a fake Hugging Face cache.

Used by tests/models and bench/scoring.py. Everything is built offline in a few seconds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import torch

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OPENAI_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_STD = [0.26862954, 0.26130258, 0.27577711]
TINY_IMAGE = 32


def hf_snapshot(cache: Path, repo: str) -> Path:
    """Create models--org--name/refs/main → COMMIT and return snapshots/COMMIT/."""
    root = Path(cache) / ("models--" + repo.replace("/", "--"))
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(COMMIT)
    snap = root / "snapshots" / COMMIT
    snap.mkdir(parents=True, exist_ok=True)
    return snap


def tiny_open_clip_cfg(quick_gelu: bool) -> dict:
    return {
        "embed_dim": 32,
        "quick_gelu": quick_gelu,
        "vision_cfg": {"image_size": TINY_IMAGE, "layers": 2, "width": 64, "head_width": 32, "patch_size": 8},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
    }


def register_tiny_open_clip(folder: Path, names=("ViT-L-14-quickgelu", "ViT-H-14", "ViT-B-32")) -> dict:
    """Register tiny configs under the real architecture names (open_clip.add_model_config).

    Returns the previous configs so a caller can restore them.
    """
    import open_clip
    from open_clip import factory

    saved = {n: factory._MODEL_CONFIGS.get(n) for n in names}
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for n in names:
        (folder / f"{n}.json").write_text(json.dumps(tiny_open_clip_cfg("quickgelu" in n)))
    open_clip.add_model_config(folder)
    return saved


def restore_open_clip(saved: dict) -> None:
    from open_clip import factory

    for n, cfg in saved.items():
        if cfg is None:
            factory._MODEL_CONFIGS.pop(n, None)
        else:
            factory._MODEL_CONFIGS[n] = cfg


def _seeded(seed: int):
    torch.manual_seed(seed)


def open_clip_state(name: str, seed: int) -> dict:
    import open_clip

    _seeded(seed)
    model = open_clip.create_model(name, pretrained=None)
    with torch.no_grad():  # make the logit scale and projections non-trivial
        for p in model.parameters():
            if p.ndim >= 2:
                p.add_(0.02 * torch.randn_like(p))
    return {k: v.contiguous() for k, v in model.state_dict().items()}


def save_safetensors(state: dict, path: Path) -> Path:
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    return path


def laion_head_state(seed: int, in_dim: int = 32) -> dict:
    _seeded(seed)
    dims = [in_dim, 1024, 128, 64, 16, 1]
    layers = {}
    for idx, (a, b) in zip((0, 2, 4, 6, 7), zip(dims[:-1], dims[1:])):
        layers[f"layers.{idx}.weight"] = torch.randn(b, a) / a ** 0.5
        layers[f"layers.{idx}.bias"] = 0.1 * torch.randn(b)
    return layers


# ---------------------------------------------------------------- CLIP tokenizer (transformers)


def write_clip_tokenizer(folder: Path) -> None:
    """A real CLIP BPE tokenizer for transformers, from open_clip's bundled vocabulary."""
    from open_clip.tokenizer import SimpleTokenizer

    st = SimpleTokenizer()
    folder = Path(folder)
    vocab = {tok: i for tok, i in st.encoder.items() if i < 49406}
    vocab.update({"<|startoftext|>": 49406, "<|endoftext|>": 49407})  # HF's names for open_clip's two specials
    assert len(vocab) == 49408, len(vocab)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    merges = sorted(st.bpe_ranks.items(), key=lambda kv: kv[1])
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(" ".join(m) for m, _ in merges) + "\n")
    specials = {"bos_token": "<|startoftext|>", "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
                "pad_token": "<|endoftext|>"}
    (folder / "special_tokens_map.json").write_text(json.dumps(specials))
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {**specials, "model_max_length": 77, "do_lower_case": True, "tokenizer_class": "CLIPTokenizer"}))


def write_clip_processor(folder: Path, size: int = TINY_IMAGE) -> None:
    write_clip_tokenizer(folder)
    (folder / "preprocessor_config.json").write_text(json.dumps({
        "crop_size": size, "do_center_crop": True, "do_normalize": True, "do_resize": True,
        "feature_extractor_type": "CLIPFeatureExtractor", "image_processor_type": "CLIPImageProcessor",
        "image_mean": OPENAI_MEAN, "image_std": OPENAI_STD, "resample": 3, "size": size,
        "processor_class": "CLIPProcessor"}))
    if not (folder / "config.json").exists():
        (folder / "config.json").write_text(json.dumps({"model_type": "clip"}))


def tiny_clip_model(seed: int):
    from transformers import CLIPConfig, CLIPModel

    _seeded(seed)
    cfg = CLIPConfig(
        text_config=dict(vocab_size=49408, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=77, bos_token_id=49406, eos_token_id=49407,
                         pad_token_id=1),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=TINY_IMAGE, patch_size=8),
        projection_dim=16,
    )
    model = CLIPModel(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.ndim >= 2:
                p.add_(0.05 * torch.randn_like(p))
    return model


# ---------------------------------------------------------------- ImageReward (BLIP)

BERT_WORDS = ["a", "photo", "of", "person", "cat", "dog", "red", "the", "woman", "man", "smiling", "portrait",
              "in", "garden", "##s", "##ing", "blue", "sky", ",", "."]
BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write_bert_tokenizer(folder: Path) -> int:
    """A tiny uncased WordPiece vocabulary; returns the vocab size with BLIP's two added tokens."""
    folder = Path(folder)
    vocab = BERT_SPECIALS + BERT_WORDS
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True, "model_max_length": 512}))
    if not (folder / "config.json").exists():
        (folder / "config.json").write_text(json.dumps({"model_type": "bert"}))
    return len(vocab) + 2


def tiny_med_config(vocab_size: int) -> dict:
    """The official med_config.json with fewer layers and a small vocabulary (hidden size stays 768)."""
    return {
        "architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 256,
        "layer_norm_eps": 1e-12, "max_position_embeddings": 64, "model_type": "bert", "num_attention_heads": 12,
        "num_hidden_layers": 2, "pad_token_id": 0, "type_vocab_size": 2, "vocab_size": vocab_size,
        "encoder_width": 768, "add_cross_attention": True,
    }


TINY_VIT = dict(image_size=TINY_IMAGE, patch=8, dim=64, depth=2, heads=1)


def image_reward_state(seed: int, med: dict) -> dict:
    from scoreaudit.plugins.scorers.model_blip import ImageRewardModel

    _seeded(seed)
    cfg = dict(med, encoder_width=TINY_VIT["dim"])
    model = ImageRewardModel(TINY_VIT, cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.startswith("mlp.") and name.endswith("weight"):
                p.copy_(torch.randn_like(p) / p.shape[1] ** 0.5)  # larger than the official init
            elif name.startswith("mlp.") and name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
            elif "LayerNorm" in name or "norm" in name.split(".")[-2]:
                p.add_(0.1 * torch.randn_like(p))
            elif p.ndim >= 2:
                p.normal_(0, 0.05)
    return {k: v.contiguous().clone() for k, v in model.state_dict().items()}


# ---------------------------------------------------------------- everything


def build_all(root: Path, seed: int = 0) -> dict:
    """Build every tiny model into root/hf (fake HF cache) and root/local (user folders).

    open_clip configs must already be registered (register_tiny_open_clip).
    """
    root = Path(root)
    cache, local = root / "hf", root / "local"
    out = {"cache": cache, "local": local}
    # LAION: head + OpenAI ViT-L/14 (tiny) under the official repo ids
    head = laion_head_state(seed + 1)
    snap = hf_snapshot(cache, "camenduru/improved-aesthetic-predictor")
    torch.save(head, snap / "sac+logos+ava1-l14-linearMSE.pth")
    clip_l = open_clip_state("ViT-L-14-quickgelu", seed + 2)
    snap = hf_snapshot(cache, "timm/vit_large_patch14_clip_224.openai")
    save_safetensors(clip_l, snap / "open_clip_model.safetensors")
    d = local / "laion"
    d.mkdir(parents=True, exist_ok=True)
    torch.save(head, d / "sac+logos+ava1-l14-linearMSE.pth")
    save_safetensors(clip_l, d / "open_clip_model.safetensors")
    out["laion"] = d
    # HPSv2: {'state_dict': ...} over ViT-H-14
    hps = open_clip_state("ViT-H-14", seed + 3)
    snap = hf_snapshot(cache, "xswu/HPSv2")
    torch.save({"state_dict": hps}, snap / "HPS_v2.1_compressed.pt")
    torch.save({"state_dict": open_clip_state("ViT-H-14", seed + 4)}, snap / "HPS_v2_compressed.pt")
    d = local / "hpsv2"
    d.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": hps}, d / "HPS_v2.1_compressed.pt")
    out["hpsv2"] = d
    # CLIP score: ViT-B-32 / openai
    b32 = open_clip_state("ViT-B-32", seed + 5)
    snap = hf_snapshot(cache, "timm/vit_base_patch32_clip_224.openai")
    save_safetensors(b32, snap / "open_clip_model.safetensors")
    d = local / "clip_dir"
    d.mkdir(parents=True, exist_ok=True)
    (d / "open_clip_config.json").write_text(json.dumps({
        "model_cfg": tiny_open_clip_cfg(False),
        "preprocess_cfg": {"mean": OPENAI_MEAN, "std": OPENAI_STD, "interpolation": "bicubic", "resize_mode": "shortest"}}))
    save_safetensors(open_clip_state("ViT-B-32", seed + 6), d / "open_clip_model.safetensors")
    out["clip_dir"] = d
    # PickScore: transformers CLIPModel + the laion processor
    pick = tiny_clip_model(seed + 7)
    snap = hf_snapshot(cache, "yuvalkirstain/PickScore_v1")
    pick.save_pretrained(str(snap))
    write_clip_processor(hf_snapshot(cache, "laion/CLIP-ViT-H-14-laion2B-s32B-b79K"))
    d = local / "pickscore"
    pick.save_pretrained(str(d))
    write_clip_processor(d)
    out["pickscore"] = d
    # ImageReward: ImageReward.pt + med_config.json, tokenizer bert-base-uncased
    vocab = write_bert_tokenizer(hf_snapshot(cache, "bert-base-uncased"))
    med = tiny_med_config(vocab)
    ir = image_reward_state(seed + 8, med)
    snap = hf_snapshot(cache, "THUDM/ImageReward")
    torch.save(ir, snap / "ImageReward.pt")
    (snap / "med_config.json").write_text(json.dumps(med))
    d = local / "image_reward"
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(snap / "ImageReward.pt", d / "ImageReward.pt")
    shutil.copy(snap / "med_config.json", d / "med_config.json")
    write_bert_tokenizer(d)
    out["image_reward"] = d
    out["ir_state"], out["med"] = ir, med
    return out


def test_images(n: int = 6, seed: int = 0) -> list[np.ndarray]:
    """Smooth random RGB images of assorted sizes and aspect ratios (odd sizes exercise crop rounding)."""
    rng = np.random.default_rng(seed)
    sizes = [(48, 40), (37, 53), (32, 32), (64, 45), (41, 41), (90, 33), (33, 71), (50, 50)]
    out = []
    for i in range(n):
        h, w = sizes[i % len(sizes)]
        yy, xx = np.mgrid[0:h, 0:w] / max(h, w)
        base = np.stack([np.sin(6 * xx + c + i) * np.cos(4 * yy - c) for c in range(3)], -1)
        img = 127.5 + 90 * base + rng.normal(0, 12, size=(h, w, 3))
        out.append(np.clip(img, 0, 255).astype(np.uint8))
    return out


PROMPTS = ["a photo of a person", "a red cat in the garden", "portrait of a smiling woman"]
