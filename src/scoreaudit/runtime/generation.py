"""Generated arms: run a diffusers pipeline once per (prompt, seed) and hand the images on as an `images` arm.

Every image is a content-addressed file in the generation store next to the
cache (`CACHE.generated/`), keyed by the pipeline's identity (Hugging Face
snapshot commit, or a digest of a local folder's files), scheduler, prompt,
negative prompt, seed, steps, guidance, size and dtype. A PNG is committed by
an atomic rename, so a run killed at any moment resumes and regenerates only
what was not committed. The run's output gets `generated/ARM/*.png` and a
`manifest.csv` (id, path, prompt, seed, cluster, factors), which an
`images(...)` arm can audit again later. torch and diffusers are imported
only when an image has to be made.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scoreaudit import registry
from scoreaudit.compiler.ir import ArmIR, AuditIR, PluginCall
from scoreaudit.compiler.prompts import PromptsError, cluster_of, expand_prompts, score_prompt_for, seed_list
from scoreaudit.diagnostics import Diagnostic, DiagnosticError
from scoreaudit.plugins.base import ScorerUnavailable

GEN_KEY_VERSION = "1"
#: files whose bytes identify a pipeline folder (configs are hashed whole, weights by a digest of their bytes)
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf")


class GenerationUnavailable(ScorerUnavailable):
    """A generated arm cannot run here (no diffusers/torch, pipeline files missing); exit 3."""


class PipelineMissing(GenerationUnavailable):
    """The pipeline is neither a folder under the spec's folder nor in the Hugging Face cache."""


@dataclass(frozen=True)
class Job:
    """One image to generate: its id, prompt row, seed and content key."""

    id: str
    prompt: str
    seed: int
    cluster: str
    factors: dict
    key: str


def is_generated(arm: ArmIR) -> bool:
    return registry.generated_arm(arm.call.plugin)


def sizes(params: dict) -> tuple[int, int]:
    s = params.get("size", 512)
    return (int(s), int(s)) if isinstance(s, int) else (int(s[0]), int(s[1]))


def _error(name: str, message: str, help: str | None = None, code: str = "E0852", kind: str = "arm"
           ) -> DiagnosticError:
    """A runtime diagnostic that names the generated arm (kind "arm") or the probe (kind "probe")."""
    return DiagnosticError([Diagnostic(code, "error", f"{kind} '{name}': {message}", None, help)])


def _file_digest(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()


def _folder_identity(folder: Path) -> str:
    """sha256 over every file's relative path and content digest (weights included): the weights' identity."""
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file() and not q.name.startswith(".")):
        h.update(str(p.relative_to(folder)).encode("utf-8") + b"\0" + _file_digest(p).encode("ascii") + b"\0")
    return h.hexdigest()


_SHARD = re.compile(r"-\d{5}-of-\d{5}$")


def weights_variant(folder: Path) -> str | None:
    """The weights variant a pipeline folder holds only in variant form (e.g. "fp16"), else None.

    `hf download REPO --include "*.fp16.*" ...` fetches `diffusion_pytorch_model.fp16.safetensors`
    and no plain weights; `from_pretrained` then needs `variant="fp16"` (without it: "no file named
    model.safetensors"), and with it a folder of plain weights fails. So the variant is read from
    the files: the one variant of the components that have no plain weights.
    """
    folder = Path(folder)
    try:
        names = _components(folder)
    except (OSError, ValueError):
        return None
    found: set[str] = set()
    for name in names:
        sub = folder / name
        if not sub.is_dir():
            continue
        stems = [_SHARD.sub("", q.name[: -len(sfx)]) for q in sub.iterdir()
                 for sfx in _WEIGHT_SUFFIXES if q.name.endswith(sfx)]
        if stems and all("." in st for st in stems):  # no plain weights in this component
            found |= {st.rsplit(".", 1)[1] for st in stems}
    return found.pop() if len(found) == 1 else None


def _components(folder: Path) -> list[str]:
    """The component folders model_index.json names (those with a library); OSError/ValueError if unreadable."""
    comps = json.loads((folder / "model_index.json").read_text(encoding="utf-8"))
    return [n for n, spec in comps.items() if not n.startswith("_") and isinstance(spec, list) and spec[0] is not None]


