"""Tiny random diffusers pipelines for tests: a few channels and layers, built offline in milliseconds.

`save_tiny_sd(folder)` writes a StableDiffusionPipeline (UNet with 8/16
channels, a tiny VAE, a 2-layer CLIP text encoder with the real CLIP
tokenizer, DDIM) with `save_pretrained`, so `DiffusionPipeline.from_pretrained`
loads it exactly like real weights. Weights are random but seeded: the same
seed gives the same files.
"""

from __future__ import annotations

from pathlib import Path

from scoreaudit.testing.tiny_models import write_clip_tokenizer


def tiny_sd_pipeline(seed: int = 0):
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=16, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=16, attention_head_dim=4, norm_num_groups=4)
    vae = AutoencoderKL(block_out_channels=(8, 16), in_channels=3, out_channels=3,
                        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), latent_channels=4,
                        norm_num_groups=4, sample_size=32)
    text = CLIPTextModel(CLIPTextConfig(vocab_size=49408, hidden_size=16, intermediate_size=32,
                                        num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=77,
                                        bos_token_id=49406, eos_token_id=49407, pad_token_id=49407))
    sched = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                          set_alpha_to_one=False, steps_offset=1)
    return unet, vae, text, sched


def _tiny_tokenizer(folder: Path):
    """A CLIP tokenizer built in a scratch folder inside `folder` (removed again: the pipeline saves its own copy)."""
    import shutil

    from transformers import CLIPTokenizer

    tok_dir = folder / "_tok"
    tok_dir.mkdir(exist_ok=True)
    try:
        write_clip_tokenizer(tok_dir)
        return CLIPTokenizer.from_pretrained(str(tok_dir))
    finally:
        shutil.rmtree(tok_dir)


def save_tiny_sd(folder: Path, seed: int = 0) -> Path:
    """Write a tiny StableDiffusionPipeline to `folder` (model_index.json and one folder per component)."""
    from diffusers import StableDiffusionPipeline

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _tiny_tokenizer(folder)
    unet, vae, text, sched = tiny_sd_pipeline(seed)
    pipe = StableDiffusionPipeline(unet=unet, vae=vae, text_encoder=text, tokenizer=tokenizer, scheduler=sched,
                                   safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(str(folder))  # writes the tokenizer into the pipeline's own folder
    return folder


def save_tiny_sdxl(folder: Path, seed: int = 0) -> Path:
    """Write a tiny StableDiffusionXLPipeline (two text encoders, pooled embeddings, size conditioning)."""
    import torch
    from diffusers import (AutoencoderKL, EulerDiscreteScheduler, StableDiffusionXLPipeline,
                           UNet2DConditionModel)
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = _tiny_tokenizer(folder)
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=16, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32, attention_head_dim=4, norm_num_groups=4, addition_embed_type="text_time",
        addition_time_embed_dim=4, projection_class_embeddings_input_dim=16 + 6 * 4,
        transformer_layers_per_block=1)
    vae = AutoencoderKL(block_out_channels=(8, 16), in_channels=3, out_channels=3,
                        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), latent_channels=4,
                        norm_num_groups=4, sample_size=32)
    cfg = dict(vocab_size=49408, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
               max_position_embeddings=77, bos_token_id=49406, eos_token_id=49407, pad_token_id=49407)
    text = CLIPTextModel(CLIPTextConfig(**cfg))
    text2 = CLIPTextModelWithProjection(CLIPTextConfig(projection_dim=16, **cfg))
    sched = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                   timestep_spacing="trailing", steps_offset=1)
    pipe = StableDiffusionXLPipeline(unet=unet, vae=vae, text_encoder=text, text_encoder_2=text2,
                                     tokenizer=tokenizer, tokenizer_2=tokenizer, scheduler=sched)
    pipe.save_pretrained(str(folder))  # writes the tokenizer into the pipeline's own folder
    return folder
