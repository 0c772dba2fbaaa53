"""Model scorers (the `models` extra). Heavy imports happen inside the factories."""

from __future__ import annotations

from typing import Literal, Optional, Union

from scoreaudit.registry import ColumnValue, Params, scorers

Prompt = Optional[Union[str, ColumnValue]]


class WeightsParams(Params):
    weights: Optional[str] = None  # local file/dir; None: the Hugging Face cache
    precision: Literal["auto", "fp32", "fp16", "bf16"] = "auto"


class LaionParams(WeightsParams):
    pass


@scorers.register("laion_aesthetic", params=LaionParams, version="1", needs_prompt=False,
                  requires=("torch", "open_clip"))
class LaionAesthetic:
    """LAION improved aesthetic predictor: MLP head on the L2-normalised OpenAI CLIP ViT-L/14 image embedding."""


class PromptParams(WeightsParams):
    prompt: Prompt = None


@scorers.register("pickscore", params=PromptParams, version="1", needs_prompt=True,
                  requires=("torch", "transformers"))
class PickScore:
    """PickScore_v1: logit_scale · cos(text, image) of the fine-tuned CLIP ViT-H/14."""


@scorers.register("image_reward", params=PromptParams, version="1", needs_prompt=True,
                  requires=("torch", "transformers"))
class ImageReward:
    """ImageReward v1.0 (BLIP + MLP), normalised as (r − 0.16717) / 1.03334."""


class HpsParams(PromptParams):
    version: Literal["2.0", "2.1"] = "2.1"


@scorers.register("hpsv2", params=HpsParams, version="1", needs_prompt=True,
                  requires=("torch", "open_clip"))
class Hpsv2:
    """HPSv2 (v2.0 / v2.1) on open_clip ViT-H-14: cosine of image and text embeddings."""


class ClipScoreParams(PromptParams):
    model: str = "ViT-B-32"
    pretrained: str = "openai"


@scorers.register("clip_score", params=ClipScoreParams, version="1", needs_prompt=True,
                  requires=("torch", "open_clip"))
class ClipScore:
    """CLIP score: 100 · max(cos(text, image), 0) with any open_clip model."""
