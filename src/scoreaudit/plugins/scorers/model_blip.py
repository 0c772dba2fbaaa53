"""ImageReward v1.0: BLIP ViT + MED text encoder with cross-attention + MLP.

A re-implementation of the official modules (ImageReward/models/BLIP/vit.py,
med.py, blip_pretrain.py, ImageReward.py) with the same parameter names, so
the official ImageReward.pt loads with strict key checking. Only the path
ImageReward's `score` takes is implemented (encoder mode, multimodal,
no caches, no dropout). Imported only from the scorer's constructor.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from scoreaudit.plugins.base import ScorerUnavailable
from scoreaudit.plugins.scorers.model_torch import (
    Precision,
    Preprocess,
    PromptCache,
    frozen,
    plain,
    run_batched,
    unique_prompts,
)
from scoreaudit.plugins.scorers.model_weights import WeightsError, load_state_dict, load_strict

IR_MEAN, IR_STD = 0.16717362830052426, 1.0333394966054072
VIT_HEAD_DIM = 64  # BLIP ViT-B/16: 768/12, ViT-L/16: 1024/16
TEXT_MAX_LENGTH = 35  # ImageReward.score: padding="max_length", max_length=35


# ---------------------------------------------------------------- vision (BLIP vit.py)


class _Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class _Attention(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(dim, dim * 3), nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, c))


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        self.attn, self.mlp = _Attention(dim, heads), _Mlp(dim, dim * 4)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class _PatchEmbed(nn.Module):
    def __init__(self, patch: int, dim: int):
        super().__init__()
        self.proj = nn.Conv2d(3, dim, kernel_size=patch, stride=patch)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class VisionTransformer(nn.Module):
    def __init__(self, image_size: int, patch: int, dim: int, depth: int, heads: int):
        super().__init__()
        self.image_size = image_size
        self.patch_embed = _PatchEmbed(patch, dim)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, (image_size // patch) ** 2 + 1, dim))
        self.blocks = nn.ModuleList([_Block(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim, eps=1e-6)

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1)
        x = x + self.pos_embed[:, : x.size(1), :]
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)


# ---------------------------------------------------------------- text (BLIP med.py, encoder mode)


class _SelfAttn(nn.Module):
    def __init__(self, hidden: int, heads: int, kv_width: int):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key, self.value = nn.Linear(kv_width, hidden), nn.Linear(kv_width, hidden)

    def _split(self, x):
        b, n, _ = x.shape
        return x.view(b, n, self.heads, -1).permute(0, 2, 1, 3)

    def forward(self, h, mask, enc=None):
        src = h if enc is None else enc
        q, k, v = self._split(self.query(h)), self._split(self.key(src)), self._split(self.value(src))
        ctx = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        b, _, n, _ = ctx.shape
        return ctx.permute(0, 2, 1, 3).reshape(b, n, -1)


class _Out(nn.Module):
    def __init__(self, d_in: int, d_out: int, eps: float):
        super().__init__()
        self.dense, self.LayerNorm = nn.Linear(d_in, d_out), nn.LayerNorm(d_out, eps=eps)

    def forward(self, x, residual):
        return self.LayerNorm(self.dense(x) + residual)


class _BertAttention(nn.Module):
    def __init__(self, cfg: Mapping, kv_width: int):
        super().__init__()
        self.self = _SelfAttn(cfg["hidden_size"], cfg["num_attention_heads"], kv_width)
        self.output = _Out(cfg["hidden_size"], cfg["hidden_size"], cfg["layer_norm_eps"])

    def forward(self, h, mask, enc=None):
        return self.output(self.self(h, mask, enc), h)


class _Intermediate(nn.Module):
    def __init__(self, cfg: Mapping):
        super().__init__()
        self.dense = nn.Linear(cfg["hidden_size"], cfg["intermediate_size"])

    def forward(self, x):
        return F.gelu(self.dense(x))


class _BertLayer(nn.Module):
    def __init__(self, cfg: Mapping):
        super().__init__()
        self.attention = _BertAttention(cfg, cfg["hidden_size"])
        if cfg.get("add_cross_attention", False):
            self.crossattention = _BertAttention(cfg, cfg["encoder_width"])
        self.intermediate = _Intermediate(cfg)
        self.output = _Out(cfg["intermediate_size"], cfg["hidden_size"], cfg["layer_norm_eps"])

    def forward(self, h, mask, enc, enc_mask):
        a = self.attention(h, mask)
        a = self.crossattention(a, enc_mask, enc)  # mode == "multimodal"
        return self.output(self.intermediate(a), a)


class _Embeddings(nn.Module):
    def __init__(self, cfg: Mapping):
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"], padding_idx=cfg.get("pad_token_id", 0))
        self.position_embeddings = nn.Embedding(cfg["max_position_embeddings"], cfg["hidden_size"])
        self.LayerNorm = nn.LayerNorm(cfg["hidden_size"], eps=cfg["layer_norm_eps"])
        self.register_buffer("position_ids", torch.arange(cfg["max_position_embeddings"]).expand((1, -1)))

    def forward(self, ids):
        pos = self.position_ids[:, : ids.shape[1]]
        return self.LayerNorm(self.word_embeddings(ids) + self.position_embeddings(pos))


class _Encoder(nn.Module):
    def __init__(self, cfg: Mapping):
        super().__init__()
        self.layer = nn.ModuleList([_BertLayer(cfg) for _ in range(cfg["num_hidden_layers"])])


class MedBertModel(nn.Module):
    """BLIP's BertModel(add_pooling_layer=False), encoder mode only."""

    def __init__(self, cfg: Mapping):
        super().__init__()
        self.embeddings = _Embeddings(cfg)
        self.encoder = _Encoder(cfg)

    def forward(self, ids, attention_mask, enc):
        # BLIP: (1 − mask) · −10000 added to the scores; the image mask is all ones (adds 0).
        mask = ((1.0 - attention_mask[:, None, None, :].to(enc.dtype)) * -10000.0)
        h = self.embeddings(ids)
        for layer in self.encoder.layer:
            h = layer(h, mask, enc, None)
        return h


