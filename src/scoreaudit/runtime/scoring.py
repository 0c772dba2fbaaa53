"""Scoring steps: cache keys, prompts, de-duplication and batched calls to one scorer.

Key of a score: the scorer's plugin, version and parameters (without the
prompt argument: the resolved prompt text is an input instead, so `"a cat"`
and `column(p)` holding "a cat" share), the scored image's content hash and
the prompt when the scorer reads one, the device for torch scorers (bf16 on
a GPU is not fp32 on a CPU), the precision a model scorer's forwards run at
when it is not fp32 (autocast scores never stand in for exact ones) and, for scorers whose registry entry declares
`uses_item` (planted, precomputed), the whole `ScoreItem`. So identical images with the
same prompt are scored once, across arms, operators and specs in a folder.

The scorer is built lazily: a fully cached run never loads a model. Its
weights hash is itself a cached step, recorded when the scorer is built, so
run.json can name the weights even when nothing was scored this time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from scoreaudit.compiler.ir import ArmIR, ScorerIR
from scoreaudit.keys import StepKey, step_key
from scoreaudit.plugins.base import ScoreItem, ScoreUnavailableForItem
from scoreaudit.registry import load_plugins, scorers as scorer_registry
from scoreaudit.runtime.columns import prompt_column
from scoreaudit.runtime.images import ImageRecord
from scoreaudit.runtime.scorers import resolve_paths
from scoreaudit.runtime.steps import Lookup, RunContext


class ScorerFailed(Exception):
    """A scorer broke its contract (wrong number of scores); the message names it."""


def make_item(record: ImageRecord, operator: str, dose: float, u: float, placebo: bool,
              measures: dict[str, float]) -> ScoreItem:
    return ScoreItem(arm=record.arm, image_id=record.image_id, operator=operator, dose=float(dose),
                     u=float(u), placebo=placebo, row=dict(record.columns), measures=dict(measures),
                     side=record.side)


def _item_json(item: ScoreItem) -> dict[str, Any]:
    return {"arm": item.arm, "image_id": item.image_id, "operator": item.operator, "dose": item.dose,
            "u": item.u, "placebo": item.placebo, "row": dict(item.row),
            "measures": dict(item.measures), "side": item.side}


@dataclass
class ScoreRequest:
    step: StepKey
    image: Callable[[], np.ndarray]
    prompt: str | None
    item: ScoreItem
    tensor: Callable[[], Any] | None = None  # the tensor path: the uint8 H×W×3 image on the run's device


def weights_identity(entry: Any, params: dict) -> dict | None:
    """Cheap identity of a model scorer's weight files, for cache keys: {name: [path, size, mtime_ns]}.

    Read from the scorer's own `locate_for_run` (files found, nothing loaded or
    hashed), so a fully cached run still never loads the model, while a file
    replaced at the same path changes every score key of that scorer. None for
    scorers without weight files, or when the files are not found (the run then
    stops with the scorer's own message when it needs them).
    """
    locate = getattr(entry.impl, "locate_for_run", None)
    if locate is None:
        return None
    try:
        located = locate(entry.params.model_validate(params))
    except Exception:  # noqa: BLE001 - incomplete arguments, missing extra: the scorer's factory reports it
        return None
    if not getattr(located, "ready", False):
        return None
    out = {}
    for name, path in sorted(located.files.items()):
        st = Path(path).stat()
        out[name] = [str(Path(path).resolve()), st.st_size, st.st_mtime_ns]
    return out


def forward_precision(entry: Any, params: dict, device: str) -> str | None:
    """The precision (fp32, fp16, bf16) a model scorer's forwards run at on `device`, from its
    registry class without building it (only its `precision:` argument is read); None for
    scorers that do not say, or an unknown precision, which the scorer's factory reports."""
    choose = getattr(entry.impl, "precision_for", None)
    if choose is None:
        return None
    try:
        return choose(SimpleNamespace(precision=params.get("precision", "auto")), device)
    except Exception:  # noqa: BLE001 - an unknown precision: reported when the scorer is built
        return None


class ScorerSlot:
    """One declared scorer: how its steps are keyed, and its (lazy) implementation."""

    def __init__(self, ctx: RunContext, sir: ScorerIR):
        load_plugins()
        self.ctx = ctx
        self.ir = sir
        self.name = sir.name
        self.entry = scorer_registry.get(sir.call.plugin)
        self.uses_item = bool(self.entry.fact("uses_item"))
        self.needs_prompt = sir.needs_prompt  # the compiler copied the registry's fact into the IR
        self.torch = "torch" in tuple(self.entry.fact("requires") or ())
        self.params = dict(sir.call.params)
        self.key_params = {k: v for k, v in self.params.items() if k != "prompt"}
        files = weights_identity(self.entry, resolve_paths(self.params, ctx.spec_dir))
        if files is not None:  # a swapped weights file (same path, new content) is a new input
            self.key_params["weights_files"] = files
        self.precision = forward_precision(self.entry, self.params, ctx.device) if self.torch else None
        self._instance: Any = None
        self.factory: Callable[[], Any] | None = None  # builds the implementation (Ray: a proxy to an actor)
        self._weights: str | None = None
        self.weights_step = step_key("weights", sir.call.plugin, sir.call.version, self.key_params,
                                     {"device": ctx.device if self.torch else None},
                                     slot=f"weights {sir.name}")

    # -- implementation

    @property
    def instance(self) -> Any:
        if self._instance is None:
            self._instance = (self.factory() if self.factory is not None
                              else build_scorer(self.ir, self.ctx.device, self.ctx.spec_dir))
            whash = self._instance.weights_hash() if hasattr(self._instance, "weights_hash") else None
            self._weights = whash
            before = self.ctx.cache.lookup([self.weights_step.key]).get(self.weights_step.key)
            if before is not None and before[0].get("weights_sha256") != whash:
                self.ctx.log.note(f"warning: the weights of scorer '{self.name}' changed since its cached "
                                  f"scores were computed ({before[0].get('weights_sha256')} -> {whash}); "
                                  "cached scores are keyed by plugin version and parameters, so delete the "
                                  "cache (or point `weights:` at a new path) to rescore")
            self.ctx.cache.stage(self.weights_step, {"weights_sha256": whash})
        return self._instance

    def weights_sha256(self) -> str | None:
        if self._instance is not None:
            return self._weights
        found = self.ctx.cache.lookup([self.weights_step.key]).get(self.weights_step.key)
        return found[0].get("weights_sha256") if found else None

    # -- keys

    def prompt_for(self, arm: ArmIR, record: ImageRecord) -> str | None:
        """The arm's prompt column wins; else the scorer's `prompt:` (literal or `column(...)`)."""
        if not self.needs_prompt:
            return None
        if arm.call.params.get("prompt"):
            return record.prompt
        param = self.params.get("prompt")
        col = prompt_column(param)
        if col is not None:
            value = record.columns.get(col)
            return None if value is None else str(value)
        return param if isinstance(param, str) else None

    def request(self, record: ImageRecord, content_hash: str, prompt: str | None, item: ScoreItem,
                image: Callable[[], np.ndarray], tensor: Callable[[], Any] | None = None) -> ScoreRequest:
        inputs: dict[str, Any] = {"image": content_hash, "prompt": prompt}
        if self.torch:
            inputs["device"] = self.ctx.device
        if self.precision not in (None, "fp32"):  # fp32 keys are those from before autocast existed
            inputs["precision"] = f"autocast-{self.precision}"
        if self.uses_item:
            inputs["item"] = _item_json(item)
        slot = f"score {self.name} {record.arm}/{record.image_id} {item.operator}@{item.dose!r}"
        step = step_key("score", self.ir.call.plugin, self.ir.call.version, self.key_params, inputs, slot)
        return ScoreRequest(step, image, prompt, item, tensor)

    # -- scoring

    def score(self, requests: Sequence[ScoreRequest]) -> list[float | str]:
        """One result per request: the score, or the reason it has none (an exclusion)."""
        if not requests:
            return []
        look = Lookup(self.ctx, (r.step for r in requests))
        todo = list({r.step.key: r for r in requests if not look.has(r.step.key)}.values())
        size = max(1, self.ctx.ir.settings.batch_size)
        for i in range(0, len(todo), size):
            self._score_chunk(look, todo[i:i + size])
        self.ctx.score_keys.update(r.step.key for r in requests)
        out: list[float | str] = []
        for r in requests:
            v = look.get(r.step.key)
            out.append(str(v["failure"]) if isinstance(v, dict) else _finite_or_reason(self.name, float(v)))
        return out

    @property
    def takes_tensors(self) -> bool:
        """On the tensor path, a scorer whose entry declares `takes_tensors` (the model scorers: their
        Preprocess works where the tensors are), built in this process, gets the device tensors; others
        (numpy scorers, third-party plugins, Ray actors) get host arrays."""
        return (bool(getattr(self.ctx, "tensor_path", False)) and bool(self.entry.fact("takes_tensors"))
                and self.factory is None)

    def _score_chunk(self, look: Lookup, chunk: list[ScoreRequest]) -> None:
        if self.takes_tensors and all(r.tensor is not None for r in chunk):
            images = [r.tensor() for r in chunk]
        else:
            images = [r.image() for r in chunk]
        prompts = [r.prompt or "" for r in chunk] if self.needs_prompt else None
        items = [r.item for r in chunk]
        reasons: dict[int, str] = {}
        for k, r in enumerate(chunk):
            if self.needs_prompt and not r.prompt:
                reasons[k] = (f"scorer '{self.name}' needs a prompt and image '{r.item.image_id}' has none "
                              "(empty prompt cell, or no `prompt:` on the scorer or the arm)")
        ok = [k for k in range(len(chunk)) if k not in reasons]
        scores = np.full(len(chunk), np.nan)
        if ok:
            try:
                got = self.instance.score([images[k] for k in ok],
                                          None if prompts is None else [prompts[k] for k in ok],
                                          [items[k] for k in ok])
            except ScoreUnavailableForItem as exc:
                got = exc.scores if exc.scores is not None else np.full(len(ok), np.nan)
                reasons.update({ok[j]: str(why) for j, why in exc.reasons.items()})
            got = np.asarray(got, dtype=np.float64).reshape(-1)
            if got.shape[0] != len(ok):
                raise ScorerFailed(f"scorer '{self.name}' ({self.ir.call.plugin}) returned {got.shape[0]} "
                                   f"scores for a batch of {len(ok)} images")
            scores[ok] = got
        for k, r in enumerate(chunk):
            value: Any = {"failure": reasons[k]} if k in reasons else float(scores[k])
            look.done(r.step, value)


def build_scorer(sir: ScorerIR, device: str, base_dir: Path | None = None) -> Any:
    """The scorer implementation (relative `weights:` paths resolve against `base_dir`, the spec's folder)."""
    from scoreaudit.runtime.scorers import make_scorer

    return make_scorer(sir, device=device, base_dir=base_dir)


def _finite_or_reason(scorer: str, v: float) -> float | str:
    """A score, or (NaN, ±inf) the reason it is none: a missing score is an exclusion with its reason, like
    any other failure, never a silent NaN row."""
    import math

    return v if math.isfinite(v) else f"scorer '{scorer}' returned {v!r}, not a finite score"
