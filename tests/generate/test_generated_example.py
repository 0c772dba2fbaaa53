"""examples/generated.audit checks, plans and runs, with a tiny pipeline standing in for SDXL in a fake HF cache."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from scoreaudit import api
from scoreaudit.testing.tiny_diffusion import save_tiny_sd
from scoreaudit.testing.tiny_models import build_prompt_scorers, hf_snapshot

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "generated.audit"
REPO = "stabilityai/stable-diffusion-xl-base-1.0"
TURBO = "stabilityai/sdxl-turbo"


def test_example_checks_and_plans_as_written():
    checked = api.check(EXAMPLE)
    assert checked.ok and not checked.diagnostics
    _, plan = api.compile(EXAMPLE)
    step = plan.step("generate/gen")
    assert step.images == 2 * 5 * 20 and step.denoising_steps == 200 * 30  # gender × jobs × seeds; × steps
    # the decode step reads what generation wrote (was "manifest:None": a generated arm has no manifest)
    assert plan.step("decode/gen").reads == ("generated/gen",) == step.writes
    assert "manifest:" not in api.plan_text(plan)
    probe = checked.ir.probes["reno_ir"]
    assert probe.scorer == "ir" and probe.measures == ("ita", "skin_exposure")
    assert probe.call.params["seeds"] == [0, 1, 2, 3] and probe.call.params["iterations"] == 50
    assert [c.id for c in checked.ir.cells() if c.hypothesis == "P1"] == ["P1/ir/reno_ir"]
    pstep = plan.step("probe/reno_ir")
    assert pstep.images == 8 * 4 * 51 and pstep.forward_passes == pstep.images  # prompts × seeds × (50 + 1)
    assert "probe/reno_ir" in plan.step("statistic/P1/ir/reno_ir").depends_on
    text = api.plan_text(plan)
    assert "reno_ir: 32 trajectories × 50 iterations, 1632 images, scorer ir" in text
    # P2: the λ = +1 and λ = −1 probes compared, one cell that waits for both probes
    assert checked.ir.probes["reno_ir_min"].call.params["direction"] == "minimize"
    assert [c.id for c in checked.ir.cells() if c.hypothesis == "P2"] == ["P2/ir/reno_ir:reno_ir_min"]
    p2 = plan.step("statistic/P2/ir/reno_ir:reno_ir_min")
    assert {"probe/reno_ir", "probe/reno_ir_min"} <= set(p2.depends_on)
    assert p2.params["pairing"] == "paired: probes reno_ir and reno_ir_min read the same prompts"


def test_example_runs_on_a_tiny_pipeline_in_the_hf_cache(tmp_path):
    cache = Path(os.environ["HF_HUB_CACHE"])
    for repo in (REPO, TURBO):  # tiny SD pipelines stand in for SDXL and SDXL-Turbo
        snap = hf_snapshot(cache, repo)
        if not (snap / "model_index.json").exists():
            save_tiny_sd(tmp_path / "tiny", seed=5)
            shutil.copytree(tmp_path / "tiny", snap, dirs_exist_ok=True)
    build_prompt_scorers(cache, seed=4)  # a tiny ImageReward for `ir`
    (tmp_path / "prompts").mkdir()
    shutil.copy(ROOT / "examples" / "prompts" / "jobs.csv", tmp_path / "prompts" / "jobs.csv")
    (tmp_path / "prompts" / "neutral_prompts.csv").write_text("prompt\na photo of a person\na photo of a nurse\n")
    text = EXAMPLE.read_text()
    # the same spec, smaller: 2 seeds, 2 steps, 32 px (the tiny UNet's scale), so it runs on a CPU in seconds
    small = text.replace("seeds: 0..19, steps: 30, guidance: 7.0, size: 1024", "seeds: 0..1, steps: 2, guidance: 7.0, size: 32")
    for d in ("maximize", "minimize"):
        small = small.replace(f"iterations: 50, lr: 5.0, direction: {d}, seeds: 0..3",
                              f"iterations: 2, lr: 5.0, direction: {d}, seeds: 0..1, size: 32")
    assert small.count("size: 32") == 3
    spec = tmp_path / "generated.audit"
    spec.write_text(small)
    res = api.run(spec, out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=False)
    from plan_forward import assert_forward_passes_match  # issue 26: the plan's count is the run's

    assert_forward_passes_match(spec, tmp_path / "out")
    assert len(list((tmp_path / "out" / "generated" / "gen").glob("*.png"))) == 2 * 5 * 2
    assert {c["hypothesis"] for c in res["cells"]} == {"G1", "G2", "P1", "P2"}
    gen_cells = [c for c in res["cells"] if c["hypothesis"] not in ("P1", "P2")]
    assert all("seed_robustness" in c for c in gen_cells)  # two seeds: robustness over generation seeds
    # a template arm's seed is one cluster: each seed is still estimated (its images as clusters)
    assert all(p["estimate"] is not None for c in gen_cells for p in c["seed_robustness"]["per_seed"])
    assert all(c["seed_robustness"]["same_sign_rate"] is not None for c in gen_cells)
    p1 = next(c for c in res["cells"] if c["hypothesis"] == "P1")
    assert p1["statistic"] == "probe_drift" and p1["outcome"] in ("supported", "refuted", "inconclusive")
    p2 = next(c for c in res["cells"] if c["hypothesis"] == "P2")  # two prompts: the paired t on their differences
    assert p2["statistic"] == "difference" and p2["detail"]["test"] == "paired t" and p2["detail"]["paired"]
    assert [r["probe"] for r in p2["detail"]["readings"]] == ["reno_ir", "reno_ir_min"]
    # first and last image of each trajectory (keep: ends); the store holds every iteration
    assert len(list((tmp_path / "out" / "probes" / "reno_ir").glob("p*_s*/it*.png"))) == 2 * 2 * 2
    assert (tmp_path / "out" / "report.html").is_file()
    # the plan's cost of generation and of each probe, in results.json and the report's appendix
    plan = res["plan"]
    assert plan["generation"] == {"gen": {"images": 20, "denoising_steps": 40}}  # 2 × 5 × 2 images × 2 steps
    assert plan["probes"]["reno_ir"] == {"scorer": "ir", "images": 2 * 2 * 3, "forward_passes": 12,
                                         "denoising_steps": 12}  # prompts × seeds × (iterations + 1)
    html = (tmp_path / "out" / "report.html").read_text()
    assert "generated: gen</th><td>20 images, 40 denoising steps" in html
    assert "probe: reno_ir_min</th><td>12 images, 12 passes of ir" in html
    assert html.count("Over 2 generation seeds: same sign as the estimate in ") == len(gen_cells)
    import json

    from jsonschema import Draft202012Validator

    schema = json.loads((ROOT / "spec" / "results.schema.json").read_text())
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert not [e.message for e in Draft202012Validator(schema).iter_errors(results)]