# ---------------------------------------------------------------- ImageReward


class _IrMlp(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(d, 1024), nn.Dropout(0.2), nn.Linear(1024, 128), nn.Dropout(0.2),
            nn.Linear(128, 64), nn.Dropout(0.1), nn.Linear(64, 16), nn.Linear(16, 1),
        )

    def forward(self, x):
        return self.layers(x)


class _Blip(nn.Module):
    def __init__(self, vit: dict, med: Mapping, embed_dim: int = 256):
        super().__init__()
        self.visual_encoder = VisionTransformer(**vit)
        self.text_encoder = MedBertModel(med)
        self.vision_proj = nn.Linear(vit["dim"], embed_dim)  # unused by the reward; kept for the key set
        self.text_proj = nn.Linear(med["hidden_size"], embed_dim)


class ImageRewardModel(nn.Module):
    def __init__(self, vit: dict, med: Mapping):
        super().__init__()
        self.blip = _Blip(vit, med)
        self.mlp = _IrMlp(med["hidden_size"])

    def features(self, pixels, ids, attention_mask):
        """The text encoder's [CLS] state attending to the image: the part that runs under autocast."""
        img = self.blip.visual_encoder(pixels)
        return self.blip.text_encoder(ids, attention_mask, img)[:, 0, :]

    def reward(self, features):
        """The MLP on `.float()` features, normalised (fp32, as the official code runs it)."""
        return (self.mlp(features.float()) - IR_MEAN) / IR_STD

    def forward(self, pixels, ids, attention_mask):
        return self.reward(self.features(pixels, ids, attention_mask))


# Keys the official module has that the reward never reads: a checkpoint may lack them.
OPTIONAL_KEYS = (
    "blip.text_encoder.embeddings.position_ids",
    "blip.vision_proj.weight", "blip.vision_proj.bias", "blip.text_proj.weight", "blip.text_proj.bias",
)


