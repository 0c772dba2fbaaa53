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
otherwise. A CUDA run on a cluster without GPUs is refused before any work. A task whose worker dies is retried by Ray (`RETRIES`); a batch
that still fails is split into single images, and an image whose task fails
on every try becomes an exclusion saying so. Image files (and mask files)
are read by the workers at the paths the manifest gives, so on a real
cluster they must be on a filesystem every node mounts at the same path.

Generated arms and optimisation probes run in pipeline actors (`_PipelineActor`):
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
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import sys
from typing import Any, Iterable, Iterator

import numpy as np

from scoreaudit.plugins.base import ScorerUnavailable, ScoreUnavailableForItem

RETRIES = 2  # extra tries of a task whose worker died (Ray's max_retries)
TASK_GPUS = 0.1  # GPU share of a batch task whose work runs on the device ($SCOREAUDIT_RAY_TASK_GPUS)
ACTOR_ROOM = 0.8  # share of the cluster's GPUs the scorer actors may take when tasks need GPUs too
WINDOW = 2  # tasks in flight per available CPU
RAY_EXTRA = "pip install 'scoreaudit[ray]'"
_WORKER: dict[str, Any] = {}  # per worker process: plugin instances and region evaluators, reused across tasks


class RayUnavailable(ScorerUnavailable):
    """Ray is not installed or the cluster cannot be reached (the CLI exits 3, no traceback)."""


def _ray():
    try:
        import ray  # noqa: PLC0415 - optional extra
    except ImportError:
        raise RayUnavailable(f"--executor ray needs Ray, which is not installed: {RAY_EXTRA}") from None
    return ray


# ---------------------------------------------------------------- worker side


class MemoryLog:
    """The RunLog interface, kept in memory and shipped back to the driver."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, Any]] = []  # ("note", text) | ("step", (step, reason))
        self.capture = None

    def note(self, text: str) -> None:
        self.lines.append(("note", text))

    def step(self, step: Any, reason: str) -> None:
        self.lines.append(("step", (step, reason)))

    def flush(self) -> None:
        pass


class CountingProgress:
    """The Progress interface, counting advances per bar for the driver's bars."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def task(self, label: str, total: int) -> str:
        return label

    def advance(self, label: str, n: int = 1) -> None:
        self.counts[label] = self.counts.get(label, 0) + n

    def log(self, message: str) -> None:
        pass


class ShardCache:
    """The Cache interface of one task: reads through the driver's reader actor, keeps new entries.

    Checksums work as in the driver's cache (runtime/cache.py's `open_rows` and `seal_value`): the
    reader sends the stored bytes, the task checks them where the value is used and records a
    damaged one in `corrupt` (the driver then recomputes-and-replaces and reports it); new values are
    sealed here and checked again by the driver before it writes them.
    """

    def __init__(self, reader: Any):
        self.reader = reader
        self.entries: dict[str, tuple[Any, str, bytes]] = {}  # key -> (StepKey, codec, sealed blob)
        self.prov: dict[str, Any] = {}  # slot -> StepKey
        self.corrupt: dict[str, str] = {}  # key -> why its stored value was rejected

    def lookup(self, keys: Iterable[str]) -> dict[str, tuple[Any, str]]:
        from scoreaudit.runtime.cache import open_rows, unseal

        out: dict[str, tuple[Any, str]] = {}
        rest = []
        for k in dict.fromkeys(keys):
            if k in self.entries:
                _step, codec, blob = self.entries[k]
                out[k] = (unseal(codec, blob), "")
            else:
                rest.append(k)
        if rest:
            out.update(open_rows(_ray().get(self.reader.rows.remote(rest)), self.corrupt))
        return out

    def reasons(self, steps: Iterable[Any]) -> dict[str, str]:
        from scoreaudit.runtime.cache import explain

        steps = list(steps)
        prov = _ray().get(self.reader.provenance.remote([s.slot for s in steps])) if steps else {}
        out = {}
        for s in steps:
            p = self.prov.get(s.slot)
            last = ({"plugin": p.plugin, "version": p.version, "params_hash": p.params_hash,
                     "input_hash": p.input_hash} if p is not None else prov.get(s.slot))
            out[s.slot] = explain(s, last)
        return out

    def stage(self, step: Any, value: Any) -> None:
        from scoreaudit.runtime.cache import seal_value

        if step.key not in self.entries:
            self.entries[step.key] = (step, *seal_value(value))
        self.note(step)

    def note(self, step: Any) -> None:
        self.prov[step.slot] = step

    def commit(self) -> None:  # the driver commits
        pass


