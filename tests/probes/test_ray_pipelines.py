"""`--executor ray`: generated arms and ReNO probes run in pipeline actors (runtime/ray_backend.py).

On a local Ray instance started and stopped by each run (127.0.0.1), with the tiny SD pipeline and a
tiny PickScore: the work runs in an actor process (not the driver), and the images, trajectories and
tables equal the local executor's; the stores are shared with local runs, so a Ray run whose store
lacks one image and one trajectory makes exactly those again and rewrites nothing else.
"""

from __future__ import annotations

import json
import os
import re

import pandas as pd
import pytest

# Ray's token authentication (one random token for every Ray process of the session) is set in
# tests/conftest.py, before any module imports ray.
pytest.importorskip("diffusers")
pytest.importorskip("ray", reason="the ray extra is installed by scripts/bootstrap.sh test")

from scoreaudit import api  # noqa: E402

from probe_testutil import project  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # slow: Ray: a local cluster per test

SPEC = '''audit "Ray pipelines" { seed: 1  bootstrap: 100 }
scorer p = planted(fidelity: 0.5, noise: 0.1)
scorer pick = pickscore(prompt: "a portrait photo")
arm gen = generate("sd", prompts: "prompts.txt", seeds: 2, steps: 2, guidance: 1.0, size: 32, batch_size: 2,
                   kind: synthetic)
probe q = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 2, seeds: 0..1, size: 32,
               measures: [skin_exposure])
'''
TABLES = ("images", "scores", "probe")


def _run(spec, out, cache, executor):
    api.run(spec, out=out, device="cpu", cache=cache, progress=False, render_report=False, executor=executor)
    return json.loads((out / "run.json").read_text())


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _level_diff(a: bytes, b: bytes) -> int:
    """The largest per-channel difference between two PNGs, in 8-bit levels."""
    import io

    import numpy as np
    from PIL import Image

    return int(np.abs(np.asarray(Image.open(io.BytesIO(a)), dtype=int)
                      - np.asarray(Image.open(io.BytesIO(b)), dtype=int)).max())


def _actor_pids(log: str, what: str) -> list[int]:
    return [int(m) for m in re.findall(rf"executor ray: {what}: pipeline actor pid (\d+) on node \w+ \(0 GPU\)", log)]


def test_generation_and_probes_run_in_pipeline_actors_with_the_local_results(tmp_path):
    import ray

    spec = project(tmp_path, SPEC, prompts=("a photo of a nurse", "a photo of a pilot"))
    local, remote = tmp_path / "local", tmp_path / "ray"
    _run(spec, local, tmp_path / "l.sqlite", "local")
    run = _run(spec, remote, tmp_path / "r.sqlite", "ray")
    assert not ray.is_initialized()  # the run started a local Ray instance and stopped it
    log = (remote / "run.log").read_text()
    for what in ("generate gen", "probe q"):  # the work ran in an actor process, not in this one
        pids = _actor_pids(log, what)
        assert len(pids) == 1 and pids[0] != os.getpid(), (what, log[:2000])
    assert run["generated"]["gen"]["generated"] == 4 and run["probes"]["q"]["optimised"] == 4
    # the same images, trajectories and tables as the local executor
    assert _files(remote / "generated") == _files(local / "generated")
    assert _files(remote / "probes") == _files(local / "probes")
    assert _files(tmp_path / "r.sqlite.generated") == _files(tmp_path / "l.sqlite.generated")
    assert _files(tmp_path / "r.sqlite.probes") == _files(tmp_path / "l.sqlite.probes")
    for t in TABLES:
        pd.testing.assert_frame_equal(pd.read_parquet(remote / "tables" / f"{t}.parquet"),
                                      pd.read_parquet(local / "tables" / f"{t}.parquet"))
    assert run["scorers"]["pick"]["weights_sha256"] is not None  # recorded from the actor's scorer
    assert run["scorers"]["pick"] == json.loads((local / "run.json").read_text())["scorers"]["pick"]

    # resume: one image and one trajectory are missing from the store (as after a kill); a Ray run makes
    # exactly those, in its actors, and leaves every other stored file as it was
    gen_store, probe_store = tmp_path / "r.sqlite.generated", tmp_path / "r.sqlite.probes"
    png = sorted(gen_store.rglob("*.png"))[1]
    png.unlink()
    victim = sorted(d for d in probe_store.glob("*/*") if (d / "trace.json").is_file())[2]
    partial = victim.with_name(f".{victim.name}.999999.tmp")
    victim.rename(partial)
    (partial / "trace.json").unlink()
    kept = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in [*gen_store.rglob("*.png"),
                                                                   *probe_store.glob("*/*/*")] if p.is_file()}
    again = _run(spec, tmp_path / "again", tmp_path / "r.sqlite", "ray")
    assert again["generated"]["gen"]["generated"] == 1 and again["generated"]["gen"]["reused"] == 3
    assert again["probes"]["q"]["optimised"] == 1 and again["probes"]["q"]["reused"] == 3
    assert all((p.stat().st_mtime_ns, p.read_bytes()) == v for p, v in kept.items())
    made, reference = _files(gen_store), _files(tmp_path / "l.sqlite.generated")
    assert made.keys() == reference.keys()
    name = png.relative_to(gen_store).as_posix()
    assert all(made[k] == reference[k] for k in made if k != name)
    # the remade image ran alone (a batch of 1, the local run's was a batch of 2): batched convolutions
    # may round differently by one level at most (tests/generate/test_generate.py)
    assert _level_diff(made[name], reference[name]) <= 1
    for t in TABLES:  # the remade image's content hash is its own; everything else agrees
        again_t, local_t = (pd.read_parquet(d / "tables" / f"{t}.parquet") for d in (tmp_path / "again", local))
        hashes = [c for c in again_t.columns if c.endswith("hash")]
        assert sum((again_t[c] != local_t[c]).sum() for c in hashes) <= 1
        pd.testing.assert_frame_equal(again_t.drop(columns=hashes), local_t.drop(columns=hashes), rtol=1e-3)
    # everything in the store: no pipeline actor starts at all
    third = _run(spec, tmp_path / "third", tmp_path / "r.sqlite", "ray")
    assert third["generated"]["gen"]["generated"] == 0 and third["probes"]["q"]["optimised"] == 0
    assert "pipeline actor" not in (tmp_path / "third" / "run.log").read_text()


