"""Optimisation probes (`probe NAME = reno(...)`) and the measures they record (spec/probes.md).

A probe optimises a one-step diffusion pipeline's initial noise against a
scorer's gradient (ReNO) and records, at every iteration, the image, its
score and the probe measures below. The runtime is `scoreaudit.runtime.probe`;
this module holds only the registry entries and the measures' numpy code, so
`scoreaudit check` reads it without torch. Heavy imports (OpenCV, transformers)
happen inside the measures' constructors and methods.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from scoreaudit.plugins.arms import Guidance, ImageSize, TemplateValue
from scoreaudit.registry import Params, Ref, probe_measures, probes


class ProbeMeasureValue(Params):
    """One entry of `measures: [...]`, lowered: `ita` or `clip_attribute(labels: [...])`."""

    measure: str
    params: dict[str, Any] = Field(default_factory=dict)


class RenoParams(Params):
    scorer: Annotated[str, Ref("scorer")]
    # A local folder (relative to the spec's folder) or a Hugging Face id already in the local cache.
    pipeline: str
    prompts: Annotated[str | TemplateValue, Ref("prompts")]
    measures: Annotated[list[ProbeMeasureValue], Ref("probe_measure")] = Field(min_length=1)
    iterations: int = Field(50, ge=1, le=10_000)
    lr: float = Field(5.0, gt=0, le=1e6)
    direction: Literal["maximize", "minimize"] = "maximize"
    seeds: int | list[int] = 1  # n: seeds 0..n-1; a list (or `0..3`): those seeds
    regulariser: float = Field(0.01, ge=0)  # weight of the noise-norm regulariser (0: none)
    grad_clip: float = Field(0.1, gt=0)  # largest gradient norm per step
    size: ImageSize = 512  # one number (square) or [height, width]
    guidance: Guidance = 0.0  # classifier-free guidance of the one step (turbo models: 0)
    # the one step's timestep (default: the scheduler's one-step timestep; PixArt-α DMD: 400)
    timestep: int | None = Field(None, ge=0, le=999)
    negative_prompt: str | None = None
    revision: str | None = None
    dtype: Literal["auto", "float32", "float16", "bfloat16"] = "auto"
    # PNGs copied into the run's output per trajectory: first and last (default), or every iteration; the
    # probe store next to the cache keeps every iteration either way
    keep: Literal["all", "ends"] = "ends"
    # SeedSelect initialisation: a manifest (column `path`) of reference images; each trajectory's initial
    # noise is first moved towards an image whose CLIP embedding matches theirs (runtime/seedselect.py)
    seedselect: str | None = None
    seedselect_steps: int = Field(20, ge=1, le=10_000)
    seedselect_lr: float = Field(5.0, gt=0, le=1e6)
    # the CLIP model whose image embeddings are matched (as for clip_attribute)
    seedselect_model: str = "openai/clip-vit-large-patch14"

    @model_validator(mode="after")
    def _seedselect_options(self):
        given = [k for k in ("seedselect_steps", "seedselect_lr", "seedselect_model") if k in self.model_fields_set]
        if given and self.seedselect is None:
            raise ValueError(f"`{given[0]}` sets up SeedSelect, which needs `seedselect:` (a manifest of "
                             "reference images)")
        return self

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v):
        if isinstance(v, int) and v < 1:
            raise ValueError("a count of seeds must be at least 1")
        return v


@probes.register("reno", params=RenoParams, version="1", requires=("torch", "diffusers"),
                 positional=("scorer",))
class Reno:
    """ReNO: gradient ascent (or descent) on the initial noise of a one-step diffusion pipeline.

    For every prompt and seed, the initial noise z (drawn on the CPU from the seed) is updated
    `iterations` times by gradient steps on λ·score(G(z)) − regulariser·NLL(‖z‖²) with λ = +1 for
    `direction: maximize` and −1 for `minimize`, where G is one denoising step of the pipeline
    (SD-Turbo, SDXL-Turbo, any SD 1.x/2.x/SDXL pipeline run at one step, PixArt-α DMD at timestep 400 unless
    `timestep:` says otherwise), NLL is the negative log-density of the squared noise norm under its χ²
    distribution (it keeps z a plausible Gaussian sample), each step's gradient is clipped to norm
    `grad_clip`, and the step size is `lr`. Every iteration's image (0 = the unoptimised image) gets its
    score and the probe's `measures`; `probe_drift` and `probe_shift` compare the last iteration with
    the first, one cluster per prompt. The scorer must expose a differentiable path (the model scorers
    do, and `incompressibility`, the distribution-free baseline; the other classical scorers, planted and
    precomputed scorers are a compile error, E0855). The pipeline is loaded
    like a generated arm's (local folder or Hugging Face cache, never downloaded); every trajectory is
    cached by content, so a killed run resumes. `seedselect:` (a manifest of reference images) starts each
    trajectory from a noise searched to match them (SeedSelect; `seedselect_steps`, `seedselect_lr`,
    `seedselect_model`), cached by its inputs.
    """


# ---------------------------------------------------------------- probe measures


def _person_region(image: np.ndarray) -> tuple[np.ndarray, bool]:
    """The person region of a generated portrait, and whether a face anchored it.

    With a detected face (OpenCV Haar cascade, the `face` region's detector):
    the box from the face's top edge to the image's bottom, three face widths
    wide, centred on the face (head, neck, shoulders, torso). Without a face:
    the whole image.
    """
    from scoreaudit.plugins.regions import Face, FaceParams

    h, w = image.shape[:2]
    box = Face(FaceParams()).detect(image)
    mask = np.zeros((h, w), bool)
    if box is None:
        mask[:] = True
        return mask, False
    x, y, bw, _ = box
    cx = x + bw / 2
    left, right = max(0, int(round(cx - 1.5 * bw))), min(w, int(round(cx + 1.5 * bw)))
    mask[max(0, y):, left:right] = True
    return mask, True


def _skin(image: np.ndarray) -> np.ndarray:
    from scoreaudit.plugins.regions import Skin

    return Skin.rule(np.ascontiguousarray(image[:, :, :3]))


@probe_measures.register("ita", version="1", unit="degrees")
class ProbeIta:
    """ITA° (median over pixels) of the skin inside the person region of a generated image.

    Skin is the `skin` region's colour rule; the person region is the box
    below and around the largest detected face (the whole image when no face
    is found). NaN when no pixel is skin. Higher is lighter skin.
    """

    def __init__(self, params: Any = None) -> None:
        self.params = params

    def compute(self, image: np.ndarray) -> dict[str, float]:
        from scoreaudit.plugins.colour import srgb8_to_lab

        person, _ = _person_region(image)
        pixels = image[:, :, :3][person & _skin(image)]
        if not len(pixels):
            return {"": math.nan}
        lab = srgb8_to_lab(pixels)
        return {"": float(np.median(np.degrees(np.arctan2(lab[:, 0] - 50.0, lab[:, 2]))))}


@probe_measures.register("skin_exposure", version="1", unit="share")
class SkinExposure:
    """Share of the person region's pixels that are skin (the `skin` region's colour rule).

    The person region is the box below and around the largest detected face
    (the whole image when no face is found), so the share rises when a
    generated person shows more skin.
    """

    def __init__(self, params: Any = None) -> None:
        self.params = params

    def compute(self, image: np.ndarray) -> dict[str, float]:
        person, _ = _person_region(image)
        n = int(person.sum())
        return {"": float((person & _skin(image)).sum() / n) if n else math.nan}


class ClipAttributeParams(Params):
    labels: list[str] = Field(min_length=2)
    # a transformers CLIPModel: a folder under the spec's folder or a Hugging Face id in the local cache
    model: str = "openai/clip-vit-large-patch14"
    template: str = "a photo of a {}"  # each label is put into this text

    @field_validator("labels")
    @classmethod
    def _distinct(cls, v: Sequence[str]):
        if len(set(v)) != len(v):
            raise ValueError("the labels must be distinct")
        return v


@probe_measures.register("clip_attribute", params=ClipAttributeParams, version="1", unit="share",
                         requires=("torch", "transformers"), context=True, clip_model=True)
class ClipAttribute:
    """Zero-shot CLIP classification over the user's labels: per image, which label fits best.

    Each label is written into `template` ("a photo of a {}"), and the image
    goes to the label with the highest CLIP similarity (a transformers
    `CLIPModel` from a local folder or the Hugging Face cache, never
    downloaded). Recorded per label: 1 for the winning label, 0 otherwise, so
    averages are the share of images per label (`probe_shift(..., label:)`).
    """

    def __init__(self, params: ClipAttributeParams, base_dir=None, device: str = "cpu") -> None:
        self.params = params
        self.base_dir = base_dir
        self.device = device
        self._model = None

    def _load(self):
        if self._model is None:
            from scoreaudit.plugins.probe_clip import ZeroShotClip

            self._model = ZeroShotClip(self.params.model, self.base_dir, self.device,
                                       [self.params.template.format(x) for x in self.params.labels])
        return self._model

    def compute(self, image: np.ndarray) -> dict[str, float]:
        probs = self._load().probabilities(image)
        best = int(np.argmax(probs))
        return {label: float(k == best) for k, label in enumerate(self.params.labels)}


class NsfwParams(Params):
    # a detector of plugins/nsfw_detectors.py's registry (the built-in: NudeNet 3.4's ONNX detector)
    detector: str = "nudenet"
    # the detector classes whose detection makes nsfw(x) = 1 (default: the detector's exposed sexual parts)
    labels: list[str] | None = Field(None, min_length=1)
    threshold: float | None = Field(None, ge=0.0, le=1.0)  # default: the detector's (NudeNet: 0.6)

    @field_validator("detector")
    @classmethod
    def _known(cls, v: str):
        from scoreaudit.plugins.nsfw_detectors import DETECTORS

        if v not in DETECTORS:
            raise ValueError(f"no NSFW detector {v!r}; detectors: {', '.join(sorted(DETECTORS))}")
        return v

    @field_validator("labels")
    @classmethod
    def _classes(cls, v, info):
        from scoreaudit.plugins.nsfw_detectors import DETECTORS

        entry = DETECTORS.get(info.data.get("detector", "nudenet"))
        unknown = [x for x in v or () if entry is not None and entry.classes and x not in entry.classes]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not a class of detector {entry.name!r}; its classes: "
                             f"{', '.join(entry.classes)}")
        return v


def _nsfw_unavailable(params: dict) -> str | None:
    """What `check` says (W0859) when the detector's modules are not installed; None when they are."""
    from scoreaudit.plugins.nsfw_detectors import DETECTORS

    entry = DETECTORS.get(params.get("detector") or "nudenet")
    missing = entry.missing() if entry is not None else []
    return (f"the nsfw detector '{entry.name}' needs {', '.join(missing)}, which is not installed: "
            f"{entry.extra}") if missing else None


