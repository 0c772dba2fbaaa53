"""Arm sources: where images (or image pairs) and their manifest come from."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from scoreaudit.registry import Params, Ref, arms

Column = Annotated[str, Ref("column")]


class ImagesParams(Params):
    folder: str
    manifest: str | None = None  # CSV, parquet, JSON lines or JSON list; None: every image file in the folder
    kind: Literal["real", "synthetic"] = "synthetic"
    cluster: Column | None = None
    strata: Column | list[Column] | None = None
    factors: list[Column] = []  # noqa: RUF012 - a pydantic field: each model gets its own copy
    id: Column = "id"
    path: Column = "path"
    prompt: Column | None = None
    on_error: Literal["skip", "fail"] | None = None
    max_pixels: int = 89_478_485  # decompression-bomb guard (Pillow's default)
    # Long tables of precomputed results (spec/precomputed.md), relative to the spec's folder.
    scores: str | None = None  # id, operator, dose, scorer, score
    measures: str | None = None  # id, operator, dose, measure, value


@arms.register("images", params=ImagesParams, version="1", positional=("folder",))
class Images:
    """A folder of images with a manifest (one row per image: id, path, and any other columns).

    `cluster` groups dependent images (a base image, a prompt): all inference
    resamples clusters. `strata` and `factors` name manifest columns.
    """


class PairsParams(Params):
    manifest: str
    preferred: Column
    other: Column
    prompt: Column | None = None
    id: Column = "id"
    kind: Literal["real", "synthetic"] = "synthetic"
    cluster: Column | None = None
    on_error: Literal["skip", "fail"] | None = None
    # Long table of precomputed scores (spec/precomputed.md), relative to the spec's folder.
    scores: str | None = None
    measures: str | None = None  # accepted for symmetry; pairs arms have no operators to measure
    # false: the pairs have no image files; every scorer used on the arm must be precomputed
    # (manifest columns or a scores table). `preferred`/`other` then only name the two sides.
    images: bool = True


@arms.register("pairs", params=PairsParams, version="1", positional=("manifest",))
class Pairs:
    """Image pairs from a manifest: `preferred` and `other` columns hold image paths (relative to the manifest).

    The manifest may be CSV, parquet, JSON lines or a JSON list of records.
    With `images: false` the pairs have no image files (scores computed
    elsewhere): every scorer used on the arm must be `precomputed(...)` or come
    from a scores table (spec/precomputed.md).
    """


class PromptColumn(Params):
    """`column(job, "data/jobs.csv")` inside `template(...)`: the distinct values of a column of a file."""

    column: str
    file: str


class TemplateValue(Params):
    """`template("a photo of a {gender} {job}", gender: [...], job: column(job, "data/jobs.csv"))`, lowered.

    Every combination of the factor levels is one prompt; prompts that differ
    only in their factors form a counterfactual set (a cluster).
    """

    template: str
    factors: dict[str, list[str] | PromptColumn]


# Generated images' sides and guidance, bounded where a pipeline can still compute (issue 27): `size: 1000000000`
# passed check and asked the pipeline for a 10^18-pixel latent; a non-finite guidance makes every image NaN.
def _image_size(v: int | list[int]) -> int | list[int]:
    sides = [v] if isinstance(v, int) else list(v)
    if not isinstance(v, int) and len(sides) != 2:
        raise ValueError(f"give one side or [height, width], not {len(sides)} numbers")
    for side in sides:
        if not 8 <= side <= 8192:
            raise ValueError(f"each side must be between 8 and 8192 pixels, not {side}")
    return v


ImageSize = Annotated[int | list[int], AfterValidator(_image_size)]
Guidance = Annotated[float, Field(ge=-1000, le=1000)]


class GenerateParams(Params):
    # A local folder (relative to the spec's folder) or a Hugging Face id already in the local cache.
    pipeline: str
    # A file of prompts (.txt: one per line; .csv/.parquet/.jsonl: a `prompt` column) or `template(...)`.
    prompts: Annotated[str | TemplateValue, Ref("prompts")]
    seeds: int | list[int] = 1  # n: seeds 0..n-1; a list: those seeds
    steps: int = Field(30, ge=1, le=1000)
    guidance: Guidance = 7.0
    size: ImageSize = 512  # one number (square) or [height, width]
    scheduler: str | None = None  # a diffusers scheduler class name; None: the pipeline's own
    negative_prompt: str | None = None
    # The prompt the images are scored with: None = the generation prompt; else a text whose `{factor}`
    # placeholders are filled with each image's template levels (e.g. the template without `{gender}`).
    score_prompt: str | None = None
    revision: str | None = None  # a Hugging Face revision (a cached snapshot)
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    batch_size: int = Field(1, ge=1, le=256)
    kind: Literal["real", "synthetic"] = "synthetic"
    on_error: Literal["skip", "fail"] | None = None


@arms.register("generate", params=GenerateParams, version="1", positional=("pipeline",), source="generate",
               requires=("torch", "diffusers"))
class Generate:
    """Images generated by a diffusers pipeline (loaded from a local folder or the Hugging Face cache, never downloaded).

    One image per (prompt, seed). With `template(...)` prompts the template's
    factors become the arm's factors and each counterfactual set of prompts
    (same text apart from the factors) and seed is a cluster. Every image is a
    cached, content-addressed step (pipeline identity, scheduler, prompt,
    negative prompt, seed, steps, guidance, size, dtype): a killed run resumes
    without regenerating. The images are written as PNG with a `manifest.csv`
    into the run's output (`generated/ARM/`), so they can be audited again as
    `images(...)`.
    """
