"""Small, randomly initialised models of the five model scorers' architectures, saved where a
user's official files would be: a fake Hugging Face cache (`models--org--name/refs/main` +
`snapshots/<commit>/`) and local folders.

Used by tests/models, tests/e2e_models, bench/scoring.py and
`scripts/make_cross_image_data.py --tiny-models`. Everything is built offline in seconds at
the default (tiny) scale; `MID` gives ViT-B-sized models at 224 px for benchmarks where the
forward pass, not preprocessing, dominates; `OFFICIAL` the official models' shapes (bench/precision.py).
Needs torch, open_clip (its bundled CLIP BPE vocabulary builds the CLIP tokenizer) and transformers.
"""

from __future__ import annotations

import itertools
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

# the real repository ids and file names, from the scorers that look them up (one definition)
from scoreaudit.plugins.scorers.models import (
    BERT_REPOS,
    HPS_FILES,
    HPS_REPO,
    IR_REPO,
    KNOWN_OPEN_CLIP_HUB,
    LAION_CLIP_REPO,
    LAION_HEAD,
    PICK_PROCESSOR_REPO,
    PICK_REPO,
)

COMMIT = "0123456789abcdef0123456789abcdef01234567"
OPENAI_MEAN = [0.48145466, 0.4578275, 0.40821073]
OPENAI_STD = [0.26862954, 0.26130258, 0.27577711]
PROMPTS = ["a photo of a person", "a red cat in the garden", "portrait of a smiling woman"]

BERT_REPO = BERT_REPOS[0]  # the scorer accepts either name; the fake cache holds the first


@dataclass(frozen=True)
class Scale:
    """Sizes of the built models (the architectures' shapes, not the official sizes)."""

    image: int
    open_clip_vision: dict = field(default_factory=dict)  # layers, width, head_width, patch_size
    open_clip_text: dict = field(default_factory=dict)  # width, heads, layers
    open_clip_embed: int = 32
    hf_vision: dict = field(default_factory=dict)  # transformers CLIPVisionConfig fields
    hf_text: dict = field(default_factory=dict)
    hf_projection: int = 16
    ir_vit: dict = field(default_factory=dict)  # image_size, patch, dim, depth, heads
    med_layers: int = 2
    med_intermediate: int = 256


TINY_IMAGE = 32
TINY_VIT = dict(image_size=TINY_IMAGE, patch=8, dim=64, depth=2, heads=1)
TINY = Scale(
    image=TINY_IMAGE,
    open_clip_vision={"layers": 2, "width": 64, "head_width": 32, "patch_size": 8},
    open_clip_text={"width": 64, "heads": 2, "layers": 2},
    open_clip_embed=32,
    hf_vision={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
               "patch_size": 8},
    hf_text={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2},
    hf_projection=16,
    ir_vit=TINY_VIT,
    med_layers=2,
    med_intermediate=256,
)
# ViT-B/32 (CLIP) and BLIP ViT-B/16 with a 6-layer text encoder, at 224 px: a realistic mid-size model.
MID = Scale(
    image=224,
    open_clip_vision={"layers": 12, "width": 768, "head_width": 64, "patch_size": 32},
    open_clip_text={"width": 512, "heads": 8, "layers": 12},
    open_clip_embed=512,
    hf_vision={"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
               "patch_size": 32},
    hf_text={"hidden_size": 512, "intermediate_size": 2048, "num_hidden_layers": 12, "num_attention_heads": 8},
    hf_projection=512,
    ir_vit=dict(image_size=224, patch=16, dim=768, depth=12, heads=12),
    med_layers=6,
    med_intermediate=3072,
)

