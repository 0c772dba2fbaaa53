"""The statistics compute the cells of the plan's statistic steps (issue 26: the plan is what runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoreaudit.compiler.plan import ExecutionPlan, build_plan, cells_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["skin_tone", "body_warp", "cross_image", "comparisons", "demo", "benchmark",
                                  "generated"])
def test_the_plans_statistic_steps_carry_every_cell_whole(name):
    from scoreaudit.api import check

    checked = check(ROOT / "examples" / f"{name}.audit", tables=False, environment=False)
    assert checked.ir is not None, [d.message for d in checked.diagnostics if d.is_error]
    plan = build_plan(checked.ir)
    # through plan.json, as the bundle holds it
    again = ExecutionPlan.model_validate(json.loads(plan.model_dump_json()))
    assert cells_of(again) == checked.ir.cells()


def test_a_stratum_claim_keeps_its_where_through_the_plan(tmp_path):
    from scoreaudit.api import check

    spec = tmp_path / "a.audit"
    spec.write_text('audit "t" { version: 1 }\nscorer s = sharpness()\n'
                    'arm a = images("d", manifest: "d.csv", strata: race)\n'
                    'operator light = lab_shift(channel: L) doses -5, 0, 5\n'
                    'hypothesis H "t" {\n  fidelity_index(light) where race = "B" > 0 on a for s\n}\n')
    checked = check(spec, tables=False, environment=False)
    plan = build_plan(checked.ir)
    (cell,) = cells_of(plan)
    assert cell.where == (("race", "B"),) and cell == checked.ir.cells()[0]


def test_analyse_evaluates_the_plans_cells_only(tmp_path, monkeypatch):
    """A bundle whose plan.json lacks a cell's statistic step has no such cell in results.json."""
    from scoreaudit import cli
    from scoreaudit.stats.engine import analyse
    import numpy as np
    import pandas as pd

    (tmp_path / "data").mkdir()
    rng = np.random.default_rng(0)
    pd.DataFrame({"id": [f"i{k}" for k in range(30)], "path": [f"i{k}.png" for k in range(30)],
                  "s": rng.normal(size=30), "r": rng.normal(size=30), "t": rng.normal(size=30)}).to_csv(
        tmp_path / "data" / "m.csv", index=False)
    (tmp_path / "a.audit").write_text(
        'audit "t" { version: 1 bootstrap: 200 }\nscorer s = precomputed(column: s)\n'
        'arm a = images("data/img", manifest: "data/m.csv")\n'
        'hypothesis A "r" {\n  spearman(column: r) within [-1, 1] on a for s\n}\n'
        'hypothesis B "t" {\n  spearman(column: t) within [-1, 1] on a for s\n}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "a.audit", "--out", "out", "--device", "cpu", "--quiet"]) == 0
    bundle = tmp_path / "out"
    assert {c["id"] for c in json.loads((bundle / "results.json").read_text())["cells"]} == {"A/s/a", "B/s/a"}
    plan = json.loads((bundle / "plan.json").read_text())
    plan["steps"] = [s for s in plan["steps"] if s["id"] != "statistic/B/s/a"]
    (bundle / "plan.json").write_text(json.dumps(plan))
    res = analyse(bundle, progress=False)
    assert [c["id"] for c in res["cells"]] == ["A/s/a"]
