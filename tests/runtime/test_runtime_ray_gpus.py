"""`--executor ray` on a CUDA run: scorer actors and batch tasks that compute on the device ask Ray for GPUs.

Checked on a CPU machine: the requests as functions of the cluster and the arm's work, and on a local
Ray instance that declares one (fake) GPU, that Ray accepts the options and assigns the shares asked for.
"""

from __future__ import annotations

import os

import pytest

from runtime_helpers import call, make_ir, fake_log  # noqa: F401
from scoreaudit.compiler.ir import OperatorIR, ScorerIR
from scoreaudit.registry import REGISTRIES, load_plugins
from scoreaudit.runtime import ray_backend as rb
from scoreaudit.runtime import ray_cluster
from scoreaudit.runtime.arm_runner import ArmRunner
from scoreaudit.runtime.measure_steps import measure_specs
from scoreaudit.runtime.progress import Progress
from scoreaudit.runtime.region_steps import RegionSteps
from scoreaudit.runtime.runlog import RunLog
from scoreaudit.runtime.scoring import ScorerSlot
from scoreaudit.runtime.steps import RunContext
from scoreaudit.runtime.tables import Tables

# Ray's token authentication (one random token for every Ray process of the session) is set in
# tests/conftest.py, before any module imports ray.

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]  # slow: Ray: a local cluster per test


class _Model:  # a scorer that would load a torch model (never built here)
    def __init__(self, params, device="cpu"):
        raise AssertionError("not built in these tests")


@pytest.fixture
def model_scorer():
    load_plugins()
    REGISTRIES["scorer"].register("fake_model", version="1", requires=("torch",))(_Model)
    yield "fake_model"
    REGISTRIES["scorer"]._entries.pop("fake_model", None)  # test-only removal


def _runner(tmp_path, ir, device):
    ctx = RunContext(ir=ir, cache=None, log=RunLog(tmp_path / "run.log"), tables=Tables(),
                     progress=Progress(False), device=device, spec_dir=tmp_path)
    slots = [ScorerSlot(ctx, s) for s in ir.scorers.values()]
    return ctx, ArmRunner(ctx, RegionSteps(ctx), slots, measure_specs(ir))


def test_requests_follow_the_device_and_the_cluster(monkeypatch):
    monkeypatch.delenv("SCOREAUDIT_RAY_TASK_GPUS", raising=False)
    assert ray_cluster.gpu_requests("cpu", 8, 2, True) == (0.0, 0.0)  # a CPU run never asks for GPUs
    assert ray_cluster.gpu_requests("cuda", 8, 4, True) == (1.0, ray_cluster.TASK_GPUS)  # room for a GPU per model
    assert ray_cluster.gpu_requests("cuda", 1, 1, True) == (0.8, 0.1)  # one GPU: the model leaves room for tasks
    assert ray_cluster.gpu_requests("cuda", 1, 1, False) == (1.0, 0.0)  # tasks without device work take none
    assert ray_cluster.gpu_requests("cuda", 1, 4, False) == (0.25, 0.0)  # four models share one GPU
    assert ray_cluster.gpu_requests("cuda", 1, 3, True) == (0.26, 0.1)  # 0.8 / 3, rounded down
    assert ray_cluster.gpu_requests("cuda", 2, 0, True) == (0.0, 0.1)  # no model scorer: only the tasks
    a, t = ray_cluster.gpu_requests("cuda", 1, 3, True)
    assert 3 * a + t <= 1.0  # everything fits on the one GPU at once
    with pytest.raises(ray_cluster.RayUnavailable, match="no GPUs"):
        ray_cluster.gpu_requests("cuda", 0, 1, True)
    monkeypatch.setenv("SCOREAUDIT_RAY_TASK_GPUS", "0.25")
    assert ray_cluster.gpu_requests("cuda", 4, 2, True) == (1.0, 0.25)
    for bad in ("lots", "0", "1.5"):
        monkeypatch.setenv("SCOREAUDIT_RAY_TASK_GPUS", bad)
        with pytest.raises(ray_cluster.RayUnavailable, match="SCOREAUDIT_RAY_TASK_GPUS"):
            ray_cluster.gpu_requests("cuda", 1, 1, True)


def test_device_work_comes_from_registry_facts(tmp_path, fake_log):
    """Built-in operators sweep on the device (`on_device`); a plugin without the fact stays on the CPU."""
    load_plugins()
    for entry in REGISTRIES["operator"]:
        if entry.impl.__module__.startswith("scoreaudit."):
            assert entry.fact("on_device") is True, entry.name
    _, runner = _runner(tmp_path, make_ir(), "cuda")
    assert ray_cluster.device_work(runner) == ["operator 'light'", "operator 'light_p'"]
    fragile = {"f": OperatorIR(name="f", call=call("fake_fragile"), doses=(0.0, 1.0), identity=0.0,
                               pixel_local=True, symmetric=False)}
    _, runner = _runner(tmp_path, make_ir(operators=fragile), "cuda")
    assert ray_cluster.device_work(runner) == []  # measures (mean_lab, gamut_clip) and regions compute on the CPU


def test_torch_operators_exist_for_every_operator_declared_on_device():
    pytest.importorskip("torch", reason="the models extra is installed by scripts/bootstrap.sh test")
    from scoreaudit.plugins.gpu.operators import TORCH_OPERATORS

    load_plugins()
    declared = {n for n in REGISTRIES["operator"].names() if REGISTRIES["operator"].get(n).fact("on_device")}
    assert declared <= set(TORCH_OPERATORS)


def test_ray_assigns_the_requested_gpu_shares(tmp_path, fake_log, model_scorer, monkeypatch):
    """A local Ray instance declaring one GPU: the options the backend builds for a CUDA run are accepted,
    and a task and an actor started with them hold exactly those shares (a CPU run asks for none)."""
    ray = pytest.importorskip("ray", reason="the ray extra is installed by scripts/bootstrap.sh test")
    monkeypatch.delenv("SCOREAUDIT_RAY_TASK_GPUS", raising=False)
    scorers = {"s": ScorerIR(name="s", call=call("fake_mean")), "m": ScorerIR(name="m", call=call(model_scorer))}
    ir = make_ir(scorers=scorers)
    ray.init(address="local", num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False,
             configure_logging=False, object_store_memory=100 * 1024 * 1024)
    try:
        ctx, runner = _runner(tmp_path, ir, "cuda")
        backend = rb.RayBackend(ctx, tmp_path / "cache.sqlite")
        actor_opts, task_opts = backend.options(runner)
        assert actor_opts["num_gpus"] == 0.8 and task_opts["num_gpus"] == 0.1

        def held():
            return ray.get_runtime_context().get_assigned_resources()

        class Holder:
            def held(self):
                return held()

        got = ray.get(ray.remote(held).options(**task_opts).remote())
        assert got.get("GPU") == pytest.approx(0.1)
        assert backend.task.options(**task_opts) is not None  # the batch task takes the same options (ray 2.60)
        actor = ray.remote(Holder).options(**actor_opts).remote()
        assert ray.get(actor.held.remote()).get("GPU") == pytest.approx(0.8)
        ray.kill(actor)

        ctx_cpu, runner_cpu = _runner(tmp_path, ir, "cpu")
        cpu_actor, cpu_task = rb.RayBackend(ctx_cpu, tmp_path / "cache.sqlite").options(runner_cpu)
        assert cpu_actor["num_gpus"] == 0 and cpu_task["num_gpus"] == 0
        assert "GPU" not in ray.get(ray.remote(held).options(**cpu_task).remote())
        backend.close()
    finally:
        ray.shutdown()
