"""Tiny random diffusers pipelines for tests: a few channels and layers, built offline in milliseconds.

`save_tiny_sd(folder)` writes a StableDiffusionPipeline (UNet with 8/16
channels, a tiny VAE, a 2-layer CLIP text encoder with the real CLIP
tokenizer, DDIM) with `save_pretrained`, so `DiffusionPipeline.from_pretrained`
loads it exactly like real weights. Weights are random but seeded: the same
seed gives the same files. `save_tiny_pixart(folder)` writes a PixArtAlphaPipeline
(a 2-layer T5 encoder with a T5 tokenizer built in memory, a tiny PixArt
transformer with learned-variance outputs, DDPM: the PixArt-α DMD layout).
"""

from __future__ import annotations

from pathlib import Path

from scoreaudit.testing.tiny_models import write_clip_tokenizer


def tiny_sd_pipeline(seed: int = 0):
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
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
    from diffusers import AutoencoderKL, EulerDiscreteScheduler, StableDiffusionXLPipeline, UNet2DConditionModel
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


#: Words of the tiny T5 vocabulary (whole-word pieces); any other word falls back to letter pieces.
_T5_WORDS = ("a", "an", "the", "of", "in", "on", "with", "and", "photo", "portrait", "person", "man", "woman",
             "doctor", "nurse", "face", "smiling", "people", "picture")


def tiny_t5_tokenizer():
    """A T5 tokenizer built in memory, without sentencepiece or a download.

    transformers' `T5Tokenizer` (a `tokenizers` Unigram model) takes its
    vocabulary as (piece, log-probability) pairs: the three T5 specials
    (`<pad>` 0, `</s>` 1, `<unk>` 2) first, as in the real T5 vocabulary, then
    whole words after the word-boundary mark "▁" and single characters, so
    every lower-case ASCII prompt tokenises (characters outside it become
    `<unk>`). `save_pretrained` writes it as `tokenizer.json`, which loads
    back without sentencepiece.
    """
    import string

    from transformers import T5Tokenizer

    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -3.0)]
    vocab += [("\u2581" + w, -2.0) for w in _T5_WORDS]
    chars = string.ascii_lowercase + string.digits + ",.-'"
    vocab += [(c, -5.0) for c in chars] + [("\u2581" + c, -5.5) for c in chars]
    return T5Tokenizer(vocab=vocab, extra_ids=0)


def save_tiny_pixart(folder: Path, seed: int = 0, clip_sample: bool = False) -> Path:
    """Write a tiny PixArtAlphaPipeline (the PixArt-α DMD layout: T5 encoder, PixArt transformer with
    learned-variance outputs, VAE, DDPM scheduler) to `folder` with `save_pretrained`."""
    import torch
    from diffusers import AutoencoderKL, DDPMScheduler, PixArtAlphaPipeline, PixArtTransformer2DModel
    from transformers import T5Config, T5EncoderModel

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = tiny_t5_tokenizer()
    torch.manual_seed(seed)
    text = T5EncoderModel(T5Config(vocab_size=len(tokenizer), d_model=16, d_kv=8, d_ff=32, num_layers=2,
                                   num_heads=2, relative_attention_num_buckets=8, pad_token_id=0, eos_token_id=1,
                                   decoder_start_token_id=0))
    transformer = PixArtTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4,
                                           out_channels=8, num_layers=2, sample_size=16, patch_size=2,
                                           caption_channels=16, cross_attention_dim=16)
    vae = AutoencoderKL(block_out_channels=(8, 16), in_channels=3, out_channels=3,
                        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
                        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), latent_channels=4,
                        norm_num_groups=4, sample_size=32)
    sched = DDPMScheduler(beta_start=0.0001, beta_end=0.02, beta_schedule="linear", clip_sample=clip_sample)
    pipe = PixArtAlphaPipeline(tokenizer=tokenizer, text_encoder=text, vae=vae, transformer=transformer,
                               scheduler=sched)
    pipe.save_pretrained(str(folder))
    return folder
