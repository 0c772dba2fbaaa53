"""Diffusers pipelines on Ray: one actor per pipeline makes generated arms' images and optimises probe trajectories;
`RayConnection` is Ray for one run (joined or started on first use) and owns the generation actors."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

from scoreaudit.runtime.ray_cluster import (
    LOOPBACK,
    RETRIES,
    RayUnavailable,
    actor_result,
    check_reachable,
    gpu_requests,
    import_ray,
    loopback_node,
    register_entries,
    worker_env,
)


class PipelineActor:
    """One diffusers pipeline, loaded once per actor process on first use: batches of generated images
    (`generate`) and probe trajectories (`optimise`, with the probe's scorers built here too, since the
    gradient runs through the pipeline and the scorer)."""

    def __init__(self, name: str, params: dict, folder: str, device: str, dtype: str, entries: Sequence = (),
                 spec_dir: Any = None, threads: int | None = None, kind: str = "arm") -> None:
        from pathlib import Path

        from scoreaudit.runtime.generation import Generator

        register_entries(list(entries))
        if threads:  # a CPU run: the driver's torch thread count, so the arithmetic is the local run's
            import torch

            torch.set_num_threads(int(threads))
        self.loader = Generator(name, params, Path(folder), device, dtype, kind)
        self.spec_dir = spec_dir
        self.scorers: dict[str, Any] = {}
        self.steps: dict[tuple, Any] = {}

    def _pipe(self) -> Any:
        if self.loader.pipe is None:
            self.loader._load()
        return self.loader.pipe

    def where(self) -> dict:
        """This actor's process and node (run.log says where the work ran)."""
        return {"pid": os.getpid(), "node": import_ray().get_runtime_context().get_node_id(),
                "gpus": import_ray().get_runtime_context().get_assigned_resources().get("GPU", 0.0)}

    def generate(self, arm: str, params: dict, jobs: list) -> list[bytes]:
        """PNG bytes of each job (runtime/generation.py's Generator, on this actor's loaded pipeline)."""
        from scoreaudit.runtime.generation import Generator

        pipe = self._pipe()
        gen = Generator(arm, params, self.loader.folder, self.loader.device, self.loader.dtype)
        gen.pipe = pipe
        return gen(jobs)

    def weights_hash(self, sir: Any) -> str | None:
        impl = self._scorer(sir)
        return impl.weights_hash() if hasattr(impl, "weights_hash") else None

    def _scorer(self, sir: Any) -> Any:
        if sir.name not in self.scorers:
            from scoreaudit.runtime.scoring import build_scorer

            self.scorers[sir.name] = build_scorer(sir, self.loader.device, self.spec_dir)
        return self.scorers[sir.name]

    def optimise(self, params: dict, sir: Any, scorer_prompt: str | None, prompt: str, seed: int,
                 probe: str = "probe") -> tuple[list[bytes], list[dict]]:
        """One probe trajectory (runtime/probe.py's `optimise`): each iteration's PNG and the trace. One
        actor serves every probe on its pipeline, so `probe` names the one asking (in an E0882)."""
        from scoreaudit.runtime.generation import sizes
        from scoreaudit.runtime.probe import _png, one_step, optimise

        pipe = self._pipe()
        k = (float(params.get("guidance", 0.0)), *sizes(params), params.get("timestep"))
        if k not in self.steps:
            self.steps[k] = one_step(probe, pipe, params, self.loader.device, self.loader.dtype)
        images, trace = optimise(self.steps[k], self._scorer(sir), prompt, seed, params, scorer_prompt)
        return [_png(a) for a in images], trace


def pipeline_key(params: dict, *extra: Any) -> tuple:
    """Which pipeline actor serves a generated arm or probe: the same pipeline, revision and dtype setting."""
    return (params["pipeline"], params.get("revision"), params.get("dtype", "auto"), *extra)


def actor_device(device: str) -> str:
    """The device inside an actor: Ray shows a GPU actor only the GPUs it assigned, as cuda:0 onwards."""
    return "cuda" if device.startswith("cuda") else device


def cpu_threads(device: str) -> int | None:
    """A CPU run's torch thread count for the pipeline actors: the driver's (None on CUDA)."""
    if device.startswith("cuda"):
        return None
    try:
        import torch
    except ImportError:
        return None
    return torch.get_num_threads()


