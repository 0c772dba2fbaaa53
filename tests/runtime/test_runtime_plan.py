"""The plan is what runs: every row the executor writes belongs to a plan step, and plugin facts
come from registry metadata (a data-reading scorer is not recognised by its name)."""

from __future__ import annotations

import pandas as pd

import pytest

from runtime_helpers import call, hypothesis, make_images, make_ir, fake_log  # noqa: F401 (fixture)
from scoreaudit import api
from scoreaudit.compiler.ir import ORIGINAL, OperatorIR
from scoreaudit.compiler.plan import ArmStage, arm_work, build_plan, walk
from scoreaudit.registry import Params, scorers
from scoreaudit.runtime.executor import execute


def test_every_row_belongs_to_a_plan_step_and_the_plan_limits_the_work(tmp_path, fake_log):
    spec = make_images(tmp_path)
    ir = make_ir()
    plan = build_plan(ir, tmp_path)
    ids = {s.id for s in plan.steps}
    execute(ir, plan, spec_path=spec, out_dir=tmp_path / "out", progress=False)
    scores = pd.read_parquet(tmp_path / "out" / "tables" / "scores.parquet")
    measures = pd.read_parquet(tmp_path / "out" / "tables" / "measures.parquet")
    assert {f"score/{a}/{s}/{o}" for a, s, o in zip(scores["arm"], scores["scorer"], scores["operator"])} <= ids
    assert {f"measure/{a}/{o}/{n}" for a, o, n in zip(measures["arm"], measures["operator"], measures["name"])} <= ids
    assert set(scores["operator"]) == {ORIGINAL, "light", "light_p"}

    # a plan without the placebo's steps runs no placebo: the executor reads the plan, not the IR
    trimmed = plan.model_copy(update={"steps": [s for s in plan.steps if "light_p" not in s.id]})
    assert arm_work(trimmed)["a"].operators == ("light",)
    execute(ir, trimmed, spec_path=spec, out_dir=tmp_path / "out2", progress=False)
    scores2 = pd.read_parquet(tmp_path / "out2" / "tables" / "scores.parquet")
    assert set(scores2["operator"]) == {ORIGINAL, "light"}


def test_the_walk_hands_every_step_to_its_handler_once_in_plan_order(tmp_path, fake_log):
    plan = build_plan(make_ir(hypotheses=(hypothesis(),)), tmp_path)
    seen = []
    walk(plan, {"arm": seen.append, "generate": None, "select": None, "statistic": seen.append,
                "report": seen.append})
    ids = [s.id for u in seen for s in (u.steps if isinstance(u, ArmStage) else (u,))]
    assert sorted(ids) == sorted(s.id for s in plan.steps) and len(ids) == len(set(ids))
    stage = seen[0]
    assert isinstance(stage, ArmStage) and stage.arm == "a" and stage.steps[0].id == "decode/a"
    assert stage.operators == ("light", "light_p") and stage.scorers == ("s",) and stage.regions == ("all",)
    assert [u.kind for u in seen[1:]] == ["statistic", "report"]
    assert stage.keys == tuple(sorted(s.key for s in plan.steps if s.arm == "a" and s.kind != "statistic"))
    with pytest.raises(KeyError, match="report"):  # a kind nobody handles is an error, never skipped silently
        walk(plan, {"arm": None, "generate": None, "select": None, "statistic": None})


class _Col(Params):
    column: str | None = None


class _FromColumn:
    """Scores read from a manifest column (a third-party `precomputed`)."""

    def __init__(self, params, device="cpu", precision="auto"):
        self.params = params


def test_reads_data_is_a_registry_fact_not_a_name(tmp_path):
    scorers.register("zz_column_scores", params=_Col, version="1", reads_data=True, data_params=("column",),
                     uses_item=True)(_FromColumn)
    try:
        (tmp_path / "m.csv").write_text("id,path,s\na,a.png,1\nb,b.png,2\n")
        spec = tmp_path / "p.audit"
        spec.write_text('audit "p" { version: 1 }\nscorer given = zz_column_scores(column: s)\n'
                        'scorer sharp = sharpness()\narm a = images("imgs", manifest: "m.csv", kind: synthetic)\n'
                        'operator light = lab_shift(channel: L) doses -5, 0, 5\n'
                        'hypothesis H1 "h" { fidelity_index(light) > 0 on a for each scorer }\n')
        checked = api.check(spec, tables=False)
        plan = build_plan(checked.ir, base_dir=tmp_path)
        assert plan.forward_passes == {"given": 0, "sharp": 2 * 3}
    finally:
        scorers._entries.pop("zz_column_scores", None)


def test_plan_cache_counts_cached_and_to_run_steps(tmp_path, fake_log):
    from PIL import Image

    from scoreaudit.compiler.plan import render_plan
    from scoreaudit.runtime.cache_status import cache_status

    spec = make_images(tmp_path)
    ir = make_ir()
    plan = build_plan(ir, tmp_path)
    assert cache_status(ir, plan, spec_path=spec) is None  # no cache yet
    execute(ir, plan, spec_path=spec, out_dir=tmp_path / "out", progress=False)
    status = cache_status(ir, plan, spec_path=spec)
    assert status["images"] == {"a": [6, 6]}
    per_image = {s.id for s in plan.steps if s.kind in ("decode", "region", "operator", "measure", "score")}
    assert {i for i, v in status["steps"].items() if v == "cached"} == per_image
    text = render_plan(plan, status)
    assert f"cache: {len(per_image)} steps cached, {len(plan.steps) - len(per_image)} to run" in text
    assert "a 6/6" in text

    img = tmp_path / "data" / "imgs" / "r1.png"
    Image.fromarray(255 - __import__("numpy").asarray(Image.open(img))).save(img)
    status = cache_status(ir, plan, spec_path=spec)
    assert status["images"] == {"a": [5, 6]} and set(status["steps"].values()) == {"to run"}