class ActorScorer:
    """A scorer implementation that forwards to its Ray actor (which holds the model)."""

    def __init__(self, actor: Any):
        self.actor = actor

    def weights_hash(self) -> str | None:
        return _ray().get(self.actor.weights_hash.remote())

    def score(self, images, prompts, items):
        kind, scores, reasons = _ray().get(self.actor.score.remote(list(images), prompts, list(items)))
        if kind == "partial":
            raise ScoreUnavailableForItem(reasons, scores)
        return scores


class _ProbeScorer:
    """The driver's view of a probe's scorer built in its pipeline actor: only its weights' identity."""

    def __init__(self, actor: Any, sir: Any):
        self.actor, self.sir = actor, sir

    def weights_hash(self) -> str | None:
        return actor_result(_ray(), self.actor.weights_hash.remote(self.sir))


class _ScorerActor:
    """One model scorer, built once per actor process on first use (a cached run never builds it)."""

    def __init__(self, sir: Any, device: str, entries: list, spec_dir: Any = None) -> None:
        _register(entries)
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


def _register(entries: list) -> None:
    """Plugins the driver registered at run time (not built in, no entry point): register them here too."""
    from scoreaudit.registry import REGISTRIES, load_plugins

    load_plugins()
    for e in entries:
        reg = REGISTRIES[e.kind]
        if e.name not in reg:
            reg._entries[e.name] = e


def run_batch(common: dict, records: list, reader: Any, actors: dict) -> dict:
    """One batch on a worker: the local executor's `_batch`, with its effects returned as data."""
    from scoreaudit.diagnostics import DiagnosticError
    from scoreaudit.runtime.measure_steps import measure_specs
    from scoreaudit.runtime.region_steps import RegionSteps
    from scoreaudit.runtime.scoring import ScorerSlot
    from scoreaudit.runtime.steps import RunContext
    from scoreaudit.runtime.tables import Tables

    _register(common["entries"])
    ir = common["ir"]
    plugins = _WORKER.setdefault("plugins", {})
    ctx = RunContext(ir=ir, cache=ShardCache(reader), log=MemoryLog(), tables=Tables(),
                     progress=CountingProgress(), device=common["device"], spec_dir=common["spec_dir"],
                     policies=common["policies"], manifests=common["manifests"], _plugins=plugins)
    slots = []
    for name in common["slots"]:
        slot = ScorerSlot(ctx, ir.scorers[name])
        if name in actors:
            slot.factory = (lambda a=actors[name]: ActorScorer(a))
        slots.append(slot)
    specs = [s for s in measure_specs(ir) if s.name in common["specs"]]
    regions = RegionSteps(ctx, common.get("regions"))
    ident = repr(sorted(regions.params.items())) + common["device"]
    regions._evaluator = _WORKER.get(("regions", ident))
    arm = ir.arms[common["arm"]]
    # the driver's runner class travels with the batch (by reference), so this module needs no
    # import of the executor that imports it
    runner = common["runner_cls"](ctx, regions, slots, specs, common["pre"], arm.name, common["operators"],
                                  under=common.get("under"))
    error = None
    try:
        runner._batch(arm, common["manifest"], records, arm.source == "images")
    except DiagnosticError as exc:  # `on_error: fail`: the driver raises it
        error = list(exc.diagnostics)
    if regions._evaluator is not None:
        _WORKER[("regions", ident)] = regions._evaluator
    t = ctx.tables
    return {"entries": list(ctx.cache.entries.values()), "prov": list(ctx.cache.prov.values()),
            "log": ctx.log.lines, "progress": ctx.progress.counts, "usable": runner.usable,
            "score_keys": sorted(ctx.score_keys), "error": error, "corrupt": ctx.cache.corrupt,
            "tables": {n: getattr(t, n) for n in ("images", "scores", "measures", "regions", "exclusions")}}


class _CacheReader:
    """Reads the driver's cache file (read-only) for the tasks; pinned to the driver's node."""

    def __init__(self, path: str) -> None:
        from scoreaudit.runtime.cache import Cache

        self.cache = Cache(path, readonly=True)

    def rows(self, keys: list[str]) -> list:
        """Stored bytes with their checksums: the task checks them (ShardCache.lookup)."""
        return self.cache.rows(keys)

    def provenance(self, slots: list[str]) -> dict:
        return self.cache.provenance(slots)


# ---------------------------------------------------------------- driver side


FORWARDED_PREFIXES = ("HF_", "TRANSFORMERS_", "TORCH_", "SCOREAUDIT_", "XDG_CACHE_HOME")


