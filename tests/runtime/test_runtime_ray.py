"""`--executor ray`: the same tables, run log and progress as the local executor, on a local Ray
instance (2 CPUs) and on a multi-node-shaped cluster (`ray start --head` plus a second `ray start
--address` node on 127.0.0.1, started and stopped here); dead workers are retried, an image whose
worker dies on every try is an exclusion, and a SIGKILLed run resumes (test_runtime_crash.py).

Ray starts slowly, so one cluster serves the whole module; memory stays small (200 MB object store).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from runtime_helpers import HERE, call, make_images, make_ir, run_steps, table_bytes, fake_log  # noqa: F401
from scoreaudit.compiler.ir import ScorerIR
from scoreaudit.runtime import executor as ex
from scoreaudit.runtime.executor import execute

# Ray's token authentication (one random token for every Ray process of the session) is set in
# tests/conftest.py, before any module imports ray.
pytest.importorskip("ray", reason="the ray extra is installed by scripts/bootstrap.sh test")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # slow: Ray: a local cluster per test


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _stop(procs) -> None:
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@pytest.fixture(scope="module")
def cluster():
    """A two-node Ray cluster on 127.0.0.1 (token-authenticated); yields its address."""
    tmp = Path(tempfile.mkdtemp(prefix="sa-ray-", dir="/tmp"))  # short: Ray's socket paths
    port = _free_port()
    saved = {k: os.environ.get(k) for k in ("SCOREAUDIT_RAY_ENV",)}
    os.environ.update(SCOREAUDIT_RAY_ENV="SA_FAKE_LOG,SA_FAKE_SLEEP")
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0",
               PYTHONPATH=os.pathsep.join([str(HERE), *[p for p in sys.path if p]]))
    ray_bin = str(Path(sys.executable).parent / "ray")
    common = ["--block", "--node-ip-address=127.0.0.1", "--num-cpus=1", "--object-store-memory=100000000",
              "--disable-usage-stats"]
    procs = [subprocess.Popen([ray_bin, "start", "--head", f"--port={port}", "--include-dashboard=false",
                               f"--temp-dir={tmp}"] + common, env=env, stdout=open(tmp / "head.log", "w"),
                              stderr=subprocess.STDOUT, start_new_session=True)]
    procs.append(subprocess.Popen([ray_bin, "start", f"--address=127.0.0.1:{port}"] + common, env=env,
                                  stdout=open(tmp / "worker.log", "w"), stderr=subprocess.STDOUT,
                                  start_new_session=True))
    address = f"127.0.0.1:{port}"
    try:
        import ray

        deadline = time.monotonic() + 400
        last: Exception | None = None
        while True:
            try:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
                alive = [n for n in ray.nodes() if n["Alive"]]
                ray.shutdown()
                if len(alive) >= 2:
                    break
            except Exception as exc:  # not up yet
                last = exc
                if ray.is_initialized():
                    ray.shutdown()
            assert time.monotonic() < deadline, f"{last!r}\n" + (tmp / "head.log").read_text()[-2000:]
            assert all(p.poll() is None for p in procs), (tmp / "head.log").read_text()[-2000:]
            time.sleep(2)
        yield address
    finally:
        _stop(procs)
        shutil.rmtree(tmp, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _steps(out: Path) -> set[tuple[str, str, str]]:
    return {(s["key"], s["kind"], s["slot"]) for s in run_steps(out)}


class _Bars:
    """Records what the executor asks of its progress bars (label -> [total, advanced])."""

    seen: list[dict[str, list[int]]] = []

    def __init__(self, enabled: bool = True):
        self.bars: dict[str, list[int]] = {}
        _Bars.seen.append(self.bars)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def task(self, label, total):
        self.bars.setdefault(label, [total, 0])
        return label

    def advance(self, label, n=1):
        self.bars[label][1] += n

    def log(self, message):
        pass


def test_local_ray_instance_gives_the_local_tables(tmp_path, fake_log):
    """No address: the run starts a local Ray instance (2 CPUs here) and stops it afterwards."""
    import ray

    spec = make_images(tmp_path)
    ir = make_ir(batch_size=2)
    execute(ir, None, spec_path=spec, out_dir=tmp_path / "local", cache_path=tmp_path / "l.sqlite", progress=False)
    execute(ir, None, spec_path=spec, out_dir=tmp_path / "ray", cache_path=tmp_path / "r.sqlite", progress=False,
            executor="ray")
    assert not ray.is_initialized()  # stopped after the run
    assert table_bytes(tmp_path / "ray") == table_bytes(tmp_path / "local")
    assert _steps(tmp_path / "ray") == _steps(tmp_path / "local")


def test_two_node_cluster_same_tables_log_and_progress(tmp_path, fake_log, cluster, monkeypatch):
    spec = make_images(tmp_path, n_random=7)
    two = {"s": ScorerIR(name="s", call=call("fake_mean")),
           "i": ScorerIR(name="i", call=call("fake_item", measure="ml"))}
    ir = make_ir(batch_size=2, scorers=two)
    monkeypatch.setattr(ex, "Progress", _Bars)
    _Bars.seen.clear()
    execute(ir, None, spec_path=spec, out_dir=tmp_path / "local", cache_path=tmp_path / "l.sqlite", progress=True)
    execute(ir, None, spec_path=spec, out_dir=tmp_path / "ray", cache_path=tmp_path / "r.sqlite", progress=True,
            executor="ray", ray_address=cluster)
    assert table_bytes(tmp_path / "ray") == table_bytes(tmp_path / "local")
    assert _steps(tmp_path / "ray") == _steps(tmp_path / "local")
    bars = [b for b in _Bars.seen if b]
    assert len(bars) == 2 and bars[0] == bars[1] and all(t == n for t, n in bars[0].values())
    log = (tmp_path / "ray" / "run.log").read_text()
    assert "executor ray: 2 node(s)" in log
    counts = [json.loads((tmp_path / o / "run.json").read_text())["counts"] for o in ("local", "ray")]
    assert counts[0] == counts[1]
    # the re-run on the cluster replays every image from the cache: nothing runs, same tables
    execute(ir, None, spec_path=spec, out_dir=tmp_path / "again", cache_path=tmp_path / "r.sqlite",
            progress=False, executor="ray", ray_address=cluster)
    assert table_bytes(tmp_path / "again") == table_bytes(tmp_path / "local")
    assert all(s["status"] == "cached" for s in run_steps(tmp_path / "again"))


def test_dead_workers_are_retried_and_a_poisonous_image_is_excluded(tmp_path, fake_log, cluster):
    spec = make_images(tmp_path, n_random=3)
    plan = tmp_path / "crash.json"
    plan.write_text(json.dumps({"once": ["r0"], "always": ["r2"], "markers": str(tmp_path / "markers")}))
    ir = make_ir(batch_size=1, scorers={"c": ScorerIR(name="c", call=call("fake_crashy", plan=str(plan)))},
                 operators={})
    execute(ir, None, spec_path=spec, out_dir=tmp_path / "ray", progress=False, executor="ray",
            ray_address=cluster)
    import pandas as pd

    scores = pd.read_parquet(tmp_path / "ray" / "tables" / "scores.parquet")
    excl = pd.read_parquet(tmp_path / "ray" / "tables" / "exclusions.parquet")
    assert set(scores["image_id"]) == {"astro", "r0", "r1"}  # r0's worker died once: retried, scored
    assert (tmp_path / "markers" / "r0").exists()
    assert list(excl["image_id"]) == ["r2"]
    assert "died on each of 3 tries" in excl["reason"][0]
    # the local executor scores the same images the same way (r2 aside)
    plan.write_text(json.dumps({"once": [], "always": [], "markers": str(tmp_path / "markers")}))
    execute(ir, None, spec_path=spec, out_dir=tmp_path / "local", cache_path=tmp_path / "l.sqlite", progress=False)
    local = pd.read_parquet(tmp_path / "local" / "tables" / "scores.parquet")
    assert scores.equals(local[local["image_id"] != "r2"].reset_index(drop=True))


def test_sigkill_then_resume_on_the_cluster(tmp_path, cluster):
    """test_runtime_crash's scenario with the ray executor: nothing committed is recomputed."""
    import test_runtime_crash as crash

    crash.run_scenario(tmp_path, dict(os.environ, SA_EXECUTOR="ray", SA_RAY_ADDRESS=cluster), kills=(5, 30))