class RemoteGenerator:
    """runtime/generation.py's Generator interface, served by a pipeline actor (`RayConnection.generator`).

    `stream` keeps `WINDOW_BATCHES` batches in flight, so the actor never waits for the driver to
    commit; results come back in order.
    """

    WINDOW_BATCHES = 2

    def __init__(self, conn: RayConnection, arm: str, params: dict, folder: Any, device: str, dtype: str) -> None:
        self.conn, self.arm, self.params = conn, arm, params
        self.folder, self.device, self.dtype = folder, device, dtype

    def __call__(self, jobs: list, on_step: Any = None) -> list[bytes]:
        return next(self.stream([jobs], on_step))[1]

    def stream(self, batches: list[list], on_step: Any = None):
        if not batches:  # everything is in the store: no actor, no Ray
            return
        actor = self.conn.generation_actor(self.arm, self.params, self.folder, self.device, self.dtype)
        ray = self.conn.ray
        steps = int(self.params.get("steps", 30))
        refs: dict[int, Any] = {}
        nxt = 0
        for k, jobs in enumerate(batches):
            while nxt < len(batches) and nxt < k + self.WINDOW_BATCHES:
                refs[nxt] = actor.generate.remote(self.arm, self.params, batches[nxt])
                nxt += 1
            pngs = actor_result(ray, refs.pop(k))
            if on_step is not None:  # the actor's steps, counted when its batch is back
                for _ in range(steps):
                    on_step(len(jobs))
            yield jobs, pngs


class RayConnection:
    """Ray for one run, shared by generation, the arms' batches and the probes: joins `address`, or starts
    a local instance, on first use; `close()` kills the pipeline actors and stops what it started."""

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        self.address, self.num_cpus = address, num_cpus
        self.ray: Any = None
        self.started = False
        self.generators: dict[tuple, Any] = {}  # pipeline key -> actor (one alive at a time)
        self.notes: list[str] = []  # for run.log (generation runs before it exists)

    def get(self) -> Any:
        if self.ray is not None:
            return self.ray
        address = self.address
        if address:
            check_reachable(address)
        ray = import_ray()
        if not ray.is_initialized():
            env = worker_env()
            try:
                if address:
                    ray.init(address=address, log_to_driver=False, configure_logging=False,
                             runtime_env={"env_vars": env})
                else:  # "local": a new instance even when a `ray start` cluster runs on this machine; its
                    # servers listen on the loopback only (on the node's LAN address anyone who reaches it
                    # could submit work to it)
                    with loopback_node():
                        ray.init(address="local", num_cpus=self.num_cpus or os.cpu_count() or 1,
                                 include_dashboard=False, _node_ip_address=LOOPBACK,
                                 object_store_memory=int(os.environ.get("SCOREAUDIT_RAY_OBJECT_STORE_MB", "200"))
                                 * 1024 * 1024, log_to_driver=False, configure_logging=False,
                                 runtime_env={"env_vars": env})
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise RayUnavailable(f"cannot start or reach Ray{f' at {address}' if address else ''}: {exc}") \
                    from None
            self.started = True
        self.ray = ray
        return ray

    def pipeline_actor(self, options: dict, name: str, params: dict, folder: Any, device: str, dtype: str,
                       entries: Sequence = (), spec_dir: Any = None, kind: str = "arm") -> Any:
        """A new pipeline actor (nothing is loaded until its first call); `kind` "probe" for a probe's."""
        ray = self.get()
        cls = ray.remote(PipelineActor).options(**options)  # one .options() call (ray 2.60)
        return cls.remote(name, params, str(folder), actor_device(device), dtype, list(entries), spec_dir,
                          cpu_threads(device), kind)

    def generator(self, arm: str, params: dict, folder: Any, device: str, dtype: str) -> RemoteGenerator:
        """`generation.generate_arm`'s `make`: the arm's images come from its pipeline's actor (started
        when the first image is not in the store)."""
        return RemoteGenerator(self, arm, params, folder, device, dtype)

    def generation_actor(self, arm: str, params: dict, folder: Any, device: str, dtype: str) -> Any:
        """The actor of the arm's pipeline (scheduler and dtype setting included); one alive at a time."""
        ray = self.get()
        key = pipeline_key(params, params.get("scheduler"))
        if key not in self.generators:
            self.release_generators()  # generation is sequential: one pipeline on the GPU at a time
            gpus = float(ray.cluster_resources().get("GPU", 0))
            share = gpu_requests(device, gpus, 1, False)[0]  # alone: a whole GPU on a CUDA run
            self.generators[key] = self.pipeline_actor(
                {"num_gpus": share, "num_cpus": 1, "max_restarts": RETRIES, "max_task_retries": RETRIES},
                arm, params, folder, device, dtype)
            where = ray.get(self.generators[key].where.remote())
            self.notes.append(f"executor ray: generate {arm}: pipeline actor pid {where['pid']} on node "
                              f"{where['node'][:12]} ({where['gpus']:g} GPU)")
        return self.generators[key]

    def release_generators(self) -> None:
        """Kill the generation actors (their GPU memory is the scorers' next)."""
        for a in self.generators.values():
            with contextlib.suppress(Exception):  # already gone
                self.ray.kill(a)
        self.generators.clear()

    def close(self) -> None:
        if self.ray is None:
            return
        self.release_generators()
        if self.started:
            self.ray.shutdown()
            self.started = False
        self.ray = None