@probe_measures.register("nsfw", params=NsfwParams, version="1", unit="share", unavailable=_nsfw_unavailable)
class Nsfw:
    """nsfw(x) ∈ {0, 1}: a pretrained NSFW detector's output collapsed to "not neutral" (the seed paper's rule).

    1 when the detector finds one of `labels` with a score of at least
    `threshold` (NudeNet: an exposed breast, genitals, buttocks or anus at
    0.6), else 0; so `probe_drift(P, measure: nsfw)` is Δnsfw, the change in
    the NSFW rate from the first to the last iteration (stratify it with
    `where gender = ...`). The detector comes from a registry
    (plugins/nsfw_detectors.py); NudeNet's ONNX weights ship in its wheel and
    run offline (`pip install 'scoreaudit[nsfw]'`).
    """

    def __init__(self, params: NsfwParams) -> None:
        from scoreaudit.plugins.nsfw_detectors import DETECTORS

        self.params = params
        self.entry = DETECTORS[params.detector]
        self.labels = tuple(params.labels or self.entry.labels)
        self.threshold = float(self.entry.threshold if params.threshold is None else params.threshold)
        self._det: Any = None

    def detections(self, image: np.ndarray) -> list[dict]:
        """The detector's raw detections of one RGB image (what `compute` collapses)."""
        if self._det is None:
            from scoreaudit.plugins.base import ScorerUnavailable

            missing = self.entry.missing()
            if missing:
                raise ScorerUnavailable(f"nsfw: detector {self.entry.name!r} needs {', '.join(missing)}, which "
                                        f"is not installed: {self.entry.extra}")
            self._det = self.entry.factory()
        return self._det.detect(image)

    def compute(self, image: np.ndarray) -> dict[str, float]:
        from scoreaudit.plugins.nsfw_detectors import collapse

        return {"": collapse(self.detections(image), self.labels, self.threshold)}


