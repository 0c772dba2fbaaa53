"""`--executor ray`: batches of images run as Ray tasks, model scorers as Ray actors.

The driver (the `scoreaudit run` process) does everything the local executor
does except the per-image work: it reads the manifests and the cache, replays
memos, and for every batch with work left submits one task. A task runs the
very code of the local executor (`ArmRunner._batch`) against a view of the
cache that reads through one reader actor on the driver's node (the cache file
lives beside the spec, on the driver) and keeps what it computes; it returns
its table rows, run-log lines, progress counts and new cache entries, and the
driver merges them in batch order and commits each batch in one transaction.
So only the driver writes the cache: a run killed anywhere resumes like a
local one and recomputes nothing that was committed, and the tables are
byte-identical to the local executor's.

Model scorers (plugins that require torch) run in one actor per scorer that
builds the model once; classical and planted scorers, operators, regions and
measures run inside the tasks. On a CUDA run both ask Ray for GPUs
(`gpu_requests`): each scorer actor a whole GPU when the cluster has one per
actor, else an equal share of them; each batch task a share (`TASK_GPUS`)
when something it runs computes on the device (an operator, measure or region
whose registry entry says `on_device`, or that requires torch), none
otherwise. A CUDA run on a cluster without GPUs is refused before any work.
A task whose worker dies is retried by Ray (`RETRIES`); a batch that still
fails is split into single images, and an image whose task fails on every try
becomes an exclusion saying so. Image files (and mask files) are read by the
workers at the paths the manifest gives, so on a real cluster they must be on
a filesystem every node mounts at the same path.

Generated arms and optimisation probes run in pipeline actors (`PipelineActor`):
one actor per diffusers pipeline loads it once (on first use) and makes
batches of images, or optimises probe trajectories with the probe's scorer
built beside it (the gradient runs through both). The driver keeps the keys,
the stores and the order: it sends the work that is not in the store, commits
each result as it arrives exactly as a local run does (one PNG, or one
trajectory folder, by atomic rename), so a killed run resumes and the images
and tables equal the local executor's. On a CUDA run a generation actor asks
for a whole GPU (generation runs alone, before any scorer actor; one at a time,
killed when generation is done); a probe actor is counted with the scorer
actors that are still alive (`RayBackend.options`). The pipeline's folder (or
Hugging Face cache) must be at the same path on the node that runs the actor.

One job per module: ray_cluster.py (the optional import, workers' environment and
plugins, the GPU budget), ray_tasks.py (a batch task's worker side), ray_scorers.py
(scorer actors), ray_pipelines.py (pipeline actors and `RayConnection`), and this
module's `RayBackend`, the driver that submits the arm's batches and merges them.
"""

from __future__ import annotations

import contextlib
from typing import Any

from scoreaudit.runtime.ray_cluster import (
    RETRIES,
    WINDOW,
    RayUnavailable,
    actor_result,
    device_work,
    gpu_requests,
    registry_entry,
    shipped_entries,
)
from scoreaudit.runtime.ray_pipelines import RayConnection, pipeline_key
from scoreaudit.runtime.ray_scorers import ProbeScorer, ScorerActor
from scoreaudit.runtime.ray_tasks import CacheReader, run_batch

__all__ = ["RayBackend", "RayConnection", "RayUnavailable"]


