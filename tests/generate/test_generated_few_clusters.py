"""W0421 on a generated arm: `check` warns where `run` will (issue 26), with the run's cluster count.

A template's prompts of one seed are one counterfactual set, so a template arm
has one cluster per seed; a prompts file has one cluster per prompt. Both are
known before anything is generated. Before, only `run` warned.
"""

from __future__ import annotations

import json

import pytest

from scoreaudit import api

pytest.importorskip("diffusers")

from scoreaudit.testing.tiny_diffusion import save_tiny_sd  # noqa: E402

SPEC = '''audit "Few clusters" {{ version: 1 seed: 1 scale: sd bootstrap: 200 }}
scorer p = planted(fidelity: 0.5, noise: 0.1)
arm gen = generate("pipe", prompts: {prompts}, seeds: {seeds}, steps: 2, guidance: 1.0, size: 32, kind: synthetic)
operator blur = gaussian_blur() doses 0, 1, 2
hypothesis H "x" {{
  {claim} on gen for each scorer
}}
'''
CASES = {
    "template": ('template("a portrait photo of a {gender} {job}", gender: ["man", "woman"], job: ["nurse", "doctor"])',
                 "[0, 1, 2]", 'abs(group_gap(gender, "man", "woman")) < 5.0', 3),
    "prompts file": ('"prompts.txt"', "[0, 1]", "fidelity_index(blur) > -5", 4),
}


@pytest.fixture(scope="module")
def pipe(tmp_path_factory):
    return save_tiny_sd(tmp_path_factory.mktemp("pipe") / "pipe", seed=3)


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_warns_as_run_does(case, tmp_path, pipe):
    import shutil

    prompts, seeds, claim, clusters = CASES[case]
    shutil.copytree(pipe, tmp_path / "pipe")  # inside the project: pipelines outside it are refused
    (tmp_path / "prompts.txt").write_text("a red car\na blue car\na green car\na white car\n")
    spec = tmp_path / "gen.audit"
    spec.write_text(SPEC.format(prompts=prompts, seeds=seeds, claim=claim), encoding="utf-8")
    checked = api.check(spec)
    assert checked.ok, [d.message for d in checked.diagnostics]
    warned = [d for d in checked.diagnostics if d.code == "W0421"]
    assert len(warned) == 1 and (warned[0].span.line, warned[0].span.column) == (3, 5)
    assert f"has {clusters} clusters" in warned[0].message
    results = api.run(spec, out=tmp_path / "out", progress=False, render_report=False, device="cpu")
    runs = [w for w in results["warnings"] if w["code"] == "W0421"]
    assert [(w["arm"], w["n_clusters"]) for w in runs] == [("gen", clusters)]
    manifest = (tmp_path / "out" / "generated" / "gen" / "manifest.csv").read_text().splitlines()
    assert len({line.split(",")[4] for line in manifest[1:]}) == clusters  # the clusters the run formed
    assert json.loads((tmp_path / "out" / "results.json").read_text())["warnings"] == results["warnings"]
