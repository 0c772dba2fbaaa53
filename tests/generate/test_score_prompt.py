"""A generated arm's `score_prompt:` (issue 32): the prompt its images are scored with, so a text-image
scorer need not read the factor words ("man"/"woman") it is audited on. Default: the generation prompt."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from scoreaudit import api
from scoreaudit.runtime.generation import images_arm
from scoreaudit.runtime.manifests import load_manifest
from scoreaudit.testing.tiny_diffusion import save_tiny_sd

TEMPLATE = 'template("a portrait photo of a {gender} {job}", gender: ["man", "woman"], job: ["nurse", "chef"])'
SPEC = '''audit "Scored prompts" {{ seed: 1 }}
scorer p = planted(fidelity: 0.5, noise: 0.1)
arm gen = generate("pipe", prompts: {template}, seeds: [0], steps: 1, guidance: 1.0, size: 32{extra})
hypothesis H "x" {{
  abs(group_gap(gender, "man", "woman")) < 5.0 on gen for each scorer
}}
'''


def _check(extra: str):
    return api.check("gen.audit", source=SPEC.format(template=TEMPLATE, extra=extra), tables=False)


def test_score_prompt_placeholders_must_be_template_factors():
    ok = _check(', score_prompt: "a portrait photo of a {job}"')
    assert ok.ok, [d.message for d in ok.diagnostics]
    assert ok.ir.arms["gen"].call.params["score_prompt"] == "a portrait photo of a {job}"
    bad = _check(', score_prompt: "a portrait photo of a {race} {job}"')
    (d,) = [d for d in bad.diagnostics if d.code == "E0851"]
    assert "`{race}`" in d.message and "gender, job" in d.help
    src = SPEC.format(template=TEMPLATE, extra=', score_prompt: "a portrait photo of a {race} {job}"')
    assert src[d.span.start:d.span.end] == '"a portrait photo of a {race} {job}"'  # located at the text
    assert not _check(', score_prompt: "a {job"').ok  # malformed braces


@pytest.mark.parametrize("extra, want", [
    ("", lambda g, j: f"a portrait photo of a {g} {j}"),  # the default: the generation prompt
    (', score_prompt: "a portrait photo of a {job}"', lambda g, j: f"a portrait photo of a {j}"),
    (', score_prompt: "a portrait photo"', lambda g, j: "a portrait photo"),
])
def test_generated_images_are_scored_with_the_declared_prompt(tmp_path, monkeypatch, extra, want):
    pytest.importorskip("diffusers")
    pipe = save_tiny_sd(tmp_path / "models" / "pipe", seed=3)
    monkeypatch.setenv("SCOREAUDIT_MODELS", str(pipe.parent))
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "pipe").symlink_to(pipe, target_is_directory=True)
    spec = proj / "gen.audit"
    spec.write_text(SPEC.format(template=TEMPLATE, extra=extra))
    out = tmp_path / "out"
    api.run(spec, out=out, device="cpu", cache=tmp_path / "c.sqlite", progress=False, render_report=False)
    dest = out / "generated" / "gen"
    with (dest / "manifest.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 4
    for r in rows:  # the generation prompt is still recorded as such
        assert r["prompt"] == f"a portrait photo of a {r['gender']} {r['job']}"
    # what the scorers read: the images arm's prompt column (runtime/scoring.py ScorerSlot.prompt_for)
    ir, _ = api.compile(spec)
    res = load_manifest(images_arm(ir.arms["gen"], dest), proj)
    assert res.ok and len(res.records) == 4
    by_id = {r["id"]: r for r in rows}
    for rec in res.records:
        row = by_id[rec.image_id]
        assert rec.prompt == want(row["gender"], row["job"])
