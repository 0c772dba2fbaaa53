"""Model scorers on Ray: one actor per scorer builds the model once; tasks and the driver call it through a proxy."""

from __future__ import annotations

from typing import Any

import numpy as np

from scoreaudit.plugins.base import ScoreUnavailableForItem
from scoreaudit.runtime.ray_cluster import actor_result, import_ray, register_entries


class ActorScorer:
    """A scorer implementation that forwards to its Ray actor (which holds the model)."""

    def __init__(self, actor: Any):
        self.actor = actor

    def weights_hash(self) -> str | None:
        return import_ray().get(self.actor.weights_hash.remote())

    def score(self, images, prompts, items):
        kind, scores, reasons = import_ray().get(self.actor.score.remote(list(images), prompts, list(items)))
        if kind == "partial":
            raise ScoreUnavailableForItem(reasons, scores)
        return scores


class ProbeScorer:
    """The driver's view of a probe's scorer built in its pipeline actor: only its weights' identity."""

    def __init__(self, actor: Any, sir: Any):
        self.actor, self.sir = actor, sir

    def weights_hash(self) -> str | None:
        return actor_result(import_ray(), self.actor.weights_hash.remote(self.sir))


class ScorerActor:
    """One model scorer, built once per actor process on first use (a cached run never builds it)."""

    def __init__(self, sir: Any, device: str, entries: list, spec_dir: Any = None) -> None:
        register_entries(entries)
        self.sir = sir
        self.device = device
        self.spec_dir = spec_dir
        self.impl: Any = None

    def _get(self) -> Any:
        if self.impl is None:
            from scoreaudit.runtime.scoring import build_scorer

            self.impl = build_scorer(self.sir, self.device, self.spec_dir)
        return self.impl

    def weights_hash(self) -> str | None:
        impl = self._get()
        return impl.weights_hash() if hasattr(impl, "weights_hash") else None

    def score(self, images, prompts, items):
        try:
            return "ok", np.asarray(self._get().score(images, prompts, items), dtype=np.float64), None
        except ScoreUnavailableForItem as exc:
            return "partial", exc.scores, exc.reasons