class RayBackend:
    """Runs an arm's batches and the probes on Ray (`RayConnection`); `close()` stops what it started."""

    name = "ray"

    def __init__(self, ctx: Any, cache_path: Any, address: str | None = None, num_cpus: int | None = None,
                 connection: RayConnection | None = None):
        self.own = connection is None  # a connection passed in is the caller's to close
        self.conn = connection if connection is not None else RayConnection(address, num_cpus)
        ray = self.conn.get()
        self.ray = ray
        self.ctx = ctx
        self.started = self.conn.started
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
        self.reader = ray.remote(CacheReader).options(scheduling_strategy=here, num_cpus=0).remote(
            str(cache_path))
        self.task = ray.remote(run_batch)  # options (retries, GPUs) are set per arm in `batches` (one .options call)
        self.entries = shipped_entries(ctx.ir)
        self.actors: dict[str, Any] = {}
        self.probe_actors: dict[tuple, Any] = {}
        self.window = max(1, int(ray.available_resources().get("CPU", 1)) * WINDOW)
        self.gpus = float(ray.cluster_resources().get("GPU", 0))
        ctx.log.note(f"executor ray: {len(ray.nodes())} node(s), "
                     f"{int(ray.cluster_resources().get('CPU', 0))} CPU(s), "
                     f"{int(self.gpus)} GPU(s)")

    def options(self, runner: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """Ray options (scorer actors, batch tasks) for one arm's runner: GPUs on a CUDA run (`gpu_requests`)."""
        n_actors = sum(1 for s in self.ctx.ir.scorers.values()  # one actor per model scorer (ScorerSlot.torch)
                       if "torch" in tuple(registry_entry("scorer", s.call.plugin).fact("requires") or ()))
        n_actors += self.n_probe_actors()  # they run beside the scorer actors, after the arms
        on_dev = self.ctx.device.startswith("cuda") and bool(device_work(runner))
        actor, task = gpu_requests(self.ctx.device, self.gpus, n_actors, on_dev)
        return ({"num_gpus": actor, "num_cpus": 1, "max_restarts": RETRIES, "max_task_retries": RETRIES},
                {"num_gpus": task, "num_cpus": 1, "max_retries": RETRIES, "retry_exceptions": False})

    def n_probe_actors(self) -> int:
        """Pipeline actors the probes will start (one per pipeline, revision and dtype setting)."""
        return len({pipeline_key(dict(p.call.params)) for p in self.ctx.ir.probes.values()})

    def probe_options(self) -> dict[str, Any]:
        """Ray options of a probe's pipeline actor: a scorer actor's GPU share, counted among them."""
        n_actors = sum(1 for s in self.ctx.ir.scorers.values()
                       if "torch" in tuple(registry_entry("scorer", s.call.plugin).fact("requires") or ()))
        share = gpu_requests(self.ctx.device, self.gpus, n_actors + self.n_probe_actors(), True)[0]
        return {"num_gpus": share, "num_cpus": 1, "max_restarts": RETRIES, "max_task_retries": RETRIES}

    def trajectories(self, probe: Any, params: dict, folder: Any, device: str, dtype: str, scorer_slot: Any,
                     todo: list, advance: Any):
        """`probe.run_probe`'s optimisation on the probe's pipeline actor: (trajectory, PNGs, trace) in
        order, two in flight; the driver commits each as it comes (a kill loses at most those in flight)."""
        ray = self.ray
        key = pipeline_key(params)
        if key not in self.probe_actors:
            self.probe_actors[key] = self.conn.pipeline_actor(self.probe_options(), probe.name, params, folder,
                                                              device, dtype, self.entries, self.ctx.spec_dir,
                                                              "probe")
            where = ray.get(self.probe_actors[key].where.remote())
            self.ctx.log.note(f"executor ray: probe {probe.name}: pipeline actor pid {where['pid']} on node "
                              f"{where['node'][:12]} ({where['gpus']:g} GPU)")
        actor = self.probe_actors[key]
        sir = scorer_slot.ir
        if scorer_slot._instance is None:  # run.json's weights: the actor's scorer (built there, not here)
            scorer_slot.factory = lambda: ProbeScorer(actor, sir)
            scorer_slot.instance  # noqa: B018 - stages the weights step as a local run does
        sprompt = scorer_slot.params.get("prompt") if isinstance(scorer_slot.params.get("prompt"), str) else None
        n_it = int(params["iterations"])
        refs: dict[int, Any] = {}
        nxt = 0
        for k, t in enumerate(todo):
            while nxt < len(todo) and nxt < k + 2:
                refs[nxt] = actor.optimise.remote(params, sir, sprompt, todo[nxt].prompt, todo[nxt].seed,
                                                  probe.name)
                nxt += 1
            pngs, trace = actor_result(ray, refs.pop(k))
            advance(n_it + 1)
            yield t, pngs, trace

    def _actor(self, slot: Any, options: dict[str, Any]) -> Any:
        if slot.name not in self.actors:
            gpu = self.ctx.device.startswith("cuda")
            cls = self.ray.remote(ScorerActor).options(**options)
            self.actors[slot.name] = cls.remote(slot.ir, "cuda" if gpu else self.ctx.device, self.entries,
                                                self.ctx.spec_dir)
        return self.actors[slot.name]

    def batches(self, runner: Any, arm: Any, manifest: Any, batches: list[list], images_arm: bool):
        if not batches:
            return
        ray = self.ray
        ctx = self.ctx
        actor_opts, task_opts = self.options(runner)
        actors = {s.name: self._actor(s, actor_opts) for s in runner.slots if s.torch}
        task = self.task.options(**task_opts)
        common = ray.put({"ir": ctx.ir, "arm": arm.name, "manifest": manifest, "pre": runner.pre,
                          "slots": [s.name for s in runner.slots], "specs": [s.name for s in runner.specs],
                          "operators": tuple(op.name for op in runner.operators), "under": runner.under,
                          "regions": tuple(runner.regions.regions),
                          "device": ctx.device,
                          "spec_dir": ctx.spec_dir, "policies": ctx.policies, "manifests": ctx.manifests,
                          "entries": self.entries, "runner_cls": type(runner)})
        refs: dict[int, Any] = {}
        nxt = 0
        for k, todo in enumerate(batches):
            while nxt < len(batches) and nxt < k + self.window:  # keep the cluster busy, memory bounded
                refs[nxt] = task.remote(common, batches[nxt], self.reader, actors)
                nxt += 1
            results = self._get(refs.pop(k), common, todo, arm.name, actors, task)
            yield todo, (lambda results=results, todo=todo: self._merge(runner, arm.name, todo, results))

    def _get(self, ref: Any, common: Any, todo: list, arm: str, actors: dict, task: Any) -> list:
        """The batch's result, or, when its worker died on every try, one result per image."""
        from ray.exceptions import RayTaskError

        try:
            return [("ok", self.ray.get(ref))]
        except self.ray.exceptions.RayError as exc:
            cause = getattr(exc, "cause", None) if isinstance(exc, RayTaskError) else exc
            if isinstance(exc, RayTaskError) and not isinstance(cause, self.ray.exceptions.RayError):
                # the code raised: the same error as under the local executor
                raise (cause if isinstance(cause, BaseException) else exc) from None
            # a worker, its node or a scorer's actor died on every try
            if len(todo) == 1:
                return [("died", (todo[0], type(cause).__name__))]
            out = []
            for rec in todo:  # retry the images one by one, so one poisonous image does not sink the rest
                out += self._get(task.remote(common, [rec], self.reader, actors), common, [rec], arm, actors, task)
            return out

    def _merge(self, runner: Any, arm: str, todo: list, results: list) -> None:
        ctx = self.ctx
        for kind, res in results:
            if kind == "died":
                rec, why = res
                ctx.exclude(arm, rec.image_id, rec.row, "decode",
                            f"the Ray worker processing this image died on each of {RETRIES + 1} tries ({why}); "
                            f"rerun to try again (row {rec.row})")
                continue
            ctx.cache.corrupt.update(res["corrupt"])  # replaced by the recomputed values, reported by the run
            for step, codec, blob in res["entries"]:
                ctx.cache.stage_sealed(step, codec, blob)
            for step in res["prov"]:
                ctx.cache.note(step)
            for what, line in res["log"]:
                if what == "note":
                    ctx.log.note(line)
                else:
                    ctx.log.step(*line)
            for name, rows in res["tables"].items():
                getattr(ctx.tables, name).extend(rows)
            for label, n in res["progress"].items():
                ctx.progress.advance(label, n)
            runner.usable.extend(res["usable"])
            ctx.score_keys.update(res["score_keys"])
            if res["error"]:
                from scoreaudit.diagnostics import DiagnosticError

                raise DiagnosticError(res["error"])

    def close(self) -> None:
        for a in [*self.actors.values(), *self.probe_actors.values(), self.reader]:
            with contextlib.suppress(Exception):  # already gone (Ray raises several kinds)
                self.ray.kill(a)
        self.actors.clear()
        self.probe_actors.clear()
        if self.own:
            self.conn.close()
