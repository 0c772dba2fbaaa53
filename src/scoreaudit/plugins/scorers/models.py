"""Model scorers (the `models` extra). Heavy imports happen inside the constructors.

Weights come from the `weights:` argument (a local file or folder) or from
the Hugging Face cache under the official repo ids; scoreaudit never
downloads at run time (see model_weights). Each scorer loads its model once
per instance with fp32 weights and runs its image forwards at a precision:
fp32 (exact, the official numbers), or fp16/bf16 under torch.autocast. "auto"
is the scorer's own choice per device type (`AUTO_PRECISION`, justified by
bench/precision.py's measurements and stated in `scoreaudit scorers`); fp32
on the CPU. tests/models checks fp32 against the official code path on tiny
models and reduced precision against fp32.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np

from scoreaudit.plugins.base import ScorerUnavailable
from scoreaudit.plugins.scorers.model_precision import choose_precision
from scoreaudit.plugins.scorers.model_weights import (
    INSTALL_HINT,
    HubFile,
    Located,
    NeededFile,
    combined_hash,
    find_in_hf_cache,
    locate_one,
    locate_snapshot,
    missing_message,
    snapshot_problems,
)
from scoreaudit.registry import ColumnValue, Params, scorers

Prompt = str | ColumnValue | None

# Most images per forward. The runtime's batches (settings `batch_size`, default 16) are
# forwarded whole up to this cap, which only bounds memory (ViT-H at 224 px and batch 64 needs
# well under 1 GB of activations in inference mode).
BATCH = {"cpu": 64, "cuda": 64}


# What `scoreaudit scorers` says about each scorer's precision: what `auto` runs at and why, and what
# was measured against fp32 (bench/precision.py, tests/models/test_precision.py) and where.
_UNMEASURED = ("Not measured: fp16/bf16 on a GPU, and any precision on the official weights (neither was "
               "available where this was written); run bench/precision.py --device cuda with the weights cached.")
_TINY = "Tiny random models: bf16 within 20% of the score SD (tests/models/test_precision.py)."
PRECISION_NOTES = {
    "laion_aesthetic": "auto: fp16 autocast of the CLIP forward on CUDA (the official inference loads CLIP with "
                       "OpenAI's clip.load, which casts it to fp16 on a GPU), MLP head and normalisation in fp32; "
                       "fp32 on the CPU. Weights stay fp32; `precision:` fp32 is exact, bf16 opt-in. "
                       f"{_TINY} {_UNMEASURED}",
    "pickscore": "auto: fp32 everywhere (the model card's code runs fp32); fp16/bf16 autocast of the image "
                 "forward with `precision:` (prompt embeddings stay fp32). "
                 f"{_TINY} {_UNMEASURED}",
    "image_reward": "auto: fp32 everywhere (ImageReward.load runs fp32); fp16/bf16 autocast of the ViT and text "
                    "encoder with `precision:`, the reward MLP always fp32. "
                    f"{_TINY} {_UNMEASURED}",
    "hpsv2": "auto: fp16 autocast on CUDA, as hpsv2.score itself runs (torch.cuda.amp.autocast), prompt "
             "embeddings in fp32; fp32 on the CPU (where the official autocast is inactive). bf16 opt-in. "
             f"{_TINY} {_UNMEASURED}",
    "clip_score": "auto: fp32 everywhere (open_clip's default); fp16/bf16 autocast of the image forward with "
                  f"`precision:`. {_TINY} {_UNMEASURED}",
}


class WeightsParams(Params):
    weights: str | None = None  # local file/dir; None: the Hugging Face cache
    precision: Literal["auto", "fp32", "fp16", "bf16"] = "auto"


def _require(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ScorerUnavailable(f"{', '.join(missing)} not installed; install the models extra: {INSTALL_HINT}")


class _ModelScorer:
    """Shared life cycle: locate weights (cheap), build the implementation once, hash lazily."""

    _modules: tuple[str, ...] = ("torch",)
    # What `precision: auto` runs at, per torch device type (absent: fp32): the precision the official
    # implementation itself runs at there, so auto never strays further from the official numbers than
    # the official code does. fp16/bf16 for a scorer whose official code runs fp32 is the user's choice
    # (`precision:`), with the figures bench/precision.py measured stated in `scoreaudit scorers`.
    AUTO_PRECISION: ClassVar[dict[str, str]] = {}

    def __init__(self, params, device: str = "cpu", precision: str = "auto") -> None:
        _require(*self._modules)
        from scoreaudit.plugins.scorers.model_torch import resolve_device, resolve_precision

        self.params = params
        self.device = resolve_device(device)
        self.precision = resolve_precision(self.device, precision, getattr(params, "precision", "auto"),
                                           self.AUTO_PRECISION)
        self.files = dict(self.locate_for_run(params).require())
        self._batch = BATCH["cuda" if self.device.startswith("cuda") else "cpu"]
        self._hash: str | None = None
        self.impl = self.build()

    def use_precision(self, name: str) -> None:
        """Run later forwards at `name` (fp32, fp16, bf16) on the same loaded weights (they stay fp32).

        For comparing precisions on one load (bench/precision.py, tests); a run sets it once.
        """
        from scoreaudit.plugins.scorers.model_torch import resolve_precision

        self.precision = resolve_precision(self.device, name, None)
        getattr(self.impl, "clip", self.impl).precision = self.precision

    @property
    def batch_size(self) -> int:
        """Most images per forward (the implementation splits larger batches)."""
        return self.impl.batch_size if hasattr(self, "impl") else self._batch

    @batch_size.setter
    def batch_size(self, value: int) -> None:
        self.impl.batch_size = int(value)

    @classmethod
    def precision_for(cls, params, device: str, precision: str = "auto") -> str:
        """The precision name (fp32, fp16, bf16) this scorer runs at on `device`, without torch.

        The runtime puts it in score cache keys, so fp32 and autocast scores never mix.
        """
        return choose_precision(device, precision, getattr(params, "precision", "auto"), cls.AUTO_PRECISION)

    @classmethod
    def locate(cls, params) -> Located:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    @classmethod
    def locate_for_run(cls, params) -> Located:
        return cls.locate(params)

    @classmethod
    def hub_files(cls, params) -> list[NeededFile]:  # pragma: no cover - every subclass defines it
        """Every file this scorer reads from the Hugging Face cache when `weights:` is not given."""
        raise NotImplementedError

    @classmethod
    def readiness(cls, params) -> tuple[bool, str]:
        """Whether the weight files are found (local path / HF cache), without loading anything."""
        if params is None:
            return False, "its arguments are incomplete (see `scoreaudit describe`)"
        try:
            loc = cls.locate(params)
        except ScorerUnavailable as e:
            return False, str(e)
        return loc.ready, loc.describe()

    def build(self):  # pragma: no cover
        raise NotImplementedError

    def weights_hash(self) -> str | None:
        if self._hash is None:
            self._hash = combined_hash({k: v for k, v in self.hashed_files().items()})
        return self._hash

    def hashed_files(self) -> dict[str, Path]:
        return {k: v for k, v in self.files.items() if Path(v).is_file()}

    def score(self, images: Sequence[np.ndarray], prompts: Sequence[str] | None, items=None) -> np.ndarray:
        if len(images) == 0:
            return np.empty(0, dtype=np.float64)
        if prompts is None and isinstance(getattr(self.params, "prompt", None), str):
            prompts = [self.params.prompt] * len(images)  # a fixed prompt the runtime did not expand
        return self.impl.score(list(images), None if prompts is None else list(prompts))

    def score_tensor(self, x, prompts: Sequence[str] | None):
        """Differentiable scores of float N×3×H×W images in [0, 1] (a torch tensor; the optimisation probes' path).

        The same model and preprocessing as `score`, on float tensors (no 8-bit
        rounding after the resize); gradients flow to `x`, never to the weights. The forward
        runs under the scorer's autocast, except that fp16 runs as bf16 here (fp16 gradients
        would underflow without loss scaling; see `Precision.for_gradients`).
        """
        if prompts is None and isinstance(getattr(self.params, "prompt", None), str):
            prompts = [self.params.prompt] * len(x)
        return self.impl.score_tensor(x, None if prompts is None else list(prompts))


def _pair(label: str, **kw) -> Located:
    """Locate each named file; every problem is reported (a user fixes them all at once)."""
    files, problems = {}, []
    for name, res in kw.items():
        if isinstance(res, Located):
            problems.append(res.problem)
        else:
            files[name] = res
    return Located(files, " | ".join(problems) if problems else None)


# ---------------------------------------------------------------- LAION


LAION_HEAD = HubFile("camenduru/improved-aesthetic-predictor", "sac+logos+ava1-l14-linearMSE.pth")
LAION_ARCH, LAION_TAG = "ViT-L-14-quickgelu", "openai"
LAION_CLIP_REPO = "timm/vit_large_patch14_clip_224.openai"
OPEN_CLIP_WEIGHT_NAMES = ("open_clip_model.safetensors", "open_clip_pytorch_model.bin")


class LaionParams(WeightsParams):
    pass


@scorers.register("laion_aesthetic", differentiable=True, takes_tensors=True, params=LaionParams, version="1", needs_prompt=False,
                  requires=("torch", "open_clip"),
                  official="improved-aesthetic-predictor: open_clip ViT-L-14-quickgelu/openai (open_clip's own "
                           "loader and transform) + the reference MLP on the L2-normalised embedding",
                  tolerance='1e-4 relative (fp32) where the official pipeline does not resize; resized images: PIL vs torch bicubic, within 5% of the score spread (tests/models)', gpu_precision=PRECISION_NOTES["laion_aesthetic"])
class LaionAesthetic(_ModelScorer):
    """LAION improved aesthetic predictor: MLP head on the L2-normalised OpenAI CLIP ViT-L/14 image embedding.

    weights: the head file sac+logos+ava1-l14-linearMSE.pth, or a folder holding it (and,
    optionally, open_clip_model.safetensors / open_clip_pytorch_model.bin of OpenAI ViT-L/14).
    Default: the Hugging Face cache, camenduru/improved-aesthetic-predictor (head) and
    timm/vit_large_patch14_clip_224.openai (open_clip's `ViT-L-14-quickgelu`, tag `openai`).
    """

    _modules = ("torch", "open_clip")
    # The official inference code loads CLIP with OpenAI's clip.load, which casts it to fp16 on a GPU.
    AUTO_PRECISION: ClassVar[dict[str, str]] = {"cuda": "fp16"}

    @classmethod
    def locate(cls, params) -> Located:
        w = params.weights
        head = locate_one("laion_aesthetic head", w, [LAION_HEAD.filename], [LAION_HEAD])
        clip = None
        if w is not None and Path(w).expanduser().is_dir():
            for name in OPEN_CLIP_WEIGHT_NAMES:
                if (Path(w).expanduser() / name).is_file():
                    clip = Path(w).expanduser() / name
                    break
        if clip is None:
            hub = [HubFile(LAION_CLIP_REPO, n) for n in OPEN_CLIP_WEIGHT_NAMES]
            clip = locate_one("laion_aesthetic CLIP ViT-L/14 (openai)", None, [], hub,
                              param_hint="a weights folder holding open_clip_model.safetensors")
        return _pair("laion", head=head, clip=clip)

    @classmethod
    def hub_files(cls, params) -> list[NeededFile]:
        return [NeededFile(LAION_HEAD.repo, (LAION_HEAD.filename,), "MLP head", "about 3.7 MB"),
                NeededFile(LAION_CLIP_REPO, OPEN_CLIP_WEIGHT_NAMES, "OpenAI CLIP ViT-L/14 (open_clip)", "about 1.7 GB")]

    def build(self):
        from scoreaudit.plugins.scorers.model_openclip import LaionImpl

        return LaionImpl(self.files, self.device, self.precision, LAION_ARCH, LAION_TAG, self.batch_size)


class PromptParams(WeightsParams):
    prompt: Prompt = None


# ---------------------------------------------------------------- PickScore


PICK_REPO = "yuvalkirstain/PickScore_v1"
PICK_PROCESSOR_REPO = "laion/CLIP-ViT-H-14-laion2B-s32B-b79K"
HF_WEIGHT_NAMES = ("model.safetensors", "pytorch_model.bin")
PICK_PROCESSOR_FILES = ("preprocessor_config.json", "tokenizer_config.json", "vocab.json", "merges.txt",
                        "special_tokens_map.json", "config.json")


@scorers.register("pickscore", differentiable=True, takes_tensors=True, params=PromptParams, version="1", needs_prompt=True,
                  requires=("torch", "transformers"),
                  official="the PickScore_v1 model card's code: transformers AutoModel + AutoProcessor "
                           "(laion/CLIP-ViT-H-14-laion2B-s32B-b79K), logit_scale.exp() · cosine",
                  tolerance='1e-4 relative (fp32) where the official pipeline does not resize; resized images: PIL vs torch bicubic, within 5% of the score spread (tests/models)', gpu_precision=PRECISION_NOTES["pickscore"])
class PickScore(_ModelScorer):
    """PickScore_v1: logit_scale · cos(text, image) of the fine-tuned CLIP ViT-H/14.

    weights: a folder with the transformers CLIPModel (config.json + model.safetensors or
    pytorch_model.bin), optionally with the processor files (preprocessor_config.json,
    tokenizer). Default: the Hugging Face cache, yuvalkirstain/PickScore_v1 and the processor
    of laion/CLIP-ViT-H-14-laion2B-s32B-b79K.
    """

    _modules = ("torch", "transformers")

    @classmethod
    def locate(cls, params) -> Located:
        w = params.weights
        if w is not None:
            p = Path(w).expanduser()
            if not p.is_dir() or not (p / "config.json").is_file() or not any((p / n).is_file() for n in HF_WEIGHT_NAMES):
                return Located({}, f"pickscore: weights {p} must be a folder with config.json and "
                                   f"{' or '.join(HF_WEIGHT_NAMES)} (a transformers CLIPModel)")
            model = p
        else:
            model = locate_snapshot(PICK_REPO, ["config.json"], HF_WEIGHT_NAMES)
        proc = p if (w is not None and (p / "preprocessor_config.json").is_file()) else locate_snapshot(
            PICK_PROCESSOR_REPO, list(PICK_PROCESSOR_FILES), [])
        problems = []
        if model is None:
            problems.append(missing_message("pickscore model", [f"{PICK_REPO} in the HF cache"],
                                            [HubFile(PICK_REPO, "config.json model.safetensors")],
                                            "`weights: \"folder\"`"))
        else:
            problems += snapshot_problems(model, ("config.json", *HF_WEIGHT_NAMES))
        if proc is None:
            files = " ".join(PICK_PROCESSOR_FILES)
            problems.append(missing_message("pickscore processor", [f"{PICK_PROCESSOR_REPO} in the HF cache"],
                                            [HubFile(PICK_PROCESSOR_REPO, files)],
                                            "the processor files in the weights folder"))
        else:
            problems += snapshot_problems(proc, ("preprocessor_config.json", "tokenizer_config.json"))
        if problems:
            return Located({}, " | ".join(problems))
        return Located({"model": model, "processor": proc})

    @classmethod
    def hub_files(cls, params) -> list[NeededFile]:
        return [NeededFile(PICK_REPO, ("config.json",), "CLIPModel config", "a few KB"),
                NeededFile(PICK_REPO, HF_WEIGHT_NAMES, "fine-tuned CLIP ViT-H/14 weights", "about 3.9 GB"),
                *(NeededFile(PICK_PROCESSOR_REPO, (n,), "processor", "under 3 MB") for n in PICK_PROCESSOR_FILES)]

    def hashed_files(self) -> dict[str, Path]:
        d = self.files["model"]
        return {n: d / n for n in ("config.json", *HF_WEIGHT_NAMES) if (d / n).is_file()}

    def build(self):
        from scoreaudit.plugins.scorers.model_pickscore import PickScoreImpl

        return PickScoreImpl(self.files, self.device, self.precision, self.batch_size)


# ---------------------------------------------------------------- ImageReward


IR_REPO = "THUDM/ImageReward"
BERT_REPOS = ("bert-base-uncased", "google-bert/bert-base-uncased")


@scorers.register("image_reward", differentiable=True, takes_tensors=True, params=PromptParams, version="1", needs_prompt=True,
                  requires=("torch", "transformers"),
                  official="the image-reward 1.5 package itself (ImageReward.load + score), run in its own venv "
                           "with transformers 4.55.4 (tests/models)",
                  tolerance='1e-4 relative (fp32) where the official pipeline does not resize; resized images: PIL vs torch bicubic, within 5% of the score spread (tests/models)', gpu_precision=PRECISION_NOTES["image_reward"])
class ImageReward(_ModelScorer):
    """ImageReward v1.0 (BLIP + MLP), normalised as (r − 0.16717) / 1.03334.

    weights: ImageReward.pt, or a folder with ImageReward.pt and med_config.json (and
    optionally the bert-base-uncased vocab.txt). Default: the Hugging Face cache,
    THUDM/ImageReward (ImageReward.pt, med_config.json) and bert-base-uncased (tokenizer).
    """

    _modules = ("torch", "transformers")

    @classmethod
    def locate(cls, params) -> Located:
        w = params.weights
        ckpt = locate_one("image_reward checkpoint", w, ["ImageReward.pt"], [HubFile(IR_REPO, "ImageReward.pt")])
        folder = None
        if not isinstance(ckpt, Located):
            folder = ckpt.parent
        med = folder / "med_config.json" if folder is not None and (folder / "med_config.json").is_file() else None
        if med is None:
            med = locate_one("image_reward med_config.json", None, [], [HubFile(IR_REPO, "med_config.json")],
                             param_hint="med_config.json next to ImageReward.pt")
        tok = folder if folder is not None and (folder / "vocab.txt").is_file() else None
        if tok is None:
            for repo in BERT_REPOS:
                snap = locate_snapshot(repo, ["vocab.txt"], [])
                if snap is not None:
                    tok = snap
                    break
        if tok is None:
            tok = Located({}, missing_message("image_reward tokenizer (bert-base-uncased)",
                                              [f"{r} in the HF cache" for r in BERT_REPOS],
                                              [HubFile("bert-base-uncased", "vocab.txt")],
                                              "vocab.txt next to ImageReward.pt"))
        return _pair("image_reward", checkpoint=ckpt, med_config=med, tokenizer=tok)

    @classmethod
    def hub_files(cls, params) -> list[NeededFile]:
        return [NeededFile(IR_REPO, ("ImageReward.pt",), "BLIP + MLP checkpoint", "about 1.8 GB"),
                NeededFile(IR_REPO, ("med_config.json",), "text encoder config", "under 1 KB"),
                NeededFile(BERT_REPOS[0], ("vocab.txt",), "BERT tokenizer vocabulary", "about 230 KB")]

    def hashed_files(self) -> dict[str, Path]:
        return {"checkpoint": self.files["checkpoint"], "med_config": self.files["med_config"]}

    def build(self):
        from scoreaudit.plugins.scorers.model_blip import ImageRewardImpl

        return ImageRewardImpl(self.files, self.device, self.precision, self.batch_size)


# ---------------------------------------------------------------- HPSv2


HPS_REPO, HPS_ARCH = "xswu/HPSv2", "ViT-H-14"
HPS_FILES = {"2.0": "HPS_v2_compressed.pt", "2.1": "HPS_v2.1_compressed.pt"}


class HpsParams(PromptParams):
    version: Literal["2.0", "2.1"] = "2.1"


@scorers.register("hpsv2", differentiable=True, takes_tensors=True, params=HpsParams, version="1", needs_prompt=True,
                  requires=("torch", "open_clip"),
                  official="the hpsv2 1.2.0 package itself (hpsv2.score with hps_version), run in its own venv",
                  tolerance="1e-4 relative (fp32), resized images included (HPSv2 resizes tensors as we do)",
                  gpu_precision=PRECISION_NOTES["hpsv2"])
class Hpsv2(_ModelScorer):
    """HPSv2 (v2.0 / v2.1) on open_clip ViT-H-14: cosine of image and text embeddings.

    weights: HPS_v2.1_compressed.pt / HPS_v2_compressed.pt (a dict with 'state_dict'), or a
    folder holding it. Default: the Hugging Face cache, xswu/HPSv2. Preprocessing is HPSv2's own
    (longest side to 224, zero padding), not open_clip's centre crop.
    """

    _modules = ("torch", "open_clip")
    # The official hpsv2.score runs the model under torch.cuda.amp.autocast() (fp16) on a GPU.
    AUTO_PRECISION: ClassVar[dict[str, str]] = {"cuda": "fp16"}

    @classmethod
    def locate(cls, params) -> Located:
        name = HPS_FILES[params.version]
        ckpt = locate_one(f"hpsv2 {params.version} checkpoint", params.weights, [name], [HubFile(HPS_REPO, name)])
        return _pair("hpsv2", checkpoint=ckpt)

    @classmethod
    def hub_files(cls, params) -> list[NeededFile]:
        return [NeededFile(HPS_REPO, (HPS_FILES[params.version],), f"HPS v{params.version} checkpoint (ViT-H-14)",
                           "about 2 GB")]

    def build(self):
        from scoreaudit.plugins.scorers.model_openclip import HpsImpl

        return HpsImpl(self.files, self.device, self.precision, HPS_ARCH, self.batch_size)


# ---------------------------------------------------------------- CLIP score


class ClipScoreParams(PromptParams):
    model: str = "ViT-B-32"
    pretrained: str = "openai"


# open_clip's pretrained table without importing open_clip (readiness must stay light);
# other tags are resolved through open_clip when the scorer is built.
KNOWN_OPEN_CLIP_HUB = {
    ("ViT-B-32", "openai"): "timm/vit_base_patch32_clip_224.openai",
    ("ViT-B-32-quickgelu", "openai"): "timm/vit_base_patch32_clip_224.openai",
    ("ViT-B-16", "openai"): "timm/vit_base_patch16_clip_224.openai",
    ("ViT-L-14", "openai"): "timm/vit_large_patch14_clip_224.openai",
    ("ViT-L-14-quickgelu", "openai"): "timm/vit_large_patch14_clip_224.openai",
    ("ViT-H-14", "laion2b_s32b_b79k"): "laion/CLIP-ViT-H-14-laion2B-s32B-b79K",
}


def _hub_from_open_clip(model: str, tag: str) -> str | None:
    import open_clip  # only while building, never in readiness

    cfg = open_clip.get_pretrained_cfg(model, tag) or {}
    hub = cfg.get("hf_hub", "")
    return hub.rstrip("/") if hub else None


def _open_clip_dir_weights(folder: Path) -> Path | None:
    for name in (*OPEN_CLIP_WEIGHT_NAMES, "open_clip_pytorch_model.safetensors", "model.safetensors", "pytorch_model.bin"):
        if (folder / name).is_file():
            return folder / name
    return None


@scorers.register("clip_score", differentiable=True, takes_tensors=True, params=ClipScoreParams, version="1", needs_prompt=True,
                  requires=("torch", "open_clip"),
                  official="open_clip's create_model_and_transforms (pretrained tag or local-dir) + "
                           "100 · max(cosine, 0)",
                  tolerance='1e-4 relative (fp32) where the official pipeline does not resize; resized images: PIL vs torch bicubic, within 5% of the score spread (tests/models)', gpu_precision=PRECISION_NOTES["clip_score"])
class ClipScore(_ModelScorer):
    """CLIP score: 100 · max(cos(text, image), 0) with any open_clip model.

    model: an open_clip architecture name (with pretrained: a tag whose weights are in the
    Hugging Face cache), `hf-hub:org/repo` (config and weights from the cache) or
    `local-dir:FOLDER` (open_clip_config.json + weights). weights: a checkpoint file for `model`,
    or a folder with open_clip_config.json.
    """

    _modules = ("torch", "open_clip")

    @classmethod
    def locate(cls, params, resolve_tag: bool = False) -> Located:
        model, w = params.model, params.weights
        folder: Path | None = None
        if w is not None:
            p = Path(w).expanduser()
            if p.is_dir():
                folder = p
            elif p.is_file():
                return Located({"checkpoint": p})
            else:
                return Located({}, f"clip_score: weights path {p} does not exist")
        elif model.startswith("local-dir:"):
            folder = Path(model[len("local-dir:"):]).expanduser()
        elif model.startswith("hf-hub:"):
            repo = model[len("hf-hub:"):]
            folder = locate_snapshot(repo, ["open_clip_config.json"], [])
            if folder is None:
                return Located({}, missing_message(f"clip_score {model}", [f"{repo} in the HF cache"],
                                                   [HubFile(repo, "open_clip_config.json open_clip_model.safetensors")],
                                                   "`weights: \"folder\"`"))
        if folder is not None:
            ck = _open_clip_dir_weights(folder) if (folder / "open_clip_config.json").is_file() else None
            if ck is None:
                return Located({}, f"clip_score: {folder} needs open_clip_config.json and open_clip_model.safetensors")
            return Located({"folder": folder, "checkpoint": ck})
        repo = KNOWN_OPEN_CLIP_HUB.get((model, params.pretrained))
        if repo is None and resolve_tag:
            repo = _hub_from_open_clip(model, params.pretrained)
        if repo is None:
            if resolve_tag:
                return Located({}, f"clip_score: open_clip has no Hugging Face weights for {model!r} with "
                                   f"pretrained {params.pretrained!r}; pass `weights: \"file\"`")
            return Located({}, f"clip_score: {model}/{params.pretrained} is checked when the run starts "
                               "(open_clip is needed to resolve the tag)")
        hub = [HubFile(repo, n) for n in OPEN_CLIP_WEIGHT_NAMES]
        ck = locate_one(f"clip_score {model} ({params.pretrained})", None, [], hub)
        return _pair("clip_score", checkpoint=ck)

    @classmethod
    def readiness(cls, params) -> tuple[bool, str]:
        ok, detail = super().readiness(params)
        if not ok and params is not None and "checked when the run starts" in detail:
            return True, detail  # cannot tell without open_clip; `run` reports it precisely
        return ok, detail

    @classmethod
    def locate_for_run(cls, params) -> Located:
        return cls.locate(params, resolve_tag=True)

    @classmethod
    def hub_files(cls, params) -> list[NeededFile]:
        model = params.model
        if model.startswith("local-dir:") or params.weights is not None:
            return []  # local files only
        if model.startswith("hf-hub:"):
            repo = model[len("hf-hub:"):]
            return [NeededFile(repo, ("open_clip_config.json",), "open_clip config", "a few KB"),
                    NeededFile(repo, OPEN_CLIP_WEIGHT_NAMES, f"{model} weights")]
        repo = KNOWN_OPEN_CLIP_HUB.get((model, params.pretrained))
        if repo is None:
            try:
                repo = _hub_from_open_clip(model, params.pretrained)
            except ImportError:
                repo = None
        if repo is None:
            raise ScorerUnavailable(f"clip_score: open_clip has no Hugging Face weights for {model!r} with "
                                    f"pretrained {params.pretrained!r} (or open_clip is not installed)")
        about = {"ViT-B-32": "about 0.6 GB", "ViT-B-16": "about 0.6 GB", "ViT-L-14": "about 1.7 GB",
                 "ViT-H-14": "about 3.9 GB"}.get(model.replace("-quickgelu", ""), "")
        return [NeededFile(repo, OPEN_CLIP_WEIGHT_NAMES, f"{model} ({params.pretrained}) weights", about)]

    def build(self):
        from scoreaudit.plugins.scorers.model_openclip import ClipScoreImpl

        arch = self.params.model
        return ClipScoreImpl(self.files, self.device, self.precision, arch, self.params.pretrained, self.batch_size)


__all__ = ["ClipScore", "Hpsv2", "ImageReward", "LaionAesthetic", "PickScore", "find_in_hf_cache"]