# The official architectures' shapes (random weights): transformers CLIP ViT-H/14 (PickScore) and BLIP
# ViT-L/16 + the 12-layer BERT (ImageReward); the open_clip scorers use open_clip's own built-in configs
# (ViT-L-14-quickgelu, ViT-H-14, ViT-B-32), so nothing is registered at this scale.
OFFICIAL = Scale(
    image=224,
    hf_vision={"hidden_size": 1280, "intermediate_size": 5120, "num_hidden_layers": 32, "num_attention_heads": 16,
               "patch_size": 14},
    hf_text={"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16},
    hf_projection=1024,
    ir_vit=dict(image_size=224, patch=16, dim=1024, depth=24, heads=16),
    med_layers=12,
    med_intermediate=3072,
)


def hf_snapshot(cache: Path, repo: str) -> Path:
    """Create models--org--name/refs/main → COMMIT and return snapshots/COMMIT/."""
    root = Path(cache) / ("models--" + repo.replace("/", "--"))
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(COMMIT)
    snap = root / "snapshots" / COMMIT
    snap.mkdir(parents=True, exist_ok=True)
    return snap


# ---------------------------------------------------------------- open_clip


def tiny_open_clip_cfg(quick_gelu: bool, scale: Scale = TINY) -> dict:
    return {
        "embed_dim": scale.open_clip_embed,
        "quick_gelu": quick_gelu,
        "vision_cfg": {"image_size": scale.image, **scale.open_clip_vision},
        "text_cfg": {"context_length": 77, "vocab_size": 49408, **scale.open_clip_text},
    }


def register_tiny_open_clip(folder: Path, names=("ViT-L-14-quickgelu", "ViT-H-14", "ViT-B-32"),
                            scale: Scale = TINY) -> dict:
    """Register small configs under the real architecture names (open_clip.add_model_config).

    Returns the previous configs so a caller can restore them.
    """
    import open_clip
    from open_clip import factory

    saved = {n: factory._MODEL_CONFIGS.get(n) for n in names}
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for n in names:
        (folder / f"{n}.json").write_text(json.dumps(tiny_open_clip_cfg("quickgelu" in n, scale)))
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
    for idx, (a, b) in zip((0, 2, 4, 6, 7), itertools.pairwise(dims)):
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
    if len(vocab) != 49408:
        raise RuntimeError(f"open_clip's CLIP vocabulary has {len(vocab)} entries, expected 49408")
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


def tiny_clip_model(seed: int, scale: Scale = TINY):
    from transformers import CLIPConfig, CLIPModel

    _seeded(seed)
    cfg = CLIPConfig(
        text_config=dict(vocab_size=49408, max_position_embeddings=77, bos_token_id=49406, eos_token_id=49407,
                         pad_token_id=1, **scale.hf_text),
        vision_config=dict(image_size=scale.image, **scale.hf_vision),
        projection_dim=scale.hf_projection,
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


def tiny_med_config(vocab_size: int, scale: Scale = TINY) -> dict:
    """The official med_config.json with fewer layers and a small vocabulary (hidden size stays 768)."""
    return {
        "architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
        "intermediate_size": scale.med_intermediate, "layer_norm_eps": 1e-12, "max_position_embeddings": 64,
        "model_type": "bert", "num_attention_heads": 12, "num_hidden_layers": scale.med_layers, "pad_token_id": 0,
        "type_vocab_size": 2, "vocab_size": vocab_size, "encoder_width": 768, "add_cross_attention": True,
    }


def image_reward_state(seed: int, med: dict, scale: Scale = TINY) -> dict:
    from scoreaudit.plugins.scorers.model_blip import ImageRewardModel

    _seeded(seed)
    cfg = dict(med, encoder_width=scale.ir_vit["dim"])
    model = ImageRewardModel(scale.ir_vit, cfg)
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


# ---------------------------------------------------------------- per scorer


def build_laion(cache: Path, local: Path, seed: int = 0) -> dict:
    """Head + OpenAI ViT-L/14 (open_clip config must be registered) under the official repo ids."""
    head = laion_head_state(seed + 1, in_dim=open_clip_state_dim("ViT-L-14-quickgelu"))
    snap = hf_snapshot(cache, LAION_HEAD.repo)
    torch.save(head, snap / LAION_HEAD.filename)
    clip_l = open_clip_state("ViT-L-14-quickgelu", seed + 2)
    snap = hf_snapshot(cache, LAION_CLIP_REPO)
    save_safetensors(clip_l, snap / "open_clip_model.safetensors")
    d = Path(local) / "laion"
    d.mkdir(parents=True, exist_ok=True)
    torch.save(head, d / LAION_HEAD.filename)
    save_safetensors(clip_l, d / "open_clip_model.safetensors")
    return {"laion": d}


def open_clip_state_dim(name: str) -> int:
    from open_clip import factory

    return int(factory._MODEL_CONFIGS[name]["embed_dim"])


def build_hpsv2(cache: Path, local: Path, seed: int = 0) -> dict:
    """{'state_dict': ...} over ViT-H-14, both versions, in xswu/HPSv2."""
    hps = open_clip_state("ViT-H-14", seed + 3)
    snap = hf_snapshot(cache, HPS_REPO)
    torch.save({"state_dict": hps}, snap / HPS_FILES["2.1"])
    torch.save({"state_dict": open_clip_state("ViT-H-14", seed + 4)}, snap / HPS_FILES["2.0"])
    d = Path(local) / "hpsv2"
    d.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": hps}, d / HPS_FILES["2.1"])
    return {"hpsv2": d}


def build_clip_score(cache: Path, local: Path, seed: int = 0, scale: Scale = TINY) -> dict:
    """ViT-B-32 / openai in the cache, and a local-dir open_clip folder."""
    b32 = open_clip_state("ViT-B-32", seed + 5)
    snap = hf_snapshot(cache, KNOWN_OPEN_CLIP_HUB[("ViT-B-32", "openai")])
    save_safetensors(b32, snap / "open_clip_model.safetensors")
    d = Path(local) / "clip_dir"
    d.mkdir(parents=True, exist_ok=True)
    (d / "open_clip_config.json").write_text(json.dumps({
        "model_cfg": tiny_open_clip_cfg(False, scale),
        "preprocess_cfg": {"mean": OPENAI_MEAN, "std": OPENAI_STD, "interpolation": "bicubic", "resize_mode": "shortest"}}))
    save_safetensors(open_clip_state("ViT-B-32", seed + 6), d / "open_clip_model.safetensors")
    return {"clip_dir": d}


def build_pickscore(cache: Path, local: Path | None = None, seed: int = 0, scale: Scale = TINY) -> dict:
    """transformers CLIPModel at yuvalkirstain/PickScore_v1 + the laion processor repo (+ a local folder)."""
    pick = tiny_clip_model(seed + 7, scale)
    pick.save_pretrained(str(hf_snapshot(cache, PICK_REPO)))
    write_clip_processor(hf_snapshot(cache, PICK_PROCESSOR_REPO), scale.image)
    if local is None:
        return {}
    d = Path(local) / "pickscore"
    pick.save_pretrained(str(d))
    write_clip_processor(d, scale.image)
    return {"pickscore": d}


def build_image_reward(cache: Path, local: Path | None = None, seed: int = 0, scale: Scale = TINY) -> dict:
    """ImageReward.pt + med_config.json at THUDM/ImageReward, the tokenizer at bert-base-uncased."""
    vocab = write_bert_tokenizer(hf_snapshot(cache, BERT_REPO))
    med = tiny_med_config(vocab, scale)
    ir = image_reward_state(seed + 8, med, scale)
    snap = hf_snapshot(cache, IR_REPO)
    torch.save(ir, snap / "ImageReward.pt")
    (snap / "med_config.json").write_text(json.dumps(med))
    out: dict[str, Any] = {"ir_state": ir, "med": med}
    if local is not None:
        d = Path(local) / "image_reward"
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(snap / "ImageReward.pt", d / "ImageReward.pt")
        shutil.copy(snap / "med_config.json", d / "med_config.json")
        write_bert_tokenizer(d)
        out["image_reward"] = d
    return out


# ---------------------------------------------------------------- everything


def build_all(root: Path, seed: int = 0, scale: Scale = TINY) -> dict:
    """Build every model into root/hf (fake HF cache) and root/local (user folders).

    The open_clip configs must already be registered at the same scale (register_tiny_open_clip).
    """
    root = Path(root)
    cache, local = root / "hf", root / "local"
    out: dict = {"cache": cache, "local": local}
    out.update(build_laion(cache, local, seed))
    out.update(build_hpsv2(cache, local, seed))
    out.update(build_clip_score(cache, local, seed, scale))
    out.update(build_pickscore(cache, local, seed, scale))
    out.update(build_image_reward(cache, local, seed, scale))
    return out


def build_prompt_scorers(cache: Path, seed: int = 0, scale: Scale = TINY) -> Path:
    """Only PickScore and ImageReward (transformers; no open_clip config registration), in a fake HF cache."""
    cache = Path(cache)
    build_pickscore(cache, None, seed, scale)
    build_image_reward(cache, None, seed, scale)
    return cache


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


test_images.__test__ = False  # type: ignore[attr-defined]  # a helper, not a pytest test
