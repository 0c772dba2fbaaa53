"""examples/generated.audit checks, plans and runs, with a tiny pipeline standing in for SDXL in a fake HF cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from scoreaudit import api
from scoreaudit.testing.tiny_diffusion import save_tiny_sd
from scoreaudit.testing.tiny_models import hf_snapshot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "generated.audit"
REPO = "stabilityai/stable-diffusion-xl-base-1.0"


def test_example_checks_and_plans_as_written():
    checked = api.check(EXAMPLE)
    assert checked.ok and not checked.diagnostics
    _, plan = api.compile(EXAMPLE)
    step = plan.step("generate/gen")
    assert step.images == 2 * 5 * 5 and step.denoising_steps == 50 * 30  # gender × jobs × seeds; × steps


def test_example_runs_on_a_tiny_pipeline_in_the_hf_cache(tmp_path):
    snap = hf_snapshot(Path(os.environ["HF_HUB_CACHE"]), REPO)
    if not (snap / "model_index.json").exists():
        save_tiny_sd(tmp_path / "tiny", seed=5)
        shutil.copytree(tmp_path / "tiny", snap, dirs_exist_ok=True)
    (tmp_path / "prompts").mkdir()
    shutil.copy(ROOT / "examples" / "prompts" / "jobs.csv", tmp_path / "prompts" / "jobs.csv")
    text = EXAMPLE.read_text()
    # the same spec, smaller: 2 seeds, 2 steps, 32 px (the tiny UNet's scale), so it runs on a CPU in seconds
    small = text.replace("seeds: 5, steps: 30, guidance: 7.0, size: 1024", "seeds: 2, steps: 2, guidance: 7.0, size: 32")
    assert small != text
    spec = tmp_path / "generated.audit"
    spec.write_text(small)
    res = api.run(spec, out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=False)
    assert len(list((tmp_path / "out" / "generated" / "gen").glob("*.png"))) == 2 * 5 * 2
    assert {c["hypothesis"] for c in res["cells"]} == {"G1", "G2"}
    assert all("seed_robustness" in c for c in res["cells"])  # two seeds: robustness over generation seeds
    assert (tmp_path / "out" / "report.html").is_file()
