"""Run optimisation probes (`probe NAME = reno(...)`, spec/probes.md): ReNO on a one-step pipeline.

For each prompt and seed (a trajectory), the initial noise z is drawn on the
CPU from the seed and updated `iterations` times by clipped gradient steps on
λ·score(G(z)) − w·NLL(‖z‖²), where G is one denoising step of the pipeline
followed by the VAE decoder (`OneStep`), λ = ±1 (`direction`) and NLL the
χ²_d negative log-density of the squared noise norm. Every iteration's image
is kept as PNG with its score.

A trajectory is a content-addressed folder in the probe store next to the
cache (`CACHE.probes/KEY/`: `it000.png` …, `trace.json`), keyed by the
pipeline's identity, prompt, seed, size, dtype, the optimisation settings and
the scorer's plugin, version, parameters and weight files; it is committed by
renaming a finished temporary folder, so a killed run resumes and redoes only
unfinished trajectories. Measures are computed from the stored PNGs at every
run (cheap next to the optimisation), so changing them never re-optimises.
Output: `OUT/probes/NAME/` (the first and last PNG of each trajectory, or every one with `keep:
all`; `trace.csv`) and the rows
of the bundle's `tables/probe.parquet` (stats/probes.py reads them).
torch and diffusers are imported only when a trajectory has to be computed.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scoreaudit.compiler.ir import AuditIR, ProbeIR
from scoreaudit.compiler.prompts import PromptsError, expand_prompts, seed_list
from scoreaudit.diagnostics import DiagnosticError
from scoreaudit.runtime.generation import GenerationUnavailable, Generator, _dtype_name, _error, locate_pipeline, sizes

PROBE_KEY_VERSION = "1"
FILE = "probes.json"  # the report's first/last thumbnails per trajectory (base64 JPEG)
THUMBS_PER_PROBE = 12


@dataclass(frozen=True)
class Trajectory:
    id: str  # p0003_s1
    prompt: str
    seed: int
    cluster: str  # one cluster per prompt
    key: str
    init: str | None = None  # the SeedSelect key of its initial noise (runtime/seedselect.py); None: z₀ from the seed


def prompt_rows(probe: ProbeIR, spec_dir: Path, allow_outside: bool = False) -> list[dict]:
    """Each prompt's attributes (`tables/probe_prompts.parquet`): what `where` selects a probe's prompts by.

    Clusters are numbered as `trajectories` numbers them (one per prompt, in the expanded order).
    """
    try:
        rows = expand_prompts(probe.call.params["prompts"], spec_dir, allow_outside)
    except PromptsError as exc:
        raise _error(probe.name, str(exc), exc.help, code=exc.code, kind="probe") from None
    return [{"probe": probe.name, "cluster": f"p{i:04d}", "prompt": row["prompt"], "column": col, "value": str(v)}
            for i, row in enumerate(rows) for col, v in row.get("attributes", {}).items()]


def trajectories(probe: ProbeIR, spec_dir: Path, identity: str, dtype: str, scorer_key: dict,
                 allow_outside: bool = False) -> list[Trajectory]:
    p = probe.call.params
    try:
        rows = expand_prompts(p["prompts"], spec_dir, allow_outside)
    except PromptsError as exc:
        raise _error(probe.name, str(exc), exc.help, code=exc.code, kind="probe") from None
    if not rows:
        raise _error(probe.name, "no prompts", "add prompts to the file or levels to the template", kind="probe")
    h, w = sizes(p)
    settings = {k: p.get(k) for k in ("iterations", "lr", "direction", "regulariser", "grad_clip", "guidance",
                                      "negative_prompt")}
    if p.get("timestep") is not None:  # only when given, so the keys of earlier trajectories stay valid
        settings["timestep"] = int(p["timestep"])
    refs = None
    if p.get("seedselect"):
        from scoreaudit.runtime.seedselect import references_digest

        try:
            refs = references_digest(p, spec_dir)
        except OSError as exc:
            raise _error(probe.name, f"cannot read the SeedSelect references '{p['seedselect']}' ({exc})",
                         "give `seedselect:` a .csv under the spec's folder with a `path` column", kind="probe") \
                from None
    out = []
    for i, row in enumerate(rows):
        for seed in seed_list(p.get("seeds", 1)):
            body = {"v": PROBE_KEY_VERSION, "pipeline": identity, "prompt": row["prompt"], "seed": seed,
                    "size": [h, w], "dtype": dtype, "settings": settings, "scorer": scorer_key}
            init = None
            if refs is not None:  # only with SeedSelect, so the keys of earlier trajectories stay valid
                from scoreaudit.runtime.seedselect import init_key

                init = body["init"] = init_key(identity, row["prompt"], seed, (h, w), dtype, p, refs)
            payload = json.dumps(body, sort_keys=True)
            out.append(Trajectory(f"p{i:04d}_s{seed}", row["prompt"], seed, f"p{i:04d}",
                                  hashlib.sha256(payload.encode("utf-8")).hexdigest(), init))
    return out


# ---------------------------------------------------------------- the differentiable one-step generator


#: PixArt-α DMD's one step starts at this timestep (its model card calls the pipeline with `timesteps=[400]`)
PIXART_DMD_TIMESTEP = 400


def _is_pixart(pipe) -> bool:
    return type(pipe).__name__.startswith("PixArt") and getattr(pipe, "transformer", None) is not None


class OneStep:
    """z (initial noise) → image in [0, 1], differentiably: one denoiser step to x̂0, then the VAE decoder.

    Works for UNet pipelines of the Stable Diffusion family (SD 1.x/2.x, SD-Turbo; SDXL and SDXL-Turbo
    through their pooled text embeddings and size conditioning) and for PixArt-α (T5 text embeddings with
    their attention mask, the PixArt transformer, its learned-variance channels dropped; PixArt-α DMD is
    the one-step distilled model, run at `PIXART_DMD_TIMESTEP` unless `timestep` says otherwise). The
    model input is the scheduler's own scaling of z at its first timestep of a one-step schedule (or at
    `timestep`); x̂0 follows the scheduler's prediction type (epsilon, v_prediction or sample).
    """

    def __init__(self, pipe, device: str, dtype, guidance: float, height: int, width: int,
                 timestep: int | None = None):
        import torch

        self.pipe, self.device, self.dtype = pipe, device, dtype
        self.guidance = float(guidance)
        self.h, self.w = height, width
        self.dit = _is_pixart(pipe)
        if not self.dit and getattr(pipe, "unet", None) is None:
            raise OneStepUnsupported(
                f"{type(pipe).__name__} has no one-step path in the probe: it supports Stable Diffusion UNet "
                "pipelines (SD 1.x/2.x, SD-Turbo, SDXL, SDXL-Turbo) and PixArt-α (PixArt-α DMD)")
        self.denoiser = pipe.transformer if self.dit else pipe.unet
        sched = pipe.scheduler
        if timestep is None and self.dit:
            timestep = PIXART_DMD_TIMESTEP
        if timestep is None:
            sched.set_timesteps(1, device=device)
        else:
            try:
                sched.set_timesteps(timesteps=[int(timestep)], device=device)
            except (TypeError, ValueError) as exc:
                raise OneStepUnsupported(f"{type(sched).__name__} cannot start at timestep {timestep} ({exc}); "
                                         "use a scheduler that takes custom timesteps (DDPMScheduler, "
                                         "EulerDiscreteScheduler) or leave `timestep:` out") from None
        self.t = sched.timesteps[0]
        a = sched.alphas_cumprod[int(self.t)].to(torch.float32)
        self.s0, self.s1 = float(a.sqrt()), float((1 - a).sqrt())
        self.prediction = sched.config.get("prediction_type", "epsilon")
        # PixArt's one-step output is the scheduler step's x̂0, which DDPM clips when its config says so
        self.clip = float(sched.config.get("clip_sample_range", 1.0)) \
            if self.dit and sched.config.get("clip_sample", False) else None
        self.xl = getattr(pipe, "text_encoder_2", None) is not None
        if dtype == torch.float16 and getattr(pipe.vae.config, "force_upcast", False):
            pipe.vae.to(torch.float32)  # as the pipelines do: SDXL's VAE overflows in float16
        for m in (self.denoiser, pipe.vae, getattr(pipe, "text_encoder", None), getattr(pipe, "text_encoder_2", None)):
            if m is not None:
                for q in m.parameters():
                    q.requires_grad_(False)

    def latent_shape(self) -> tuple[int, int, int]:
        scale = self.pipe.vae_scale_factor
        return (self.denoiser.config.in_channels, self.h // scale, self.w // scale)

    def condition(self, prompt: str, negative: str | None) -> dict:
        import torch

        cfg = self.guidance > 1.0
        with torch.no_grad():
            if self.dit:
                return self._pixart_condition(prompt, negative, cfg)
            if self.xl:
                pe, ne, pooled, npooled = self.pipe.encode_prompt(
                    prompt=prompt, device=self.device, num_images_per_prompt=1, do_classifier_free_guidance=cfg,
                    negative_prompt=negative)
                time_ids = torch.tensor([[self.h, self.w, 0, 0, self.h, self.w]], device=self.device,
                                        dtype=pe.dtype)
                if cfg:
                    return {"emb": torch.cat([ne, pe]), "added": {"text_embeds": torch.cat([npooled, pooled]),
                                                                  "time_ids": time_ids.repeat(2, 1)}}
                return {"emb": pe, "added": {"text_embeds": pooled, "time_ids": time_ids}}
            pe, ne = self.pipe.encode_prompt(prompt, self.device, 1, cfg, negative_prompt=negative)
            return {"emb": torch.cat([ne, pe]) if cfg else pe, "added": None}

    def _pixart_condition(self, prompt: str, negative: str | None, cfg: bool) -> dict:
        """T5 embeddings and mask as PixArtAlphaPipeline builds them (its defaults: caption cleaning when
        its optional packages are installed, 120 tokens), and its resolution conditioning at sample size 128."""
        import torch

        pe, pm, ne, nm = self.pipe.encode_prompt(prompt, cfg, negative_prompt=negative or "", num_images_per_prompt=1,
                                                 device=self.device, clean_caption=True, max_sequence_length=120)
        added = {"resolution": None, "aspect_ratio": None}
        if self.denoiser.config.sample_size == 128:
            res = torch.tensor([[self.h, self.w]], dtype=pe.dtype, device=self.device)
            ar = torch.tensor([[float(self.h / self.w)]], dtype=pe.dtype, device=self.device)
            added = {"resolution": res.repeat(2 if cfg else 1, 1), "aspect_ratio": ar.repeat(2 if cfg else 1, 1)}
        if cfg:
            return {"emb": torch.cat([ne, pe]), "mask": torch.cat([nm, pm]), "added": added}
        return {"emb": pe, "mask": pm, "added": added}

    def _predict(self, inp, cond: dict):
        if self.dit:
            t = self.t[None].to(inp.device).expand(inp.shape[0])
            out = self.denoiser(inp, encoder_hidden_states=cond["emb"], encoder_attention_mask=cond["mask"],
                                timestep=t, added_cond_kwargs=cond["added"], return_dict=False)[0]
        else:
            kw = {"added_cond_kwargs": cond["added"]} if cond["added"] is not None else {}
            out = self.denoiser(inp, self.t, encoder_hidden_states=cond["emb"], **kw).sample
        if self.guidance > 1.0:
            un, co = out.chunk(2)
            out = un + self.guidance * (co - un)
        if self.dit and out.shape[1] == 2 * inp.shape[1]:  # learned variance: keep the noise prediction
            out = out.chunk(2, dim=1)[0]
        return out

    def __call__(self, z, cond: dict):
        import torch

        sched = self.pipe.scheduler
        x = z.to(self.dtype) * sched.init_noise_sigma
        if hasattr(sched, "_step_index"):
            sched._step_index = None  # each call is the first step again
        x = sched.scale_model_input(x, self.t)
        inp = torch.cat([x, x]) if self.guidance > 1.0 else x
        out = self._predict(inp, cond)
        if self.prediction == "v_prediction":
            x0 = self.s0 * x - self.s1 * out
        elif self.prediction == "sample":
            x0 = out
        else:
            x0 = (x - self.s1 * out) / self.s0
        if self.clip is not None:
            x0 = x0.clamp(-self.clip, self.clip)
        vae = self.pipe.vae
        shift = getattr(vae.config, "shift_factor", None) or 0.0
        vae_dtype = next(vae.parameters()).dtype
        img = vae.decode((x0 / vae.config.scaling_factor + shift).to(vae_dtype)).sample
        return (img.float() / 2 + 0.5).clamp(0, 1)


class OneStepUnsupported(ValueError):
    """The pipeline (or its scheduler) has no one-step path in the probe."""


def noise_nll(z) -> Any:
    """Negative log-density (up to a constant) of K = ‖z‖² under χ²_d, d = z's size: −((d/2 − 1)·log K − K/2)."""
    import torch

    d = z.numel()
    k = (z.float() ** 2).sum()
    return -((d / 2.0 - 1.0) * torch.log(k) - k / 2.0)