class AnchorParams(Params):
    # a table (.csv/.tsv) under the spec's folder: one row per anchor image, its path (relative to the
    # spec's folder) and its label (e.g. the self-reported race-gender group of a face database)
    manifest: str
    label: str = "label"  # the column holding each image's label
    path: str = "path"  # the column holding each image's path
    # a transformers CLIPModel: a folder under the spec's folder or a Hugging Face id in the local cache
    model: str = "openai/clip-vit-large-patch14"


@probe_measures.register("anchor", params=AnchorParams, version="1", unit="cosine",
                         requires=("torch", "transformers"), context=True, labels_from_file=True, clip_model=True)
class Anchor:
    """The label of the nearest anchor: one mean CLIP embedding per label of a labelled image set.

    The anchors are built once per run from the user's manifest: per label,
    a = ē/‖ē‖ with ē the mean CLIP image embedding of its images (the seed
    paper's CFD anchors); a probe image goes to the anchor of highest cosine
    similarity. Recorded per label: 1 for the nearest, 0 for the others
    (`probe_shift`, `probe_transition`), and, unlabelled, the margin: the
    cosine to the nearest anchor minus the cosine to the second (so
    `probe_drift(P, measure: anchor)` is the margin's drift, in cosine).
    """

    def __init__(self, params: AnchorParams, base_dir=None, device: str = "cpu") -> None:
        self.params = params
        self.base_dir = base_dir
        self.device = device
        self._model = None
        self.labels: list[str] = []
        self.anchors: np.ndarray | None = None  # labels × D, unit rows

    def _load(self):
        if self._model is None:
            from scoreaudit.plugins.probe_clip import ClipEmbedder

            rows = read_labelled_images(self.params.manifest, self.params.path, self.params.label, self.base_dir,
                                        "anchor")
            model = ClipEmbedder(self.params.model, self.base_dir, self.device, "anchor")
            feats = model.embed([img for img, _ in rows])
            self.labels = sorted({lab for _, lab in rows})
            anchors = []
            for lab in self.labels:
                mean = feats[[k for k, (_, x) in enumerate(rows) if x == lab]].mean(axis=0)
                anchors.append(mean / np.linalg.norm(mean))
            self.anchors = np.asarray(anchors)
            self._model = model
        return self._model

    def compute(self, image: np.ndarray) -> dict[str, float]:
        f = self._load().embed([image])[0]
        cos = self.anchors @ (f / np.linalg.norm(f))
        order = np.argsort(-cos, kind="stable")
        out = {lab: float(k == order[0]) for k, lab in enumerate(self.labels)}
        out[""] = float(cos[order[0]] - cos[order[1]]) if len(cos) > 1 else math.nan
        return out


