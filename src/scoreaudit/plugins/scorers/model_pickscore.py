"""PickScore_v1 on transformers' CLIPModel. Imported only from the scorer's constructor."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

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
from scoreaudit.plugins.scorers.model_weights import WeightsError


def hf_clip_preprocess(folder: Path) -> Preprocess:
    """CLIPImageProcessor (the slow, PIL one the official PickScore code used) from preprocessor_config.json."""
    try:
        cfg = json.loads((folder / "preprocessor_config.json").read_text())
    except (OSError, ValueError) as e:
        raise ScorerUnavailable(f"pickscore: cannot read {folder / 'preprocessor_config.json'} ({e})") from None
    size = cfg.get("size", 224)
    size = size.get("shortest_edge", size.get("height")) if isinstance(size, dict) else size
    crop = cfg.get("crop_size", size)
    crop = crop.get("height", crop.get("width")) if isinstance(crop, dict) else crop
    resample = cfg.get("resample", 3)
    if resample not in (2, 3) or not cfg.get("do_resize", True) or not cfg.get("do_center_crop", True):
        raise ScorerUnavailable(f"pickscore: unsupported image processor settings in {folder} (resample={resample})")
    return Preprocess(
        size=int(size),
        crop=int(crop),
        mean=tuple(cfg.get("image_mean", (0.48145466, 0.4578275, 0.40821073))),
        std=tuple(cfg.get("image_std", (0.26862954, 0.26130258, 0.27577711))),
        mode="shortest",
        crop_rule="hf",
        interpolation="bicubic" if resample == 3 else "bilinear",
    )


def _from_pretrained(cls, folder: Path, **kw):
    import transformers

    major = int(transformers.__version__.split(".")[0])
    kw["dtype" if major >= 5 else "torch_dtype"] = torch.float32
    return cls.from_pretrained(str(folder), local_files_only=True, **kw)


class PickScoreImpl:
    def __init__(self, files: dict, device: str, precision: Precision, batch_size: int):
        from transformers import AutoTokenizer, CLIPModel

        model_dir, proc_dir = files["model"], files["processor"]
        try:
            model, info = _from_pretrained(CLIPModel, model_dir, output_loading_info=True)
        except Exception as e:  # noqa: BLE001 - unreadable or unsafe checkpoint
            raise WeightsError(f"pickscore: cannot load the CLIPModel in {model_dir} ({type(e).__name__}: {e})") from None
        bad = {k: list(v) for k, v in info.items() if k in ("missing_keys", "unexpected_keys", "mismatched_keys") and v}
        if bad:
            detail = "; ".join(f"{k.replace('_', ' ')}: {', '.join(map(str, v[:5]))}" for k, v in bad.items())
            raise WeightsError(f"pickscore: {model_dir} does not match CLIPModel ({detail}). Pass PickScore_v1 unchanged.")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(proc_dir), local_files_only=True)
        except Exception as e:  # noqa: BLE001
            raise ScorerUnavailable(f"pickscore: cannot load the CLIP tokenizer in {proc_dir} ({e})") from None
        self.pre = hf_clip_preprocess(proc_dir)
        self.model = model.to(device=device, dtype=torch.float32).eval()  # autocast lowers the image forward
        self.device, self.precision, self.batch_size = device, precision, batch_size
        self.dtype = torch.float32
        self._text = PromptCache(self._encode_text)

    def _encode_text(self, prompts: list[str]) -> torch.Tensor:
        """fp32 at every precision: each prompt is encoded once, so exactness costs nothing per image."""
        t = self.tokenizer(prompts, padding=True, truncation=True, max_length=77, return_tensors="pt").to(self.device)
        out = self.model.text_model(input_ids=t["input_ids"], attention_mask=t["attention_mask"])
        feats = self.model.text_projection(out.pooler_output).float()
        return feats / feats.norm(dim=-1, keepdim=True)

    def _text_features(self, prompts):
        """Normalised text embeddings; each distinct prompt is encoded once per scorer, across batches."""
        return torch.stack(self._text.get(prompts))

    @torch.inference_mode()
    def score(self, images, prompts) -> np.ndarray:
        uniq, idx = unique_prompts(prompts, len(images), "pickscore")
        text = self._text_features(uniq)
        idx_t = torch.tensor(idx, device=text.device)
        scale = self.model.logit_scale.float().exp()

        def fn(sl):
            x = self.pre.batch(images[sl], self.device, self.dtype)
            with self.precision.forward():
                out = self.model.vision_model(pixel_values=x)
                img = self.model.visual_projection(out.pooler_output).float()
            img = img / img.norm(dim=-1, keepdim=True)
            return scale * (img * text[idx_t[sl]]).sum(-1)

        return run_batched(images, self.batch_size, fn)

    def score_tensor(self, x: torch.Tensor, prompts) -> torch.Tensor:
        """Differentiable PickScore of float N×3×H×W images in [0, 1] (the probes' path)."""
        frozen(self.model)
        uniq, idx = unique_prompts(prompts, len(x), "pickscore")
        with torch.no_grad():
            text = plain(self._text_features(uniq))
        x = self.pre.tensor(x.to(self.device), self.dtype)
        with self.precision.for_gradients().forward():
            out = self.model.vision_model(pixel_values=x)
            img = self.model.visual_projection(out.pooler_output).float()
        img = img / img.norm(dim=-1, keepdim=True)
        return self.model.logit_scale.float().exp() * (img * text[torch.tensor(idx, device=text.device)]).sum(-1)
