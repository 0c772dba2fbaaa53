"""`plan --cache` reads the generation store: images in it count as cached, missing ones as to run."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("diffusers")

from scoreaudit import api, cli  # noqa: E402
from scoreaudit.testing.tiny_diffusion import save_tiny_sd  # noqa: E402

SPEC = '''audit "Generated" { seed: 1 }
scorer p = planted(fidelity: 0.5, noise: 0.1)
arm gen = generate("pipe", prompts: "prompts.txt", seeds: 2, steps: 2, guidance: 1.0, size: 32, kind: synthetic)
'''


def test_plan_cache_counts_generated_images_in_the_store(tmp_path, capsys):
    save_tiny_sd(tmp_path / "pipe", seed=3)
    (tmp_path / "prompts.txt").write_text("a red car\na blue house\n")
    spec = tmp_path / "gen.audit"
    spec.write_text(SPEC)
    cache = tmp_path / ".scoreaudit" / "cache.sqlite"
    api.run(spec, out=tmp_path / "out", device="cpu", cache=cache, progress=False, render_report=False)
    ir, plan = api.compile(spec)
    status = api.cache_status(ir, plan, spec_path=spec, cache_path=cache)
    assert status["generated"] == {"gen": [4, 4]} and status["steps"]["generate/gen"] == "cached"
    assert status["steps"]["decode/gen"] == "to run"  # memos follow each run's copies of the images
    # one image gone from the store: the generate step runs again (for that image)
    store = cache.with_name(cache.name + ".generated")
    pngs = sorted(store.rglob("*.png"))
    assert len(pngs) == 4
    pngs[0].unlink()
    status = api.cache_status(ir, plan, spec_path=spec, cache_path=cache)
    assert status["generated"] == {"gen": [3, 4]} and status["steps"]["generate/gen"] == "to run"
    # the command line: text and JSON (the default cache beside the spec)
    assert cli.main(["plan", str(spec), "--cache"]) == 0
    text = capsys.readouterr().out
    assert "generated images in the store: gen 3/4" in text
    assert "generate/gen" in text and "(to run)" in text.split("generate/gen")[1].splitlines()[0]
    assert cli.main(["plan", str(spec), "--cache", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cache"]["generated"] == {"gen": [3, 4]}
    # a pipeline that is not here: unknown, to run (no error)
    (tmp_path / "pipe" / "model_index.json").unlink()
    status = api.cache_status(ir, plan, spec_path=spec, cache_path=cache)
    assert status["generated"] == {"gen": [0, None]} and status["steps"]["generate/gen"] == "to run"
