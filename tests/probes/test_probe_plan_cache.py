"""`plan --cache` reads the probe store: finished trajectories count as cached, unfinished as to run."""

from __future__ import annotations

import pytest

pytest.importorskip("diffusers")

from scoreaudit import api  # noqa: E402
from scoreaudit.compiler.plan import render_plan  # noqa: E402

from probe_testutil import project  # noqa: E402

SPEC = '''audit "Probe" { seed: 1 }
scorer pick = pickscore(prompt: "a portrait photo")
probe p = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 1, seeds: 0..1, size: 32,
               measures: [skin_exposure])
'''


def test_plan_cache_counts_finished_trajectories(tmp_path):
    spec = project(tmp_path, SPEC, prompts=("a photo of a nurse",))
    cache = tmp_path / ".scoreaudit" / "cache.sqlite"
    ir, plan = api.compile(spec)
    api.run(spec, out=tmp_path / "out", device="cpu", cache=cache, progress=False, render_report=False)
    status = api.cache_status(ir, plan, spec_path=spec, cache_path=cache)
    assert status["probes"] == {"p": [2, 2]} and status["steps"]["probe/p"] == "cached"
    assert "probe trajectories finished in the store: p 2/2" in render_plan(plan, status)
    # a trajectory a killed run left half-written (its temporary folder) is unfinished
    store = cache.with_name(cache.name + ".probes")
    victim = sorted(d for d in store.glob("*/*") if (d / "trace.json").is_file())[0]
    partial = victim.with_name(f".{victim.name}.999999.tmp")
    victim.rename(partial)
    (partial / "trace.json").unlink()
    status = api.cache_status(ir, plan, spec_path=spec, cache_path=cache)
    assert status["probes"] == {"p": [1, 2]} and status["steps"]["probe/p"] == "to run"
    # another optimisation setting is another key: nothing of it is in the store
    spec.write_text(SPEC.replace("iterations: 1", "iterations: 2"))
    ir2, plan2 = api.compile(spec)
    assert api.cache_status(ir2, plan2, spec_path=spec, cache_path=cache)["probes"] == {"p": [0, 2]}