PIPELINE_SPEC = '''audit "Ray pipelines" { seed: 1  bootstrap: 100 }
scorer p = planted(fidelity: 0.5, noise: 0.1)
scorer pick = pickscore(prompt: "a portrait photo")
arm gen = generate("sd", prompts: "prompts.txt", seeds: 2, steps: 2, guidance: 1.0, size: 32, batch_size: 2,
                   kind: synthetic)
probe q = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 1, seeds: 1, size: 32,
               measures: [skin_exposure])
'''


def test_generation_and_probe_on_the_two_node_cluster(tmp_path, cluster):
    """Generated images and a probe's trajectories are made in pipeline actors on the cluster (1 CPU per
    node: the generation actor, then the scorer actor beside the probe's actor); the local tables."""
    pytest.importorskip("diffusers")
    import re

    import pandas as pd

    from scoreaudit import api
    from scoreaudit.testing.tiny_diffusion import save_tiny_sd
    from scoreaudit.testing.tiny_models import build_pickscore

    build_pickscore(Path(os.environ["HF_HUB_CACHE"]), None, seed=2)  # the session's offline HF cache
    save_tiny_sd(tmp_path / "sd", seed=3)
    (tmp_path / "prompts.txt").write_text("a photo of a nurse\na photo of a pilot\n")
    spec = tmp_path / "p.audit"
    spec.write_text(PIPELINE_SPEC)
    api.run(spec, out=tmp_path / "local", device="cpu", cache=tmp_path / "l.sqlite", progress=False,
            render_report=False)
    api.run(spec, out=tmp_path / "ray", device="cpu", cache=tmp_path / "r.sqlite", progress=False,
            render_report=False, executor="ray", ray_address=cluster)
    log = (tmp_path / "ray" / "run.log").read_text()
    assert "executor ray: 2 node(s)" in log
    for what in ("generate gen", "probe q"):
        pids = re.findall(rf"executor ray: {what}: pipeline actor pid (\d+) on node", log)
        assert len(pids) == 1 and int(pids[0]) != os.getpid(), log[:2000]
    for t in ("images", "scores", "probe"):
        assert (tmp_path / "ray" / "tables" / f"{t}.parquet").is_file()
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "ray" / "tables" / f"{t}.parquet"),
                                      pd.read_parquet(tmp_path / "local" / "tables" / f"{t}.parquet"))
    run = json.loads((tmp_path / "ray" / "run.json").read_text())
    assert run["generated"]["gen"]["generated"] == 4 and run["probes"]["q"]["optimised"] == 2