def worker_env() -> dict[str, str]:
    """Environment the run's workers get: the driver's sys.path (so plugins it imports load there too),
    its Hugging Face / torch cache settings, and the variables named in $SCOREAUDIT_RAY_ENV."""
    names = {n.strip() for n in os.environ.get("SCOREAUDIT_RAY_ENV", "").split(",") if n.strip()}
    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIXES) or k in names}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def _entry(kind: str, plugin: str) -> Any:
    from scoreaudit.registry import REGISTRIES, load_plugins

    load_plugins()
    return REGISTRIES[kind].get(plugin)


def _plugin_entries(ir: Any) -> list:
    """Registry entries the IR uses that workers cannot load themselves (registered at run time)."""
    from importlib.metadata import entry_points

    from scoreaudit.registry import REGISTRIES, load_plugins
    from scoreaudit.runtime.columns import region_calls

    load_plugins()
    eps = {ep.value.split(":")[0] for ep in entry_points(group="scoreaudit.plugins")}
    used = [("scorer", s.call.plugin) for s in ir.scorers.values()]
    used += [("operator", o.call.plugin) for o in ir.operators.values()]
    used += [("covariate" if m.role == "covariate" else "measure", m.call.plugin) for m in ir.measures.values()]
    used += [("region", c.plugin) for r in ir.regions.values() for c in region_calls(r.expr)]
    out = []
    for kind, name in dict.fromkeys(used):
        entry = REGISTRIES[kind].get(name)
        module = getattr(entry.impl, "__module__", "") or ""
        if not module.startswith("scoreaudit.") and module not in eps:
            out.append(entry)
    return out


_HOST_PORT = re.compile(r"^(?:ray://)?\[?([A-Za-z0-9_.:-]+?)\]?:([0-9]{1,5})$")


def check_reachable(address: str, timeout: float = 10.0) -> None:
    """RayUnavailable at once when nothing answers at a HOST:PORT cluster address.

    Ray itself keeps retrying its GCS connection for minutes before giving up; a mistyped
    `--ray-address` is one line instead (exit 3). Other address forms (`auto`) are left to Ray.
    """
    m = _HOST_PORT.match(address.strip())
    if m is None:
        return
    try:
        socket.create_connection((m.group(1), int(m.group(2))), timeout=timeout).close()
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise RayUnavailable(f"nothing answers at the Ray cluster address {address} ({why}): start the cluster "
                             "(`ray start --head`) or correct --ray-address") from None


def on_device(kind: str, plugin: str) -> bool:
    """Whether a plugin computes on the run's device: its `on_device` fact, or it requires torch."""
    from scoreaudit.registry import REGISTRIES, load_plugins

    load_plugins()
    entry = REGISTRIES[kind].get(plugin)
    return bool(entry.fact("on_device")) or "torch" in tuple(entry.fact("requires") or ())


def device_work(runner: Any) -> list[str]:
    """What one arm's batch tasks run on the device ("operator 'light'", ...): empty when nothing."""
    from scoreaudit.runtime.columns import region_calls

    out = [f"operator '{op.name}'" for op in runner.operators if on_device("operator", op.call.plugin)]
    out += [f"{s.role} '{s.name}'" for s in runner.specs if on_device(s.registry, s.plugin)]
    out += [f"region '{name}'" for name, r in runner.regions.regions.items()
            if any(on_device("region", c.plugin) for c in region_calls(r.expr))]
    out += [f"scorer '{s.name}'" for s in runner.slots if not s.torch and on_device("scorer", s.ir.call.plugin)]
    return out


def task_gpus() -> float:
    """The GPU share a batch task with device work asks for (`TASK_GPUS`, or $SCOREAUDIT_RAY_TASK_GPUS)."""
    raw = os.environ.get("SCOREAUDIT_RAY_TASK_GPUS")
    if not raw:
        return TASK_GPUS
    try:
        share = float(raw)
    except ValueError:
        raise RayUnavailable(f"SCOREAUDIT_RAY_TASK_GPUS={raw!r} is not a number (a GPU share such as 0.25)") \
            from None
    if not 0 < share <= 1:
        raise RayUnavailable(f"SCOREAUDIT_RAY_TASK_GPUS={raw!r} must lie in (0, 1]")
    return share


def gpu_requests(device: str, cluster_gpus: float, n_actors: int, tasks_on_device: bool) -> tuple[float, float]:
    """(num_gpus of each scorer actor, num_gpus of each batch task with device work) for a run.

    Not CUDA: none. CUDA: the actors share what they may take (all GPUs, or `ACTOR_ROOM`
    of them when tasks compute on the device too, so tasks always fit), at most a whole
    GPU each (so models never share memory they do not have to); a task with device work
    gets `task_gpus()`. Shares are rounded down to 1/100.
    """
    if not device.startswith("cuda"):
        return 0.0, 0.0
    if cluster_gpus <= 0:
        raise RayUnavailable("the run's device is CUDA but the Ray cluster has no GPUs: start the workers "
                             "with GPUs (`ray start --num-gpus N`), or run with --device cpu")
    task = task_gpus() if tasks_on_device else 0.0
    if n_actors <= 0:
        return 0.0, task
    room = cluster_gpus * (ACTOR_ROOM if task else 1.0)
    actor = min(1.0, int(room / n_actors * 100) / 100)
    return max(actor, 0.01), task