def test_pipeline_actors_ask_for_gpu_shares_on_a_cuda_run(tmp_path):
    """A local Ray declaring one (fake) GPU: a generation actor takes the whole GPU (it runs alone); a
    probe actor is counted with the scorer actors, so together with the batch tasks they fit on it.
    Nothing is loaded (only the actors' `where`)."""
    import ray

    from scoreaudit.runtime import ray_backend as rb
    from scoreaudit.runtime.ray_pipelines import RayConnection
    from scoreaudit.runtime.progress import Progress
    from scoreaudit.runtime.runlog import RunLog
    from scoreaudit.runtime.steps import RunContext
    from scoreaudit.runtime.tables import Tables

    spec = project(tmp_path, SPEC)
    ir, _ = api.compile(spec)
    ray.init(address="local", num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False,
             configure_logging=False, object_store_memory=100 * 1024 * 1024)
    try:
        conn = RayConnection()
        gen = conn.generation_actor("gen", dict(ir.arms["gen"].call.params), tmp_path / "sd", "cuda", "float16")
        assert ray.get(gen.where.remote())["gpus"] == pytest.approx(1.0)
        assert "(1 GPU)" in conn.notes[-1]
        conn.release_generators()
        ctx = RunContext(ir=ir, cache=None, log=RunLog(tmp_path / "run.log"), tables=Tables(),
                         progress=Progress(False), device="cuda", spec_dir=tmp_path)
        backend = rb.RayBackend(ctx, tmp_path / "cache.sqlite", connection=conn)
        assert backend.n_probe_actors() == 1
        opts = backend.probe_options()
        # one model scorer (pick) and one probe pipeline share the room the batch tasks leave
        assert opts["num_gpus"] == rb.gpu_requests("cuda", 1, 2, True)[0] == 0.4
        actor = conn.pipeline_actor(opts, "q", dict(ir.probes["q"].call.params), tmp_path / "sd", "cuda",
                                    "float16")
        assert ray.get(actor.where.remote())["gpus"] == pytest.approx(0.4)
        ray.kill(actor)
        backend.close()
        assert ray.is_initialized()  # the connection was not the backend's, nor did it start Ray
        conn.close()
    finally:
        ray.shutdown()
    # a CPU run asks for no GPU
    assert rb.gpu_requests("cpu", 1, 2, True) == (0.0, 0.0)


def test_a_pipeline_that_cannot_load_in_its_actor_is_the_local_error(tmp_path):
    """The actor's error reaches the user as the local run's (exit 3, one line), and Ray is stopped."""
    import ray

    from scoreaudit.runtime.generation import GenerationUnavailable

    spec = project(tmp_path, SPEC.split("probe q")[0])
    (tmp_path / "sd" / "unet" / "config.json").write_text("{not json")
    with pytest.raises(GenerationUnavailable, match="cannot load pipeline 'sd'") as err:
        _run(spec, tmp_path / "out", tmp_path / "c.sqlite", "ray")
    assert type(err.value) is GenerationUnavailable  # not Ray's wrapper
    assert not ray.is_initialized()