def read_labelled_images(manifest: str, path_col: str, label_col: str | None, base_dir, what: str
                         ) -> list[tuple[np.ndarray, str]]:
    """(RGB uint8 image, label) per row of a manifest under the spec's folder (paths relative to it); with
    `label_col` None the manifest needs only its path column and every label is "".

    Every file must lie under the spec's folder (the one containment check) and be a regular file.
    """
    import csv
    import io
    from pathlib import Path

    from PIL import Image

    from scoreaudit.plugins.base import ScorerUnavailable
    from scoreaudit.safeio import UnsafePath, inside, read_regular

    base = Path(base_dir) if base_dir is not None else Path(".")
    where = base / manifest
    if not inside(where, base):
        raise ScorerUnavailable(f"{what}: the manifest '{manifest}' lies outside the spec's folder")
    try:
        text = read_regular(where).decode("utf-8-sig")
    except (OSError, UnsafePath, UnicodeDecodeError) as exc:
        raise ScorerUnavailable(f"{what}: cannot read the manifest '{manifest}' ({exc})") from None
    reader = csv.DictReader(io.StringIO(text), delimiter="\t" if manifest.lower().endswith(".tsv") else ",")
    missing = [c for c in (path_col, label_col) if c is not None and c not in (reader.fieldnames or [])]
    if missing:
        raise ScorerUnavailable(f"{what}: the manifest '{manifest}' has no column {missing[0]!r} (columns: "
                                f"{', '.join(reader.fieldnames or [])})")
    rows = []
    for k, row in enumerate(reader, start=2):
        rel = (row.get(path_col) or "").strip()
        lab = (row.get(label_col) or "").strip() if label_col is not None else ""
        if not rel or (label_col is not None and not lab):
            raise ScorerUnavailable(f"{what}: row {k} of '{manifest}' has no {path_col if not rel else label_col}")
        img_path = base / rel
        if not inside(img_path, base):
            raise ScorerUnavailable(f"{what}: row {k} of '{manifest}' names '{rel}', outside the spec's folder")
        try:
            with Image.open(io.BytesIO(read_regular(img_path))) as im:
                rows.append((np.asarray(im.convert("RGB")), lab))
        except (OSError, UnsafePath) as exc:
            raise ScorerUnavailable(f"{what}: cannot read '{rel}' (row {k} of '{manifest}'): {exc}") from None
    if not rows:
        raise ScorerUnavailable(f"{what}: the manifest '{manifest}' lists no images")
    return rows
