"""A line-by-line functional transcription of ImageReward.score (image-reward 1.5) for tests.

Written from the official code (ImageReward.py, models/BLIP/vit.py, med.py), on the raw
state dict, with the official explicit attention (matmul, scale, softmax) rather than
scoreaudit's fused attention, and the official PIL/torchvision preprocessing. The
tests compare against the `image-reward` package itself (official_imagereward.py, in its own
venv); this transcription remains as bench/scoring.py's in-process baseline.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from PIL import Image
from torchvision.transforms import CenterCrop, Compose, InterpolationMode, Normalize, Resize, ToTensor


def official_transform(n_px: int):
    return Compose([
        Resize(n_px, interpolation=InterpolationMode.BICUBIC),
        CenterCrop(n_px),
        lambda im: im.convert("RGB"),
        ToTensor(),
        Normalize((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)),
    ])


def _lin(sd, p, x):
    return x @ sd[p + ".weight"].T + sd[p + ".bias"]


def _ln(sd, p, x, eps):
    return F.layer_norm(x, x.shape[-1:], sd[p + ".weight"], sd[p + ".bias"], eps)


def vit(sd, x, heads):
    p = "blip.visual_encoder."
    w = sd[p + "patch_embed.proj.weight"]
    x = F.conv2d(x, w, sd[p + "patch_embed.proj.bias"], stride=w.shape[-1]).flatten(2).transpose(1, 2)
    x = torch.cat((sd[p + "cls_token"].expand(x.shape[0], -1, -1), x), dim=1)
    x = x + sd[p + "pos_embed"][:, : x.size(1), :]
    i = 0
    while f"{p}blocks.{i}.norm1.weight" in sd:
        b = f"{p}blocks.{i}."
        h = _ln(sd, b + "norm1", x, 1e-6)
        B, N, C = h.shape
        qkv = _lin(sd, b + "attn.qkv", h).reshape(B, N, 3, heads, C // heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = ((q @ k.transpose(-2, -1)) * (C // heads) ** -0.5).softmax(dim=-1)
        x = x + _lin(sd, b + "attn.proj", (attn @ v).transpose(1, 2).reshape(B, N, C))
        h = _ln(sd, b + "norm2", x, 1e-6)
        x = x + _lin(sd, b + "mlp.fc2", F.gelu(_lin(sd, b + "mlp.fc1", h)))
        i += 1
    return _ln(sd, p + "norm", x, 1e-6)


def _bert_attention(sd, p, h, mask, cfg, enc=None):
    heads = cfg["num_attention_heads"]
    size = cfg["hidden_size"] // heads

    def split(t):
        return t.view(t.shape[0], t.shape[1], heads, size).permute(0, 2, 1, 3)

    src = h if enc is None else enc
    q, k, v = split(_lin(sd, p + "self.query", h)), split(_lin(sd, p + "self.key", src)), split(_lin(sd, p + "self.value", src))
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(size)
    if mask is not None:
        scores = scores + mask
    ctx = torch.matmul(torch.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).contiguous()
    ctx = ctx.view(ctx.shape[0], ctx.shape[1], -1)
    return _ln(sd, p + "output.LayerNorm", _lin(sd, p + "output.dense", ctx) + h, cfg["layer_norm_eps"])


def text_encoder(sd, ids, attention_mask, enc, cfg):
    p = "blip.text_encoder."
    pos = torch.arange(ids.shape[1])[None]
    h = F.embedding(ids, sd[p + "embeddings.word_embeddings.weight"]) + F.embedding(pos, sd[p + "embeddings.position_embeddings.weight"])
    h = _ln(sd, p + "embeddings.LayerNorm", h, cfg["layer_norm_eps"])
    ext = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
    enc_mask = (1.0 - torch.ones(enc.shape[:2])[:, None, None, :]) * torch.finfo(torch.float32).min  # invert_attention_mask
    for i in range(cfg["num_hidden_layers"]):
        lp = f"{p}encoder.layer.{i}."
        a = _bert_attention(sd, lp + "attention.", h, ext, cfg)
        a = _bert_attention(sd, lp + "crossattention.", a, enc_mask, cfg, enc=enc)
        inter = F.gelu(_lin(sd, lp + "intermediate.dense", a))
        h = _ln(sd, lp + "output.LayerNorm", _lin(sd, lp + "output.dense", inter) + a, cfg["layer_norm_eps"])
    return h


def score(sd, cfg, tokenizer, prompt: str, image: Image.Image, image_size: int, heads: int) -> float:
    """ImageReward.score(prompt, image) for one PIL image."""
    t = tokenizer(prompt, padding="max_length", truncation=True, max_length=35, return_tensors="pt")
    x = official_transform(image_size)(image).unsqueeze(0)
    with torch.no_grad():
        emb = vit(sd, x, heads)
        out = text_encoder(sd, t.input_ids, t.attention_mask, emb, cfg)
        feat = out[:, 0, :].float()
        for i in (0, 2, 4, 6, 7):
            feat = _lin(sd, f"mlp.layers.{i}", feat)
    return float((feat - 0.16717362830052426) / 1.0333394966054072)