def initial_noise(gen: OneStep, seed: int):
    """z₀ ~ N(0, I) drawn on the CPU from the seed (1 × latent shape)."""
    import torch

    return torch.randn(gen.latent_shape(), generator=torch.Generator("cpu").manual_seed(int(seed)),
                       dtype=torch.float32).unsqueeze(0)


def optimise(gen: OneStep, scorer, prompt: str, seed: int, p: dict, scorer_prompt: str | None,
             on_step: Callable[[], None] = lambda: None, z_init: np.ndarray | None = None
             ) -> tuple[list[np.ndarray], list[dict]]:
    """The images (uint8 H×W×3) and trace rows (score, noise norm, loss) of one trajectory, iteration 0 first.

    `z_init`: the initial noise (SeedSelect's ε₀) instead of the seed's draw.
    """
    import torch

    lam = 1.0 if p.get("direction", "maximize") == "maximize" else -1.0
    reg, clip, lr = float(p.get("regulariser", 0.01)), float(p.get("grad_clip", 0.1)), float(p["lr"])
    z0 = initial_noise(gen, seed) if z_init is None else torch.as_tensor(np.asarray(z_init, np.float32))[None]
    z = z0.to(gen.device).requires_grad_(True)
    cond = gen.condition(prompt, p.get("negative_prompt"))
    images, trace = [], []
    n = int(p["iterations"])
    for it in range(n + 1):
        img = gen(z, cond)
        s = scorer.score_tensor(img, [scorer_prompt if scorer_prompt is not None else prompt])[0]
        arr = (img[0].detach().permute(1, 2, 0).cpu().numpy() * 255.0).round().clip(0, 255).astype(np.uint8)
        images.append(arr)
        nll = noise_nll(z)
        row = {"iteration": it, "score": float(s.detach()), "noise_norm": float(z.detach().float().norm()),
               "noise_nll": float(nll.detach())}
        if it < n:
            loss = -lam * s.float() + reg * nll
            loss.backward()
            g = z.grad
            gnorm = float(g.norm())
            row["grad_norm"] = gnorm
            with torch.no_grad():
                if gnorm > clip:
                    g = g * (clip / gnorm)
                z -= lr * g
            z.grad = None
        trace.append(row)
        on_step()
    return images, trace


