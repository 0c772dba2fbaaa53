"""The normative examples check clean; their IR and plan JSON are pinned by goldens."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scoreaudit import api
from scoreaudit.compiler.plan import build_plan, render_plan

from compiler_testutil import EXAMPLES, ROOT, golden

GOLDEN = ROOT / "tests" / "compiler" / "golden"
NORMATIVE = ["skin_tone", "body_warp", "cross_image", "comparisons"]


def _checked(name):
    path = ROOT / "examples" / f"{name}.audit"
    source = path.read_text(encoding="utf-8")
    # a relative path keeps goldens independent of the checkout location
    return api.check(f"examples/{name}.audit", source=source, tables=False)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_check_clean(path):
    # comparisons.audit reads generated precomputed tables at check time; with its data it is checked by
    # tests/e2e_precomputed/test_comparisons_example.py
    checked = api.check(path, tables=path.stem != "comparisons")
    assert checked.ok, [d.message for d in checked.diagnostics]
    assert not checked.diagnostics  # not even warnings


@pytest.mark.parametrize("name", NORMATIVE)
def test_ir_golden(name):
    c = _checked(name)
    golden(GOLDEN / f"{name}.ir.json", json.dumps(c.ir.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")


@pytest.mark.parametrize("name", NORMATIVE)
def test_plan_golden(name):
    c = _checked(name)
    plan = build_plan(c.ir, base_dir=ROOT / "tests" / "compiler" / "no_data")
    golden(GOLDEN / f"{name}.plan.json", plan.model_dump_json(indent=2) + "\n")


def test_skin_tone_cells():
    ir = _checked("skin_tone").ir
    cells = {c.id: c for c in ir.cells()}
    assert len(cells) == 4 * 2 + 4 * 5  # H1 on two arms, H2..H6 on one (H4 cross-arm)
    h1 = cells["H1/laion/real"]
    assert h1.test.kind == "greater" and h1.test.threshold == 0 and h1.test.strict
    assert h1.axis == ("ita", "light")
    h2 = cells["H2/pick/real"]
    assert (h2.test.kind, h2.test.low, h2.test.high) == ("equivalence", -0.05, 0.05)
    h3 = cells["H3/ir/real"]
    assert (h3.test.low, h3.test.high) == (0.5, 2.0)
    h4 = cells["H4/hps/synthetic->real"]
    assert h4.arm is None and h4.arms == ("synthetic", "real") and h4.test.kind == "claim"
    assert h4.statistic.inner.name == "asymmetry"
    assert cells["H5/laion/real"].axis == ("ita", "light")  # via the selection `under light by ita`
    assert [s for s in ir.scorers] == ["laion", "pick", "ir", "hps"]  # declaration order
    hue = ir.operators["hue"]
    assert hue.doses == (-20.0, -10.0, 0.0, 10.0, 20.0) and hue.symmetric
    assert ir.operators["blur"].symmetric is False
    assert ir.operators["light_rest"].placebo_of == "light"
    assert ir.operators["light_rest"].doses == ir.operators["light"].doses
    assert ir.regions["rest"].depends_on == ("skin",)
    assert ir.settings.bootstrap == 10000 and ir.report.formats == ("html", "pdf")


def test_cross_image_values():
    ir = _checked("cross_image").ir
    assert ir.scorers["pick"].call.params["prompt"] == {"column": "prompt"}
    c1 = ir.hypotheses[0].cells[0]
    assert c1.statistic.params == {"factor": "race", "model": "race * gender"}
    assert ir.arms["cf"].factors == ("race", "gender") and ir.arms["wide"].source == "pairs"
    a1 = ir.hypotheses[2].cells[0]
    assert a1.statistic.params["column"] == "human_rating" and a1.statistic.params["x"] == "score"


def test_forward_passes_counts_manifest_rows(tmp_path):
    spec = (ROOT / "examples" / "body_warp.audit").read_text()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "bodies.csv").write_text(
        "id,path,base_id,torso_mask\n" + "".join(f"{i},{i}.png,b{i},m{i}.png\n" for i in range(7)))
    (tmp_path / "b.audit").write_text(spec)
    c = api.check(tmp_path / "b.audit")
    plan = build_plan(c.ir)
    # 5 doses, identity counted once: 7 images × (1 + 4)
    assert plan.images == {"bodies": 7}
    assert plan.forward_passes == {"laion": 35}
    assert "laion: 35" in render_plan(plan)
    unknown = build_plan(c.ir, base_dir=tmp_path / "nowhere")
    assert unknown.forward_passes == {"laion": None}
    assert "?" in render_plan(unknown) and "5·n(bodies)" in render_plan(unknown)
    assert unknown.fingerprint == plan.fingerprint  # counts never enter keys


def test_keys_change_only_downstream():
    src = (ROOT / "examples" / "skin_tone.audit").read_text()
    a = build_plan(api.check("s.audit", source=src).ir)
    b = build_plan(api.check("s.audit", source=src.replace("< 0.05 on real", "< 0.06 on real")).ir)
    ka, kb = {s.id: s.key for s in a.steps}, {s.id: s.key for s in b.steps}
    changed = {i for i in ka if ka[i] != kb[i]}
    assert changed == {f"statistic/H2/{s}/real" for s in ("laion", "pick", "ir", "hps")} | {"report"}
    c = build_plan(api.check("s.audit", source=src.replace("doses 0, 1, 2, 4", "doses 0, 1, 2, 3")).ir)
    kc = {s.id: s.key for s in c.steps}
    changed = {i for i in ka if ka[i] != kc[i]}
    assert "operator/real/blur" in changed and "score/real/laion/blur" in changed
    assert "score/real/laion/light" not in changed and "operator/real/light" not in changed


def test_fingerprint_stable_across_processes():
    code = ("from scoreaudit import api; from scoreaudit.compiler.plan import build_plan;"
            "print(build_plan(api.check('examples/skin_tone.audit').ir).fingerprint)")
    outs = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                           env={"PYTHONHASHSEED": str(seed), "PATH": ""}).stdout for seed in (1, 2)}
    assert len(outs) == 1 and len(outs.pop().strip()) == 64


def test_plan_schema_file_is_current():
    from scoreaudit.compiler.plan import plan_schema

    on_disk = json.loads((ROOT / "spec" / "plan.schema.json").read_text())
    assert on_disk == plan_schema(), "spec/plan.schema.json is stale: python -m scoreaudit.compiler.docs"


def test_plan_dag_is_topological():
    plan = build_plan(_checked("skin_tone").ir)
    seen = set()
    for s in plan.steps:
        assert set(s.depends_on) <= seen, s.id
        seen.add(s.id)
    assert len(seen) == len(plan.steps)