def _missing_files(folder: Path) -> list[str]:
    """What `from_pretrained` will not find: model_index.json, and each component's config and weights."""
    if not (folder / "model_index.json").is_file():
        return ["model_index.json"]
    try:
        names = _components(folder)
    except (OSError, ValueError):
        return ["model_index.json (unreadable)"]
    missing = []
    for name in names:
        sub = folder / name
        if not sub.is_dir():
            missing.append(f"{name}/")
            continue
        files = [q.name for q in sub.iterdir()]
        if name in ("unet", "vae", "text_encoder", "text_encoder_2", "transformer", "prior") and not any(
                f.endswith(_WEIGHT_SUFFIXES) for f in files):
            missing.append(f"{name}/ weights (*.safetensors)")
        if not any(f.endswith(".json") or f.endswith(".txt") or f.endswith(".model") for f in files):
            missing.append(f"{name}/ config")
    return missing


PIPELINE_FILES = ("*.json", "*.txt", "*.fp16.safetensors")  # configs, tokenizers, fp16 weights: what loads


def fetch_hint(name: str) -> str:
    """How to put a Hub pipeline in the cache: only what `from_pretrained` loads, not the whole repo."""
    from scoreaudit.plugins.scorers.model_weights import hf_include_line

    return (f"`scoreaudit weights --download SPEC` (what the spec's pipelines and scorers need), or "
            f"`{hf_include_line(name, PIPELINE_FILES)}`")


def find_pipeline(arm: str, params: dict, spec_dir: Path, kind: str = "arm") -> tuple[Path, bool]:
    """(folder, local): a complete pipeline folder relative to the spec, or a snapshot already in the HF
    cache; raises GenerationUnavailable naming what is missing. Reads no weights (cheap: `weights` lists it).
    Messages name the generated arm or (kind "probe") the probe that asked for the pipeline."""
    name = params["pipeline"]
    who = f"{kind} '{arm}'"
    local = spec_dir / name
    if local.is_dir():
        missing = _missing_files(local)
        if missing:
            raise GenerationUnavailable(f"{who}: pipeline folder '{name}' lacks {', '.join(missing)} "
                                        "(save it with `pipeline.save_pretrained(folder)`)")
        return local, True
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise GenerationUnavailable(f"{who}: generated arms need the generate extra ({exc.name}): "
                                    "pip install 'scoreaudit[generate]'") from None
    try:
        from scoreaudit.plugins.scorers.model_weights import hf_cache_dir  # the cache `weights` fills

        folder = Path(snapshot_download(name, revision=params.get("revision"), local_files_only=True,
                                        cache_dir=str(hf_cache_dir())))
    except Exception as exc:  # noqa: BLE001 - not cached (LocalEntryNotFoundError), bad id (HFValidationError)
        raise PipelineMissing(
            f"{who}: pipeline '{name}' is neither a folder under the spec's folder nor in the Hugging Face "
            f"cache ({type(exc).__name__}); nothing is downloaded at run time: fetch it beforehand with "
            f"{fetch_hint(name)}, or save one with `DiffusionPipeline.from_pretrained(...).save_pretrained(DIR)`"
        ) from None
    missing = _missing_files(folder)
    if missing:
        raise GenerationUnavailable(f"{who}: the cached snapshot of '{name}' lacks {', '.join(missing)}; "
                                    f"download them with {fetch_hint(name)}")
    return folder, False


def locate_pipeline(arm: str, params: dict, spec_dir: Path, kind: str = "arm") -> tuple[Path, str]:
    """(folder, identity): `find_pipeline`'s folder and the identity its images are keyed by."""
    folder, local = find_pipeline(arm, params, spec_dir, kind)
    if local:
        return folder, "sha256:" + _folder_identity(folder)
    name = params["pipeline"]
    variant = weights_variant(folder)  # which files of the snapshot load: part of the weights' identity
    return folder, "hf:" + name + "@" + folder.name + (f"#{variant}" if variant else "")


