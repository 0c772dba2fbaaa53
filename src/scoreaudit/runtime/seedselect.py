"""SeedSelect initialisation of a probe's trajectories (`reno(..., seedselect: "refs.csv")`, spec/probes.md).

The seed paper starts ReNO from a given group under an under-specified prompt ("a photo of a doctor") by
searching the noise space for an ε₀ whose one-step image matches a few reference images of that group
(SeedSelect, Samuel et al.). Here: the target r is the normalised mean of the references' normalised CLIP
image embeddings; from the trajectory's own z₀ (drawn from its seed), `seedselect_steps` clipped gradient
steps of size `seedselect_lr` descend 1 − cos(f(G(z)), r) + w·NLL(‖z‖²) (the probe's `regulariser` w and
`grad_clip`, so z stays a plausible Gaussian sample). The last z is the trajectory's ε₀.

Each selected ε₀ is cached like a trajectory: a content-addressed folder `STORE/seedselect/KEY/` (`z.npy`,
written with allow_pickle=False, and `info.json`), keyed by everything it depends on (the pipeline's
identity, prompt, seed, size, dtype, guidance, timestep, negative prompt, the references' bytes, the
CLIP model, steps, step size, regulariser, clip), committed by one rename. The trajectory's own key
includes this key, so changing the references re-optimises and changing only ReNO's settings reuses ε₀.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np

SEEDSELECT_KEY_VERSION = "1"


def references_digest(p: dict, spec_dir: Path) -> str:
    """sha256 over the references manifest's bytes and every image it names, in its order."""
    import csv
    import io

    from scoreaudit.safeio import read_regular

    base = Path(spec_dir)
    h = hashlib.sha256()
    raw = read_regular(base / p["seedselect"])
    h.update(raw)
    text = raw.decode("utf-8-sig", errors="replace")
    delim = "\t" if str(p["seedselect"]).lower().endswith(".tsv") else ","
    for row in csv.DictReader(io.StringIO(text), delimiter=delim):
        rel = (row.get("path") or "").strip()
        if rel:
            try:
                h.update(hashlib.sha256(read_regular(base / rel)).digest())
            except OSError:  # named when the run reads the references
                h.update(b"missing:" + rel.encode())
    return h.hexdigest()


def init_key(identity: str, prompt: str, seed: int, size: tuple[int, int], dtype: str, p: dict,
             refs: str) -> str:
    settings = {k: p.get(k) for k in ("guidance", "negative_prompt", "regulariser", "grad_clip", "seedselect_steps",
                                      "seedselect_lr", "seedselect_model", "timestep")}
    payload = json.dumps({"v": SEEDSELECT_KEY_VERSION, "pipeline": identity, "prompt": prompt, "seed": seed,
                          "size": list(size), "dtype": dtype, "settings": settings, "references": refs},
                         sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _dir(store: Path, key: str) -> Path:
    return Path(store) / "seedselect" / key[:2] / key


def cached(store: Path, key: str) -> tuple[np.ndarray, dict] | None:
    d = _dir(store, key)
    if not (d / "info.json").is_file():
        return None
    return np.load(d / "z.npy", allow_pickle=False), json.loads((d / "info.json").read_text(encoding="utf-8"))


def _commit(store: Path, key: str, z: np.ndarray, info: dict) -> None:
    final = _dir(store, key)
    tmp = final.with_name(f".{key}.{os.getpid()}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    np.save(tmp / "z.npy", z.astype(np.float32), allow_pickle=False)
    (tmp / "info.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    try:
        os.replace(tmp, final)
    except OSError:  # another process committed it first
        shutil.rmtree(tmp, ignore_errors=True)


class Target:
    """The references' target embedding and the CLIP model that embeds the generated images."""

    def __init__(self, p: dict, spec_dir: Path, device: str) -> None:
        import torch

        from scoreaudit.plugins.probe_clip import ClipEmbedder
        from scoreaudit.plugins.probes import read_labelled_images

        rows = read_labelled_images(p["seedselect"], "path", None, spec_dir, "seedselect")
        self.embedder = ClipEmbedder(p.get("seedselect_model") or "openai/clip-vit-large-patch14", spec_dir, device,
                                     "seedselect")
        f = self.embedder.embed([img for img, _ in rows])
        f = f / np.linalg.norm(f, axis=1, keepdims=True)
        r = f.mean(axis=0)
        self.r = torch.tensor(r / np.linalg.norm(r), dtype=torch.float32, device=device)
        self.n_references = len(rows)

    def similarity(self, img) -> Any:
        """cos(f(img), r) of float 1×3×H×W images in [0, 1], differentiably."""
        e = self.embedder.embed_tensor(img)[0]
        return (e / e.norm()) @ self.r


def select(gen, cond, z0, p: dict, target: Target, noise_nll) -> tuple[np.ndarray, dict]:
    """ε₀ after `seedselect_steps` clipped gradient steps towards the references, and the similarities.

    `gen`, `cond` and `noise_nll` are the probe's one-step generator, prompt condition and noise
    regulariser (runtime/probe.py passes them in: this module imports nothing of it).
    """
    import torch

    reg, clip, lr = float(p.get("regulariser", 0.01)), float(p.get("grad_clip", 0.1)), float(p.get("seedselect_lr", 5.0))
    z = z0.detach().clone().to(gen.device).requires_grad_(True)
    sims = []
    for step in range(int(p.get("seedselect_steps", 20)) + 1):
        sim = target.similarity(gen(z, cond))
        sims.append(float(sim.detach()))
        if step == int(p.get("seedselect_steps", 20)):
            break
        loss = (1.0 - sim) + reg * noise_nll(z)
        loss.backward()
        g = z.grad
        n = float(g.norm())
        with torch.no_grad():
            if n > clip:
                g = g * (clip / n)
            z -= lr * g
        z.grad = None
    return z.detach().cpu().numpy()[0], {"similarity_first": sims[0], "similarity_last": sims[-1],
                                         "steps": len(sims) - 1, "references": target.n_references}
