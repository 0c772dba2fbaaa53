"""Zero-shot CLIP over a probe's labels (`clip_attribute(labels: [...])`), with transformers' CLIPModel.

The model folder holds a `CLIPModel` (config and weights), its tokenizer and
`preprocessor_config.json`: a folder under the spec's folder, or a Hugging
Face id already in the local cache (never downloaded). Images are
preprocessed like the CLIP image processor (the scorers' `Preprocess`).
Imported only when a probe records `clip_attribute`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from scoreaudit.plugins.base import ScorerUnavailable

# config, tokenizer, image processor and weights: what `weights --download` fetches
CLIP_FILES = ("*.json", "*.txt", "*.safetensors")


class ClipMissing(ScorerUnavailable):
    """The CLIP model is neither a folder under the spec's folder nor in the Hugging Face cache."""


def clip_missing_files(folder: Path) -> list[str]:
    """What CLIPModel, its tokenizer and the image preprocessing will not find in `folder`."""
    have = {q.name for q in Path(folder).iterdir()} if Path(folder).is_dir() else set()
    missing = [n for n in ("config.json", "preprocessor_config.json") if n not in have]
    if not have & {"model.safetensors", "pytorch_model.bin"}:
        missing.append("model.safetensors")
    if "tokenizer.json" not in have and not {"vocab.json", "merges.txt"} <= have:
        missing.append("tokenizer.json (or vocab.json and merges.txt)")
    return missing


def locate_clip(model: str, base_dir: Path | None) -> Path:
    """A complete local folder (relative to the spec's folder) or cached Hugging Face snapshot of `model`."""
    if base_dir is not None and (Path(base_dir) / model).is_dir():
        folder, where = Path(base_dir) / model, f"folder '{model}'"
    else:
        try:
            from huggingface_hub import snapshot_download

            from scoreaudit.plugins.scorers.model_weights import hf_cache_dir, hf_include_line

            folder = Path(snapshot_download(model, local_files_only=True, cache_dir=str(hf_cache_dir())))
        except Exception as exc:  # noqa: BLE001 - not cached, bad id, no huggingface_hub
            raise ClipMissing(
                f"clip_attribute: the CLIP model '{model}' is neither a folder under the spec's folder nor in the "
                f"Hugging Face cache ({type(exc).__name__}); nothing is downloaded at run time: fetch it with "
                f"`scoreaudit weights --download SPEC` or `{hf_include_line(model, CLIP_FILES)}`") from None
        where = f"cached snapshot of '{model}'"
    missing = clip_missing_files(folder)
    if missing:
        raise ScorerUnavailable(f"clip_attribute: the {where} lacks {', '.join(missing)}")
    return folder


class ZeroShotClip:
    """Label probabilities for one image: softmax over logit_scale · cos(image, "a photo of a LABEL")."""

    def __init__(self, model: str, base_dir: Path | None, device: str, texts: list[str]) -> None:
        import torch
        from transformers import AutoTokenizer, CLIPModel

        from scoreaudit.plugins.scorers.model_pickscore import hf_clip_preprocess

        folder = locate_clip(model, base_dir)
        try:
            self.model = CLIPModel.from_pretrained(str(folder), local_files_only=True).to(device).eval()
            tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - unreadable or incomplete folder
            raise ScorerUnavailable(f"clip_attribute: cannot load the CLIP model in {folder} "
                                    f"({type(exc).__name__}: {exc})") from None
        self.pre = hf_clip_preprocess(folder)
        self.device = device
        with torch.inference_mode():
            t = tok(texts, padding=True, truncation=True, max_length=77, return_tensors="pt").to(device)
            out = self.model.text_model(input_ids=t["input_ids"], attention_mask=t["attention_mask"])
            feats = self.model.text_projection(out.pooler_output).float()
            self.text = feats / feats.norm(dim=-1, keepdim=True)
            self.scale = float(self.model.logit_scale.float().exp())

    def probabilities(self, image: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            x = self.pre.batch([image], self.device, torch.float32)
            out = self.model.vision_model(pixel_values=x)
            img = self.model.visual_projection(out.pooler_output).float()
            img = img / img.norm(dim=-1, keepdim=True)
            return torch.softmax(self.scale * img @ self.text.T, dim=-1)[0].cpu().numpy().astype(float)


class ClipEmbedder:
    """CLIP image embeddings (transformers `CLIPModel.get_image_features`): the anchors' f(x) and SeedSelect's.

    `embed` takes uint8 H×W×3 images (the scorers' CLIP preprocessing); `embed_tensor` takes float
    N×3×H×W images in [0, 1] and keeps the gradient (the same preprocessing, differentiably).
    """

    def __init__(self, model: str, base_dir: Path | None, device: str, what: str = "anchor") -> None:
        import torch  # noqa: F401
        from transformers import CLIPModel

        from scoreaudit.plugins.scorers.model_pickscore import hf_clip_preprocess

        folder = locate_clip(model, base_dir)
        try:
            self.model = CLIPModel.from_pretrained(str(folder), local_files_only=True).to(device).eval()
        except Exception as exc:  # noqa: BLE001 - unreadable or incomplete folder
            raise ScorerUnavailable(f"{what}: cannot load the CLIP model in {folder} "
                                    f"({type(exc).__name__}: {exc})") from None
        for q in self.model.parameters():
            q.requires_grad_(False)
        self.pre = hf_clip_preprocess(folder)
        self.device = device

    def _features(self, x):
        out = self.model.vision_model(pixel_values=x)
        return self.model.visual_projection(out.pooler_output).float()

    def embed(self, images: list[np.ndarray]) -> np.ndarray:
        """f(x) of each image (N×D, not normalised), in batches of one size."""
        import torch

        feats = []
        with torch.inference_mode():
            for img in images:
                feats.append(self._features(self.pre.batch([img], self.device, torch.float32))[0].cpu().numpy())
        return np.asarray(feats, dtype=np.float64)

    def embed_tensor(self, x):
        """f(x) of float N×3×H×W images in [0, 1], differentiably (N×D, not normalised)."""
        import torch

        return self._features(self.pre.tensor(x, torch.float32).to(self.device))