def vit_config(state: Mapping) -> dict:
    """The ViT's shape read off the checkpoint (official: ViT-L/16, 224 px, 24 blocks, width 1024)."""
    try:
        dim = state["blip.visual_encoder.cls_token"].shape[-1]
        patch = state["blip.visual_encoder.patch_embed.proj.weight"].shape[-1]
        n_pos = state["blip.visual_encoder.pos_embed"].shape[1] - 1
    except KeyError as e:
        raise WeightsError(f"image_reward: the checkpoint lacks {e.args[0]}; it is not ImageReward.pt") from None
    side = math.isqrt(n_pos)
    depth = len({k.split(".")[3] for k in state if k.startswith("blip.visual_encoder.blocks.")})
    if side * side != n_pos or dim % VIT_HEAD_DIM:
        raise WeightsError("image_reward: the checkpoint's ViT shape is not a BLIP ViT")
    return dict(image_size=side * patch, patch=patch, dim=dim, depth=depth, heads=dim // VIT_HEAD_DIM)


def med_config(path: Path, encoder_width: int) -> dict:
    try:
        cfg = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ScorerUnavailable(f"image_reward: cannot read {path} ({e})") from None
    cfg = dict(cfg)
    cfg["encoder_width"] = encoder_width  # blip_pretrain.py sets it from the ViT
    cfg.setdefault("layer_norm_eps", 1e-12)
    if cfg.get("hidden_act", "gelu") != "gelu" or cfg.get("position_embedding_type", "absolute") != "absolute":
        raise ScorerUnavailable(f"image_reward: {path} asks for an activation/position type BLIP's ImageReward does not use")
    if not cfg.get("add_cross_attention", False):
        raise ScorerUnavailable(f"image_reward: {path} has add_cross_attention false; ImageReward needs it")
    return cfg


def load_tokenizer(folder: Path):
    """BertTokenizer('bert-base-uncased') plus BLIP's [DEC] and [ENC] tokens (blip.init_tokenizer)."""
    from transformers import BertTokenizer

    try:
        tok = BertTokenizer.from_pretrained(str(folder), local_files_only=True)
    except Exception as e:  # noqa: BLE001
        raise ScorerUnavailable(f"image_reward: cannot load the BERT tokenizer in {folder} ({e})") from None
    tok.add_special_tokens({"bos_token": "[DEC]"})
    tok.add_special_tokens({"additional_special_tokens": ["[ENC]"]})
    return tok


class ImageRewardImpl:
    def __init__(self, files: dict, device: str, precision: Precision, batch_size: int):
        state = load_state_dict(files["checkpoint"], "image_reward")
        vit = vit_config(state)
        med = med_config(files["med_config"], vit["dim"])
        model = ImageRewardModel(vit, med)
        load_strict(model, state, "image_reward", files["checkpoint"], optional=OPTIONAL_KEYS)
        self.tokenizer = load_tokenizer(files["tokenizer"])
        self.model = model.to(device=device, dtype=torch.float32).eval()  # autocast lowers the encoders' ops
        self.pre = Preprocess(size=vit["image_size"], crop=vit["image_size"], mean=(0.48145466, 0.4578275, 0.40821073),
                              std=(0.26862954, 0.26130258, 0.27577711), mode="shortest", crop_rule="torchvision")
        self.device, self.precision, self.batch_size = device, precision, batch_size
        self.dtype = torch.float32
        self._tok = PromptCache(self._tokenize)

    def _tokenize(self, prompts: list[str]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        # Padded to max_length, so tokenising together gives each prompt's own tokens.
        t = self.tokenizer(prompts, padding="max_length", truncation=True, max_length=TEXT_MAX_LENGTH, return_tensors="pt")
        ids, mask = t["input_ids"].to(self.device), t["attention_mask"].to(self.device)
        return list(zip(ids, mask))

    def _tokens(self, prompts):
        """Token ids and mask per prompt (the text encoder attends to the image, so only tokens are cached)."""
        got = self._tok.get(prompts)
        return torch.stack([i for i, _ in got]), torch.stack([m for _, m in got])

    @staticmethod
    def trim(ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Drop the padding columns no prompt of the batch uses.

        The official code pads every prompt to 35 tokens, but padded positions are masked
        (−10000 before the softmax: a weight of exactly 0) and the reward reads position 0, so
        they never change it; trimming them saves most of the text encoder's work for short
        prompts. BERT pads on the right, so the used columns are a prefix.
        """
        used = int(mask.sum(dim=1).max())
        return ids[:, :used], mask[:, :used]

    def _reward(self, pixels, ids, mask, precision: Precision | None = None) -> torch.Tensor:
        """Encoders at the scorer's precision (autocast for fp16/bf16), the reward MLP in fp32."""
        with (precision or self.precision).forward():
            feats = self.model.features(pixels, ids, mask)
        return self.model.reward(feats)

    @torch.inference_mode()
    def score(self, images, prompts) -> np.ndarray:
        uniq, idx = unique_prompts(prompts, len(images), "image_reward")
        ids, mask = self._tokens(uniq)

        def fn(sl):
            x = self.pre.batch(images[sl], self.device, self.dtype)
            sel = torch.tensor(idx[sl], device=self.device)
            return self._reward(x, *self.trim(ids[sel], mask[sel]))

        return run_batched(images, self.batch_size, fn)

    def score_tensor(self, x: torch.Tensor, prompts) -> torch.Tensor:
        """Differentiable ImageReward of float N×3×H×W images in [0, 1] (the probes' path)."""
        frozen(self.model)
        uniq, idx = unique_prompts(prompts, len(x), "image_reward")
        ids, mask = self._tokens(uniq)
        sel = torch.tensor(idx, device=self.device)
        ids, mask = self.trim(plain(ids)[sel], plain(mask)[sel])
        x = self.pre.tensor(x.to(self.device), self.dtype)
        return self._reward(x, ids, mask, self.precision.for_gradients()).reshape(-1)
