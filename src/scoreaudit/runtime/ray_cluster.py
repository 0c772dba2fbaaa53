"""Ray for `--executor ray`: the optional import, the workers' environment and plugins, and the GPU budget.

Model scorers ask for GPUs as actors, batch tasks as a share when something they run computes on the device
(`gpu_requests`); a CUDA run on a cluster without GPUs is refused before any work.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import socket
import sys
from collections.abc import Iterator
from typing import Any

from scoreaudit.plugins.base import ScorerUnavailable

RETRIES = 2  # extra tries of a task whose worker died (Ray's max_retries)
TASK_GPUS = 0.1  # GPU share of a batch task whose work runs on the device ($SCOREAUDIT_RAY_TASK_GPUS)
ACTOR_ROOM = 0.8  # share of the cluster's GPUs the scorer actors may take when tasks need GPUs too
WINDOW = 2  # tasks in flight per available CPU
RAY_EXTRA = "pip install 'scoreaudit[ray]'"


class RayUnavailable(ScorerUnavailable):
    """Ray is not installed or the cluster cannot be reached (the CLI exits 3, no traceback)."""


def import_ray():
    try:
        import ray  # optional extra
    except ImportError:
        raise RayUnavailable(f"--executor ray needs Ray, which is not installed: {RAY_EXTRA}") from None
    return ray


def register_entries(entries: list) -> None:
    """Plugins the driver registered at run time (not built in, no entry point): register them here too."""
    from scoreaudit.registry import REGISTRIES, load_plugins

    load_plugins()
    for e in entries:
        reg = REGISTRIES[e.kind]
        if e.name not in reg:
            reg._entries[e.name] = e


FORWARDED_PREFIXES = ("HF_", "TRANSFORMERS_", "TORCH_", "SCOREAUDIT_", "XDG_CACHE_HOME")


def worker_env() -> dict[str, str]:
    """Environment the run's workers get: the driver's sys.path (so plugins it imports load there too),
    its Hugging Face / torch cache settings, and the variables named in $SCOREAUDIT_RAY_ENV."""
    names = {n.strip() for n in os.environ.get("SCOREAUDIT_RAY_ENV", "").split(",") if n.strip()}
    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_PREFIXES) or k in names}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def registry_entry(kind: str, plugin: str) -> Any:
    from scoreaudit.registry import REGISTRIES, load_plugins

    load_plugins()
    return REGISTRIES[kind].get(plugin)


def shipped_entries(ir: Any) -> list:
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
def loopback_node() -> Iterator[None]:
    """While a local instance starts, Ray keeps a loopback node address instead of swapping it for the
    machine's network address (which it does on Linux, where multi-node clusters are on): the flag it
    reads is the one Ray itself clears on macOS and Windows. Without that flag (another Ray version)
    the instance starts as Ray would have started it."""
    try:
        ray_constants: Any = importlib.import_module("ray._private.ray_constants")
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