def jobs_for(arm: ArmIR, spec_dir: Path, identity: str, dtype: str, allow_outside: bool = False) -> list[Job]:
    """Every (prompt, seed) of the arm with its content key; ids are stable (`p0003_s1`)."""
    p = arm.call.params
    try:
        rows = expand_prompts(p["prompts"], spec_dir, allow_outside)
    except PromptsError as exc:
        raise _error(arm.name, str(exc), exc.help, code=exc.code) from None
    if not rows:
        raise _error(arm.name, "no prompts", "add prompts to the file or levels to the template", code="E0852")
    h, w = sizes(p)
    out = []
    for i, row in enumerate(rows):
        for seed in seed_list(p.get("seeds", 1)):
            payload = json.dumps({"v": GEN_KEY_VERSION, "pipeline": identity, "scheduler": p.get("scheduler"),
                                  "prompt": row["prompt"], "negative_prompt": p.get("negative_prompt"),
                                  "seed": seed, "steps": p.get("steps"), "guidance": p.get("guidance"),
                                  "size": [h, w], "dtype": dtype}, sort_keys=True)
            out.append(Job(f"p{i:04d}_s{seed}", row["prompt"], seed, cluster_of(p["prompts"], row, seed),
                           dict(row["factors"]),
                           hashlib.sha256(payload.encode("utf-8")).hexdigest()))
    return out


def _dtype_name(params: dict, device: str) -> str:
    d = params.get("dtype", "auto")
    if d == "auto":
        return "float16" if device.startswith("cuda") else "float32"
    return d


