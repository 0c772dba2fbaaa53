"""examples/benchmark.audit: the seed paper's two axes in one spec (issue 26), end to end.

Skin lightness on real and synthetic faces and a torso warp on synthetic
bodies, on data from scripts/make_example_data.py and tiny random checkpoints
(offline). Checked: the spec checks clean; the plan runs the skin operator
and the face regions on the face arms only and the warp (whose mask column
only the body manifest has) on the bodies only; the run makes exactly the
forward passes the plan prints; no exclusion is logged; every cell reaches
an outcome.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the models extra is not installed (pip install 'scoreaudit[models]')")
pytest.importorskip("transformers", reason="the models extra is not installed")
pytest.importorskip("open_clip", reason="the models extra is not installed")

from plan_forward import assert_forward_passes_match  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]  # slow: model e2e: whole audits with tiny models

REPO = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("make_example_data", REPO / "scripts" / "make_example_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("benchmark")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(root / "xdg"))
        script = _script()
        models = root / "models"
        script.build_tiny_models(models)
        script.build_skin_tone(root / "data", n_real=8, n_prompts=3)
        script.build_bodies(root / "data", n_bases=3)
        spec = root / "benchmark.audit"
        shutil.copy(REPO / "examples" / "benchmark.audit", spec)
        out = root / "out"
        results = script.run_with_tiny_models(spec, models, out=out, progress=False)
        yield {"root": root, "spec": spec, "out": out, "results": results}


def test_one_spec_plans_both_axes_on_their_own_arms(bench):
    from scoreaudit.api import compile as compile_spec

    _, plan = compile_spec(bench["spec"])
    ops = sorted((s.arm, s.params["operator"]) for s in plan.steps if s.kind == "operator")
    assert ops == [("bodies", "widen"), ("real", "light"), ("synthetic", "light")]
    regions = sorted((s.arm, s.params["region"]) for s in plan.steps if s.kind == "region")
    assert regions == [("bodies", "torso"), ("real", "face"), ("real", "skin"),
                       ("synthetic", "face"), ("synthetic", "skin")]


def test_the_run_makes_the_planned_forward_passes_and_excludes_nothing(bench):
    import pandas as pd

    made = assert_forward_passes_match(bench["spec"], bench["out"])
    assert made["laion"] > 0 and made["pick"] > 0
    excl = pd.read_parquet(bench["out"] / "tables" / "exclusions.parquet")
    assert len(excl) == 0, excl.to_dict("records")[:5]
    scores = pd.read_parquet(bench["out"] / "tables" / "scores.parquet")
    pairs = set(zip(scores["arm"], scores["operator"]))
    assert ("bodies", "light") not in pairs and ("real", "widen") not in pairs


def test_every_cell_reaches_an_outcome(bench):
    cells = bench["results"]["cells"]
    assert {c["hypothesis"] for c in cells} == {"H1", "H2", "H3", "B1"}
    for c in cells:
        assert c["outcome"] in ("supported", "refuted", "inconclusive"), c["id"]
    verdicts = {(v["measure"], v["operator"]) for v in bench["results"]["verdicts"]}
    assert verdicts == {("ita", "light"), ("width", "widen")}
    assert json.loads((bench["out"] / "run.json").read_text())["counts"]["excluded"] == {
        "real": 0, "synthetic": 0, "bodies": 0}