# ---------------------------------------------------------------- store


def _png(arr: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def _read_png(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def traj_dir(store: Path, key: str) -> Path:
    return store / key[:2] / key


def _commit(store: Path, key: str, images: list[np.ndarray], trace: list[dict]) -> None:
    final = traj_dir(store, key)
    tmp = final.with_name(f".{key}.{os.getpid()}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    for k, arr in enumerate(images):  # arrays (this process) or PNG bytes (a Ray pipeline actor)
        (tmp / f"it{k:03d}.png").write_bytes(arr if isinstance(arr, bytes) else _png(arr))
    (tmp / "trace.json").write_text(json.dumps(trace, indent=1), encoding="utf-8")
    try:
        os.replace(tmp, final)  # one rename: a trajectory is in the store whole or not at all
    except OSError:  # another process committed it first
        shutil.rmtree(tmp, ignore_errors=True)


def _measures(probe: ProbeIR, spec_dir: Path, device: str) -> list[tuple[str, Any]]:
    from scoreaudit.registry import load_plugins, probe_measures

    load_plugins()
    out = []
    for m in probe.call.params["measures"]:
        entry = probe_measures.get(m["measure"])
        params = entry.params.model_validate(m["params"])
        # `context`: the measure reads files under the spec's folder or runs a model on the device
        impl = entry.impl(params, base_dir=spec_dir, device=device) if entry.meta.get("context") \
            else entry.impl(params)
        out.append((m["measure"], impl))
    return out


def scorer_identity(scorer_slot) -> dict:
    """What of the probe's scorer enters a trajectory's key (plugin, version, parameters, weight files)."""
    return {"plugin": scorer_slot.ir.call.plugin, "version": scorer_slot.ir.call.version,
            "params": scorer_slot.key_params, "prompt": scorer_slot.params.get("prompt")}


def finished(store: Path, t: Trajectory) -> bool:
    """Whether the store holds the whole trajectory (committed by one rename, trace.json last)."""
    return (traj_dir(store, t.key) / "trace.json").is_file()


def store_status(probe: ProbeIR, *, scorer_slot, spec_dir: Path, store: Path, device: str,
                 allow_outside: bool = False) -> tuple[int, int] | None:
    """(finished trajectories in the probe store, trajectories of the probe), keyed as `run` would on
    `device`; None when they cannot be known here (pipeline or prompts missing). For `plan --cache`."""
    p = dict(probe.call.params)
    try:
        _folder, identity = locate_pipeline(probe.name, p, spec_dir, kind="probe")
        trajs = trajectories(probe, spec_dir, identity, _dtype_name(p, device), scorer_identity(scorer_slot),
                             allow_outside)
    except (GenerationUnavailable, DiagnosticError):
        return None
    return sum(1 for t in trajs if finished(store, t)), len(trajs)


def one_step(name: str, pipe, p: dict, device: str, dtype: str) -> OneStep:
    """The probe's one-step generator for a loaded pipeline (in the driver or a Ray actor); E0882 if it has none."""
    import torch

    h, w = sizes(p)
    try:
        return OneStep(pipe, device, getattr(torch, dtype), float(p.get("guidance", 0.0)), h, w,
                       timestep=p.get("timestep"))
    except OneStepUnsupported as exc:
        raise _error(name, str(exc), "point `pipeline:` at a one-step model such as SD-Turbo, "
                     "SDXL-Turbo or PixArt-α DMD", code="E0882", kind="probe") from None


def _local_trajectories(probe: ProbeIR, p: dict, folder: Path, device: str, dtype: str, scorer_slot,
                        todo: list[Trajectory], advance: Callable[[int], None], *, spec_dir: Path | None = None,
                        store: Path | None = None, counts: dict | None = None):
    """(trajectory, images, trace) of each trajectory to do, optimised in this process (after SeedSelect
    finds its initial noise, from the store when it is there; `counts` tallies searched and reused)."""
    make = Generator(probe.name, p, folder, device, dtype, kind="probe")
    make._load()
    gen = one_step(probe.name, make.pipe, p, device, dtype)
    scorer = scorer_slot.instance
    sprompt = scorer_slot.params.get("prompt") if isinstance(scorer_slot.params.get("prompt"), str) else None
    target = None
    for t in todo:
        z_init, info = None, None
        if t.init is not None:
            from scoreaudit.runtime import seedselect

            hit = seedselect.cached(store, t.init)
            if hit is None:
                if target is None:
                    target = seedselect.Target(p, spec_dir, device)
                cond = gen.condition(t.prompt, p.get("negative_prompt"))
                z_init, info = seedselect.select(gen, cond, initial_noise(gen, t.seed), p, target, noise_nll)
                seedselect._commit(store, t.init, z_init, info)
                counts["searched"] += 1
            else:
                z_init, info = hit
                counts["reused"] += 1
        images, trace = optimise(gen, scorer, t.prompt, t.seed, p, sprompt, on_step=lambda: advance(1),
                                 z_init=z_init)
        if info is not None:  # the search's similarity to the references, on the trajectory's first row
            trace[0] = {**trace[0], "seedselect_similarity_first": info["similarity_first"],
                        "seedselect_similarity_last": info["similarity_last"]}
        yield t, images, trace


def run_probe(probe: ProbeIR, *, scorer_slot, spec_dir: Path, out_dir: Path, store: Path, device: str,
              note: Callable[[str], None] = lambda s: None, progress=None, remote=None,
              allow_outside: bool = False) -> tuple[list[dict], dict]:
    """Optimise (or reuse) every trajectory of one probe; the probe table's rows and run.json's counts.

    `remote` (`--executor ray`: runtime/ray_backend.py's RayBackend) optimises on the probe's pipeline
    actor instead of here; keys, store and commits are the same.
    """
    p = dict(probe.call.params)
    folder, identity = locate_pipeline(probe.name, p, spec_dir, kind="probe")
    dtype = _dtype_name(p, device)
    trajs = trajectories(probe, spec_dir, identity, dtype, scorer_identity(scorer_slot), allow_outside)
    todo = [t for t in trajs if not finished(store, t)]
    n_it = int(p["iterations"])
    seeds = {"searched": 0, "reused": 0}  # SeedSelect's initial noises: found now, or from the store
    note(f"probe {probe.name}: {len(trajs)} trajectories × {n_it} iterations, {len(trajs) - len(todo)} from the "
         f"store, {len(todo)} new (pipeline {identity[:60]}, scorer {probe.scorer}, dtype {dtype})")
    if todo:
        label = f"probe {probe.name} (iterations)"
        if progress is not None:
            progress.task(label, len(todo) * (n_it + 1))
        started = time.perf_counter()
        if remote is not None and p.get("seedselect"):
            raise _error(probe.name, "SeedSelect (`seedselect:`) runs with the local executor only",
                         "run without `--executor ray`, or leave `seedselect:` out", kind="probe")
        from functools import partial

        runs = remote.trajectories if remote is not None else partial(_local_trajectories, spec_dir=spec_dir,
                                                                      store=store, counts=seeds)
        for t, images, trace in runs(probe, p, folder, device, dtype, scorer_slot, todo,
                                     (lambda n: progress.advance(label, n)) if progress is not None
                                     else (lambda n: None)):
            _commit(store, t.key, images, trace)
        took = time.perf_counter() - started
        note(f"probe {probe.name}: {len(todo)} trajectories optimised in {took:.1f} s "
             f"({len(todo) * (n_it + 1) / max(took, 1e-9):.2f} iterations/s)")
    measures = _measures(probe, spec_dir, device)
    dest = out_dir / "probes" / probe.name
    dest.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    trace_rows: list[dict] = []
    thumbs: list[dict] = []
    for t in trajs:
        src = traj_dir(store, t.key)
        trace = json.loads((src / "trace.json").read_text(encoding="utf-8"))
        tdest = dest / t.id
        tdest.mkdir(exist_ok=True)
        base = {"probe": probe.name, "scorer": probe.scorer, "prompt": t.prompt, "cluster": t.cluster,
                "seed": t.seed}
        for rec in trace:
            it = rec["iteration"]
            png = src / f"it{it:03d}.png"
            if p.get("keep", "ends") == "all" or it in (0, n_it):
                shutil.copyfile(png, tdest / png.name)
            arr = _read_png(png)
            rows.append({**base, "iteration": it, "measure": "score", "label": "", "value": rec["score"]})
            flat = {"trajectory": t.id, **base, "iteration": it, "score": rec["score"],
                    "noise_norm": rec.get("noise_norm")}
            for name, impl in measures:
                for label, value in impl.compute(arr).items():
                    rows.append({**base, "iteration": it, "measure": name, "label": label, "value": value})
                    flat[name if not label else f"{name}[{label}]"] = value
            trace_rows.append(flat)
        if len(thumbs) < THUMBS_PER_PROBE:
            from scoreaudit.runtime.thumbnails import thumbnail

            thumbs.append({"id": t.id, "prompt": t.prompt, "seed": t.seed,
                           "first": thumbnail(_read_png(src / "it000.png"), None, 128),
                           "last": thumbnail(_read_png(src / f"it{trace[-1]['iteration']:03d}.png"), None, 128),
                           "first_score": trace[0]["score"], "last_score": trace[-1]["score"]})
    import csv

    cols = list(dict.fromkeys(k for r in trace_rows for k in r))
    buf = io.StringIO()
    wr = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    wr.writeheader()
    for r in trace_rows:
        wr.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})
    (dest / "trace.csv").write_text(buf.getvalue(), encoding="utf-8")
    info = {"trajectories": len(trajs), "optimised": len(todo), "reused": len(trajs) - len(todo),
            "iterations": n_it, "pipeline": identity, "dtype": dtype, "scorer": probe.scorer, "_thumbs": thumbs}
    if p.get("seedselect"):
        info["seedselect"] = dict(seeds)
    return rows, info


def write_probe_thumbnails(ir: AuditIR, info: dict, out_dir: Path) -> None:
    """`probes.json` (first and last image of each probe's first trajectories, for the report), unless
    `report { thumbnails: false }`; takes the thumbnails out of `info` (run.json's counts)."""
    thumbs = {}
    for name, probe in ir.probes.items():
        if name not in info:
            continue
        thumbs[name] = {"scorer": probe.scorer, "direction": probe.call.params.get("direction", "maximize"),
                        "iterations": info[name]["iterations"], "trajectories": info[name].pop("_thumbs", [])}
    path = out_dir / FILE
    if getattr(ir.report, "thumbnails", True):
        path.write_text(json.dumps(thumbs, separators=(",", ":")), encoding="utf-8")
    else:
        path.unlink(missing_ok=True)