LOOPBACK = "127.0.0.1"  # where a local Ray instance (no --ray-address) listens


@contextlib.contextmanager
def _loopback_node() -> Iterator[None]:
    """While a local instance starts, Ray keeps a loopback node address instead of swapping it for the
    machine's network address (which it does on Linux, where multi-node clusters are on): the flag it
    reads is the one Ray itself clears on macOS and Windows. Without that flag (another Ray version)
    the instance starts as Ray would have started it."""
    try:
        from ray._private import ray_constants
    except ImportError:
        ray_constants = None
    had = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    if had is not None:
        ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if had is not None:
            ray_constants.ENABLE_RAY_CLUSTER = had


class _PipelineActor:
    """One diffusers pipeline, loaded once per actor process on first use: batches of generated images
    (`generate`) and probe trajectories (`optimise`, with the probe's scorers built here too, since the
    gradient runs through the pipeline and the scorer)."""

    def __init__(self, name: str, params: dict, folder: str, device: str, dtype: str, entries: list = (),
                 spec_dir: Any = None, threads: int | None = None, kind: str = "arm") -> None:
        from pathlib import Path

        from scoreaudit.runtime.generation import Generator

        _register(list(entries))
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
        return {"pid": os.getpid(), "node": _ray().get_runtime_context().get_node_id(),
                "gpus": _ray().get_runtime_context().get_assigned_resources().get("GPU", 0.0)}

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


def actor_result(ray: Any, ref: Any) -> Any:
    """An actor call's result; when the code raised, the same error as in a local run (a missing pipeline
    file is exit 3, an unknown scheduler E0853), not Ray's wrapper with the worker's traceback."""
    from ray.exceptions import RayTaskError

    try:
        return ray.get(ref)
    except RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException) and not isinstance(cause, ray.exceptions.RayError):
            raise cause from None
        raise


class RemoteGenerator:
    """runtime/generation.py's Generator interface, served by a pipeline actor (`RayConnection.generator`).

    `stream` keeps `WINDOW_BATCHES` batches in flight, so the actor never waits for the driver to
    commit; results come back in order.
    """

    WINDOW_BATCHES = 2

    def __init__(self, conn: "RayConnection", arm: str, params: dict, folder: Any, device: str, dtype: str) -> None:
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
        ray = _ray()
        if not ray.is_initialized():
            env = worker_env()
            try:
                if address:
                    ray.init(address=address, log_to_driver=False, configure_logging=False,
                             runtime_env={"env_vars": env})
                else:  # "local": a new instance even when a `ray start` cluster runs on this machine; its
                    # servers listen on the loopback only (on the node's LAN address anyone who reaches it
                    # could submit work to it)
                    with _loopback_node():
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
                       entries: list = (), spec_dir: Any = None, kind: str = "arm") -> Any:
        """A new pipeline actor (nothing is loaded until its first call); `kind` "probe" for a probe's."""
        ray = self.get()
        cls = ray.remote(_PipelineActor).options(**options)  # one .options() call (ray 2.60)
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
            try:
                self.ray.kill(a)
            except Exception:  # already gone
                pass
        self.generators.clear()

    def close(self) -> None:
        if self.ray is None:
            return
        self.release_generators()
        if self.started:
            self.ray.shutdown()
            self.started = False
        self.ray = None


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
        self.reader = ray.remote(_CacheReader).options(scheduling_strategy=here, num_cpus=0).remote(
            str(cache_path))
        self.task = ray.remote(run_batch)  # options (retries, GPUs) are set per arm in `batches` (one .options call)
        self.entries = _plugin_entries(ctx.ir)
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
                       if "torch" in tuple(_entry("scorer", s.call.plugin).fact("requires") or ()))
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
                       if "torch" in tuple(_entry("scorer", s.call.plugin).fact("requires") or ()))
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
            scorer_slot.factory = lambda: _ProbeScorer(actor, sir)
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
            cls = self.ray.remote(_ScorerActor).options(**options)
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
        for a in [*self.actors.values(), *self.probe_actors.values()]:
            try:
                self.ray.kill(a)
            except Exception:  # already gone
                pass
        self.actors.clear()
        self.probe_actors.clear()
        try:
            self.ray.kill(self.reader)
        except Exception:
            pass
        if self.own:
            self.conn.close()
