"""The report says which prompt a generated arm's images were scored with (issue 28; spec/generation.md):
the generation prompt by default, else the arm's score_prompt, naming the factors it leaves out, with one
image's two prompts from the arm's manifest in the bundle."""

from __future__ import annotations

import csv
import html
import json
import re
import shutil

import pytest

from scoreaudit import api
from scoreaudit.reports.render import render

TEMPLATE = 'template("a portrait photo of a {gender} {job}", gender: ["man", "woman"], job: ["nurse", "chef"])'
SPEC = '''audit "Scored prompts" {{ seed: 1 }}
scorer p = planted(fidelity: 0.5, noise: 0.1)
arm gen = generate("pipe", prompts: {template}, seeds: [0], steps: 1, guidance: 1.0, size: 32{extra})
hypothesis H "x" {{
  abs(group_gap(gender, "man", "woman")) < 5.0 on gen for each scorer
}}
'''


def _bundle_with_generated_arm(bundles, tmp_path, extra: str, manifest_rows=None):
    """The skin-tone fixture bundle with the compiled generated arm added to its IR (and, optionally, the
    manifest the run writes for it)."""
    checked = api.check("gen.audit", source=SPEC.format(template=TEMPLATE, extra=extra), tables=False)
    assert checked.ok, [d.message for d in checked.diagnostics]
    d = tmp_path / "b"
    shutil.copytree(bundles["skin_tone"], d)
    ir = json.loads((d / "ir.json").read_text())
    ir.setdefault("arms", {})["gen"] = json.loads(checked.ir.arms["gen"].model_dump_json())
    (d / "ir.json").write_text(json.dumps(ir))
    if manifest_rows:
        (d / "generated" / "gen").mkdir(parents=True)
        with (d / "generated" / "gen" / "manifest.csv").open("w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(manifest_rows[0]))
            w.writeheader()
            w.writerows(manifest_rows)
    render(d, formats=["html"])
    page = (d / "report.html").read_text()
    box = re.search(r'<section id="preregistration".*?</section>', page, re.S).group(0)
    lines = [html.unescape(re.sub(r"<[^>]+>", "", m)) for m in re.findall(r'<p class="small generated-arm">(.*?)</p>', box, re.S)]
    return lines


def test_a_declared_score_prompt_is_stated_with_what_it_leaves_out(bundles, tmp_path):
    rows = [{"id": "p0000_s0", "path": "p0000_s0.png", "cluster": "p0000", "gender": "man", "job": "nurse",
             "prompt": "a portrait photo of a man nurse", "score_prompt": "a portrait photo of a nurse"}]
    (line,) = _bundle_with_generated_arm(bundles, tmp_path, ', score_prompt: "a portrait photo of a {job}"', rows)
    assert "generated from the template \u201ca portrait photo of a {gender} {job}\u201d" in line
    assert "scored with \u201ca portrait photo of a {job}\u201d (score_prompt)" in line
    assert "levels of job filled in" not in line and "level of job filled in" in line
    assert "leaves out gender" in line
    assert "generated with \u201ca portrait photo of a man nurse\u201d, scored with \u201ca portrait photo of a nurse\u201d" in line


def test_the_default_is_said_to_be_the_generation_prompt(bundles, tmp_path):
    (line,) = _bundle_with_generated_arm(bundles, tmp_path, "")
    assert "scored with its generation prompt (the default: no score_prompt declared)" in line
    assert "leaves out" not in line


def test_plain_text_is_the_same_prompt_for_every_image(bundles, tmp_path):
    (line,) = _bundle_with_generated_arm(bundles, tmp_path, ', score_prompt: "a portrait photo"')
    assert "\u201ca portrait photo\u201d (score_prompt), the same text for every image" in line
    assert "leaves out gender, job" in line


def test_an_audit_without_generated_arms_says_nothing_of_it(bundles):
    assert "generated-arm" not in (bundles["skin_tone"] / "report.html").read_text()


@pytest.mark.parametrize("evil", ['"><script>alert(1)</script>'])
def test_a_hostile_prompt_is_escaped(bundles, tmp_path, evil):
    rows = [{"id": "a", "path": "a.png", "cluster": "p", "gender": "man", "job": "nurse", "prompt": evil,
             "score_prompt": evil}]
    _bundle_with_generated_arm(bundles, tmp_path, "", rows)
    page = (tmp_path / "b" / "report.html").read_text()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