class Generator:
    """Loads the pipeline lazily (only when some image is not in the store) and makes batches of images."""

    def __init__(self, arm: str, params: dict, folder: Path, device: str, dtype: str, kind: str = "arm") -> None:
        self.arm, self.params, self.folder, self.device, self.dtype = arm, params, folder, device, dtype
        self.kind = kind  # "arm", or "probe" when a probe loads the pipeline (messages name it)
        self.pipe: Any = None

    def _load(self):
        try:
            import diffusers
            import torch
        except ImportError as exc:
            raise GenerationUnavailable(f"{self.kind} '{self.arm}': generated arms and probes need the generate "
                                        f"extra ({exc.name}): "
                                        "pip install 'scoreaudit[generate]'") from None
        import warnings

        diffusers.utils.logging.set_verbosity_error()  # load chatter (accelerate hints, progress bars)
        diffusers.utils.logging.disable_progress_bar()
        try:
            import transformers

            transformers.utils.logging.set_verbosity_error()
            transformers.utils.logging.disable_progress_bar()
        except (ImportError, AttributeError):
            pass
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # `torch_dtype` is renamed `dtype` in new releases
                variant = weights_variant(self.folder)
                pipe = diffusers.DiffusionPipeline.from_pretrained(
                    str(self.folder), local_files_only=True, torch_dtype=getattr(torch, self.dtype),
                    **({"variant": variant} if variant else {}))
        except (OSError, ValueError) as exc:
            raise GenerationUnavailable(f"{self.kind} '{self.arm}': cannot load pipeline "
                                        f"'{self.params['pipeline']}': {exc}") from None
        sched = self.params.get("scheduler")
        if sched:
            cls = getattr(diffusers, sched, None)
            if cls is None or not hasattr(cls, "from_config"):
                raise _error(self.arm, f"unknown scheduler '{sched}'",
                             "name a diffusers scheduler class, e.g. DDIMScheduler or EulerDiscreteScheduler",
                             code="E0853", kind=self.kind)
            pipe.scheduler = cls.from_config(pipe.scheduler.config)
        pipe = pipe.to(self.device)
        pipe.set_progress_bar_config(disable=True)
        self.pipe = pipe

    def __call__(self, jobs: list[Job], on_step: Callable[[int], None] | None = None) -> list[bytes]:
        """PNG bytes for each job; each image's noise comes from its own seed, so batching does not change it.

        `on_step(n)` is called after every denoising step with the number of images the step advanced.
        """
        import numpy as np
        import torch
        from PIL import Image

        if self.pipe is None:
            self._load()
        h, w = sizes(self.params)
        gens = [torch.Generator("cpu").manual_seed(j.seed) for j in jobs]
        kwargs: dict[str, Any] = dict(prompt=[j.prompt for j in jobs], num_inference_steps=int(self.params["steps"]),
                                      guidance_scale=float(self.params["guidance"]), height=h, width=w,
                                      generator=gens, output_type="np")
        if self.params.get("negative_prompt"):
            kwargs["negative_prompt"] = [self.params["negative_prompt"]] * len(jobs)
        # the initial noise is drawn per image on the CPU from its seed, then moved to the device
        latents = self._latents(gens, h, w)
        if latents is not None:
            kwargs["latents"] = latents
        import inspect

        if on_step is not None and "callback_on_step_end" in inspect.signature(self.pipe.__call__).parameters:
            def _step(pipe, i, t, cb_kwargs):
                on_step(len(jobs))
                return cb_kwargs

            kwargs["callback_on_step_end"] = _step
        with torch.inference_mode():
            images = self.pipe(**kwargs).images
        out = []
        for arr in np.asarray(images):
            buf = io.BytesIO()
            Image.fromarray((np.clip(arr, 0, 1) * 255).round().astype(np.uint8)).save(buf, format="PNG")
            out.append(buf.getvalue())
        return out

    def _latents(self, gens, h: int, w: int):
        import torch

        pipe = self.pipe
        unet = getattr(pipe, "unet", None)
        scale = getattr(pipe, "vae_scale_factor", None)
        if unet is None or scale is None:
            return None  # transformer pipelines draw their own noise from the generators
        shape = (unet.config.in_channels, h // scale, w // scale)
        noise = torch.stack([torch.randn(shape, generator=g, dtype=torch.float32) for g in gens])
        return noise.to(device=self.device, dtype=getattr(torch, self.dtype))


def store_path(store: Path, key: str) -> Path:
    return store / key[:2] / f"{key}.png"


def _commit(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def store_status(arm: ArmIR, *, spec_dir: Path, store: Path, device: str, allow_outside: bool = False
                 ) -> tuple[int, int] | None:
    """(images in the generation store, images of the arm), as `run` would key them on `device`; None
    when they cannot be known here (pipeline or prompts missing). Reads file metadata only (a local
    pipeline folder's files are hashed, as `run` does); `scoreaudit plan --cache` shows it."""
    try:
        _folder, identity = locate_pipeline(arm.name, dict(arm.call.params), spec_dir)
        jobs = jobs_for(arm, spec_dir, identity, _dtype_name(arm.call.params, device), allow_outside)
    except (GenerationUnavailable, DiagnosticError):
        return None
    return sum(1 for j in jobs if store_path(store, j.key).is_file()), len(jobs)


def generate_arm(arm: ArmIR, *, spec_dir: Path, out_dir: Path, store: Path, device: str,
                 note: Callable[[str], None] = lambda s: None,
                 make: Callable[..., Generator] = Generator, progress=None, allow_outside: bool = False
                 ) -> tuple[ArmIR, dict]:
    """Make (or reuse) every image of a generated arm; returns the equivalent `images` arm and counts.

    `progress` (runtime.progress.Progress): two live counters, images and denoising steps, whose
    rates are images/s and steps/s (plain `progress:` lines off a terminal).
    """
    p = dict(arm.call.params)
    folder, identity = locate_pipeline(arm.name, p, spec_dir)
    dtype = _dtype_name(p, device)
    jobs = jobs_for(arm, spec_dir, identity, dtype, allow_outside)
    todo = [j for j in jobs if not store_path(store, j.key).is_file()]
    note(f"generate {arm.name}: {len(jobs)} images, {len(jobs) - len(todo)} from the store, {len(todo)} new "
         f"(pipeline {identity[:60]}, dtype {dtype})")
    gen = make(arm.name, p, folder, device, dtype)
    bs = int(p.get("batch_size", 1))
    steps = int(p.get("steps", 30))
    lab_i, lab_s = f"generate {arm.name} (images)", f"generate {arm.name} (denoising steps)"
    if progress is not None and todo:
        progress.task(lab_i, len(todo))
        progress.task(lab_s, len(todo) * steps)
    started = time.perf_counter()
    batches = [todo[i:i + bs] for i in range(0, len(todo), bs)]
    on_step = (lambda n: progress.advance(lab_s, n)) if progress is not None else None
    # a remote generator (runtime/ray_pipelines.py) streams its batches, the next ones already in flight
    results = gen.stream(batches, on_step) if hasattr(gen, "stream") else \
        ((b, gen(b, **({"on_step": on_step} if on_step is not None else {}))) for b in batches)
    for batch, pngs in results:
        for j, png in zip(batch, pngs):
            _commit(store_path(store, j.key), png)  # committed one by one: a kill loses at most a batch
        if progress is not None:
            progress.advance(lab_i, len(batch))
    if todo:
        took = max(time.perf_counter() - started, 1e-9)
        note(f"generate {arm.name}: {len(todo)} images, {len(todo) * steps} denoising steps in {took:.1f} s "
             f"({len(todo) / took:.2f} images/s, {len(todo) * steps / took:.1f} steps/s)")
    dest = out_dir / "generated" / arm.name
    dest.mkdir(parents=True, exist_ok=True)
    factors = list(arm.factors)
    buf = io.StringIO()
    wr = csv.writer(buf, lineterminator="\n")
    score_prompt = arm.call.params.get("score_prompt")
    extra = ["score_prompt"] if score_prompt is not None else []  # the prompt the scorers read (images_arm)
    wr.writerow(["id", "path", "prompt", "seed", "cluster", *factors, "key", *extra])
    for j in jobs:
        _place(store_path(store, j.key), dest / f"{j.id}.png")
        wr.writerow([j.id, f"{j.id}.png", j.prompt, j.seed, j.cluster, *(j.factors.get(f, "") for f in factors),
                     j.key, *([score_prompt_for(score_prompt, j.prompt, j.factors)] if extra else [])])
    tmp = dest / "manifest.csv.tmp"
    tmp.write_text(buf.getvalue(), encoding="utf-8")
    os.replace(tmp, dest / "manifest.csv")
    return images_arm(arm, dest), {"images": len(jobs), "generated": len(todo), "reused": len(jobs) - len(todo),
                    "pipeline": identity, "dtype": dtype}


def _place(src: Path, target: Path) -> None:
    """Copy a stored image into the output with the store file's modification time, and leave a copy that
    already matches it (size and time) alone: the image's memo (runtime/memo.py keys files by path, size
    and time) then holds across runs into the same output folder, so a re-run replays it instead of
    decoding and looking up every step again."""
    st = src.stat()
    try:
        t = os.lstat(target)
    except FileNotFoundError:
        t = None
    if t is not None and stat.S_ISREG(t.st_mode) and (t.st_size, t.st_mtime_ns) == (st.st_size, st.st_mtime_ns):
        return
    tmp = target.with_suffix(".png.tmp")
    shutil.copyfile(src, tmp)
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, target)  # a link planted at the target is replaced, never followed


def images_arm(arm: ArmIR, dest: Path) -> ArmIR:
    """The `images` arm of a generated arm's files in `dest` (`OUT/generated/ARM/`, with its manifest.csv)."""
    return ArmIR(name=arm.name, source="images", kind=arm.kind, cluster="cluster", factors=arm.factors,
                 label=arm.label,
                 call=PluginCall(plugin="images", version="1",
                                 params={"folder": str(dest.resolve()), "manifest": str((dest / "manifest.csv").resolve()),
                                         "kind": arm.kind, "cluster": "cluster", "factors": list(arm.factors),
                                         "id": "id", "path": "path",
                                         "prompt": "prompt" if arm.call.params.get("score_prompt") is None
                                         else "score_prompt",
                                         "on_error": arm.call.params.get("on_error")}))


def materialise(ir: AuditIR, *, spec_dir: Path, out_dir: Path, cache_path: Path, device: str,
                note: Callable[[str], None] = lambda s: None, progress=None,
                make: Callable[..., Any] = Generator, allow_outside: bool = False) -> tuple[AuditIR, dict]:
    """The IR with every generated arm replaced by the `images` arm of its generated files.

    `make(arm, params, folder, device, dtype)` gives what makes the images: a `Generator` here, or
    `--executor ray`'s `RayConnection.generator` (a pipeline actor); the store and the keys are the same.
    """
    gen = {n: a for n, a in ir.arms.items() if is_generated(a)}
    if not gen:
        return ir, {}
    store = cache_path.with_name(cache_path.name + ".generated")
    arms = dict(ir.arms)
    info = {}
    for name, arm in gen.items():
        arms[name], info[name] = generate_arm(arm, spec_dir=spec_dir, out_dir=out_dir, store=store,
                                              device=device, note=note, progress=progress, make=make,
                                              allow_outside=allow_outside)
    return ir.model_copy(update={"arms": arms}), info
