"""`examples/comparisons.audit` on the data `scripts/make_comparisons_data.py` generates: every form of
issue 13 parses, checks, runs, verifies and renders, and the planted truths come out."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from scoreaudit import api

from e2e_helpers import cells, run

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("make_comparisons_data", ROOT / "scripts" / "make_comparisons_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    folder = tmp_path_factory.mktemp("comparisons")
    _generator().build(folder / "data")
    spec = folder / "comparisons.audit"
    shutil.copy2(ROOT / "examples" / "comparisons.audit", spec)
    results = run(spec, folder / "out", render=True)
    return folder, results


def test_every_cell_has_an_outcome_and_a_sentence(example):
    _, results = example
    cs = cells(results)
    assert len(cs) == 26
    for c in cs.values():
        assert c["outcome"] in ("supported", "refuted", "inconclusive")
        assert c["sentence"].endswith(f": {c['outcome']}.")


def test_planted_truths_come_out(example):
    _, results = example
    cs = cells(results)
    s1 = cs["S1/hps:laion/real"]  # planted curvature 0.03 vs 1.0 (the SDs differ little)
    assert s1["outcome"] == "supported" and 0.015 < s1["estimate"] < 0.045
    assert s1["sentence"].startswith("On real, hps's fidelity index of light is 0.0")
    assert "× laion's [" in s1["sentence"]
    assert cs["S1/hps:ir/real"]["outcome"] == "supported"  # 0.03 vs 1.2: the open reading expands
    for s in ("laion", "hps", "ir"):  # planted: the real asymmetry is 0.2× the synthetic one
        c = cs[f"S2/{s}/real:synthetic"]
        assert c["outcome"] == "supported" and c["detail"]["paired"] is False
        assert c["ci_low"] < 0.22 and c["ci_high"] > 0.15
    s3 = cs["S3/hps/wide:orig"]  # two arms over the same pairs: paired, the sign-flip test of credit differences
    assert s3["detail"]["paired"] and s3["detail"]["test"].startswith("sign-flip")
    assert s3["method"] == s3["detail"]["test"]
    assert s3["ci_low"] < -0.2 < s3["ci_high"] and s3["outcome"] == "supported"
    s4 = cs["S4/ir:laion/orig"]  # the second reading, left open, expands over `for laion, hps`
    assert s4["detail"]["test"].startswith("sign-flip") and s4["ci_low"] < 0.2 < s4["ci_high"]
    assert cs["S4/ir:hps/orig"]["ci_low"] < 0.05 < cs["S4/ir:hps/orig"]["ci_high"]
    for s in ("laion", "ir"):  # planted confound share 0.6 (in the population the data are drawn from)
        c = cs[f"S6/{s}/synthetic"]
        assert abs(c["estimate"] - 0.6) < 0.05 and c["ci_low"] > 0.5 and c["outcome"] == "supported"
        assert "confound share of the tone gap (dark − light)" in c["sentence"]
    s7 = cs["S7.1/ir/wide"]
    assert s7["detail"]["excluded_label"] == 30 and s7["outcome"] == "supported"
    assert cs["S7.3/ir/real"]["outcome"] == "refuted"  # ir's scores ignore what the judge saw
    excl = [e for e in results["exclusions"] if "missing value -1" in e["reason"]]
    assert {e["arm"] for e in excl} == {"real", "wide", "orig"}


def test_report_has_the_comparisons_section_and_verify_passes(example):
    folder, _ = example
    html = (folder / "out" / "report.html").read_text(encoding="utf-8")
    sec = html[html.index('<section id="comparisons"'):]
    sec = sec[:sec.index("</section>")]
    assert sec.count('<svg class="chart forest"') >= 10
    assert "Pairing: paired: wide and orig share 300 clusters" in sec
    assert "Decomposition of group gaps" in sec
    assert "http" not in sec.replace("http://www.w3.org/2000/svg", "")  # self-contained
    from scoreaudit.reports.verify import verify

    assert verify(folder / "out") == []


def _svg_texts(svg: str) -> list[str]:
    import re

    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_the_comparisons_views_read_without_stumbling(example):
    """Each comparison: one heading in words (the cell id once, as a link), charts titled for what they show
    (not the id again), a ratio axis that says which reading is divided by which, a caption with both CI levels;
    a half-open claimed region never stretches the axis far past the data; decompositions: one title, an axis
    with units, CIs' level and beta per unit of the measure."""
    import re

    folder, results = example
    html = (folder / "out" / "report.html").read_text(encoding="utf-8")
    sec = html[html.index('<section id="comparisons"'):]
    sec = sec[:sec.index("</section>")]
    blocks = re.findall(r'<div class="block comparison">(.*?)</div>', sec, re.S)
    comps = [c for c in results["cells"] if c["statistic"] in ("difference", "ratio")]
    assert len(blocks) == len(comps)
    for c, b in zip(comps, blocks):
        assert b.count(c["id"]) == 1, c["id"]  # in the heading's link only
        titles = re.findall(r"<title>([^<]*)</title>", b)
        want = (["The two readings and their difference"] if c["statistic"] == "difference"
                else ["The two readings", "Their ratio"])
        assert titles == want
        assert "Readings: 95% CIs" in b and "90% CI" in b
    s1 = blocks[[c["id"] for c in comps].index("S1/hps:laion/real")]
    assert "<h3>S1 \u00b7 hps vs laion \u00b7 on real" in s1
    assert "ratio hps \u00f7 laion (\u00d7)" in _svg_texts(s1)
    # S4 (ir − hps accuracy > 0): the shaded "> 0" region ends just past the data, not a whole unit beyond
    s4 = blocks[[c["id"] for c in comps].index("S4/ir:hps/orig")]
    ticks = [float(t.replace("\u2212", "-")) for t in _svg_texts(s4) if re.fullmatch(r"[\u2212\d.]+", t)]
    assert max(ticks) <= 1.0, ticks  # accuracies and their difference: the axis stays within [0, 1]
    decs = re.findall(r'<div class="block decomposition">(.*?)</div>', sec, re.S)
    assert len(decs) == 2
    for d in decs:
        title = re.search(r"<h4>([^<]*)</h4>", d).group(1)
        assert d.count(title) == 1  # once: the chart has its own title
        assert re.findall(r"<title>([^<]*)</title>", d) == ["Observed gap and its two parts"]
        assert "score gap dark \u2212 light (SD units)" in _svg_texts(d)
        assert "95% CIs." in d and "per degree of ita" in d


def test_the_glance_folds_scorer_pairs_under_the_declared_scorers(example):
    import re

    folder, _ = example
    html = (folder / "out" / "report.html").read_text(encoding="utf-8")
    glance = html[html.index('<section id="glance"'):]
    glance = glance[:glance.index("</section>")]
    head = re.search(r"<thead>(.*?)</thead>", glance, re.S).group(1)
    assert re.findall(r'<th scope="col" class="num">([^<]*)</th>', head) == ["laion", "hps", "ir"]
    assert "over 9 hypotheses and 3 scorers" in glance
    assert "vs laion" in glance and "vs hps" in glance  # S1 under hps, S4 under ir
    assert "real vs synthetic" in glance and "wide vs orig" in glance  # two arms compared: not a transfer arrow
    assert "0.0271\u00d7" in glance  # a ratio as the sentence says it
    header = html[html.index('<p class="meta">'):]
    assert "orig: 300 pairs" in header[:header.index("</p>")]
    assert "real: 120 real images" in header[:header.index("</p>")]


def test_display_labels_name_both_sides_of_a_comparison(example, tmp_path):
    """`label:` on scorers and arms reaches comparison sentences (both scorers, both arms), headings and
    readings, never the quoted claim."""
    import re

    from scoreaudit.reports.render import render

    folder, _ = example
    d = tmp_path / "b"
    shutil.copytree(folder / "out", d)
    ir = json.loads((d / "ir.json").read_text())
    for name, label in (("hps", "HPSv2"), ("laion", "LAION aesthetic"), ("ir", "ImageReward")):
        ir["scorers"][name]["label"] = label
    ir["arms"]["real"]["label"] = "real faces"
    ir["arms"]["synthetic"]["label"] = "synthetic faces"
    (d / "ir.json").write_text(json.dumps(ir))
    render(d, formats=["html"])
    html = (d / "report.html").read_text(encoding="utf-8")
    hyp = re.search(r'<section id="hypotheses".*?</section>', html, re.S).group(0)
    assert "On real faces, HPSv2&#39;s fidelity index of light is 0.0271\u00d7 LAION aesthetic&#39;s" in hyp
    assert "LAION aesthetic&#39;s asymmetry of light on real faces is 0.203\u00d7 that on synthetic faces" in hyp
    assert "hps&#39;s" not in hyp and "laion&#39;s" not in hyp
    comp = re.search(r'<section id="comparisons".*?</section>', html, re.S).group(0)
    assert "S1 \u00b7 HPSv2 vs LAION aesthetic \u00b7 on real faces" in comp
    assert "ratio HPSv2 \u00f7 LAION aesthetic (\u00d7)" in comp
    assert "fidelity_index(light) for hps" in comp  # the quoted claim keeps the spec's names


def test_plan_lists_the_pairing(example):
    folder, _ = example
    from scoreaudit.compiler.plan import render_plan

    _, plan = api.compile(folder / "comparisons.audit", tables=False)
    out = render_plan(plan)
    assert "S3/hps/wide:orig: paired: wide and orig are built from the same manifest ids" in out
    assert "S2/laion/real:synthetic: independent unless real and synthetic share cluster ids" in out


def test_fmt_keeps_the_example_canonical():
    from scoreaudit.compiler.fmt import format_module
    from scoreaudit.grammar.parser import parse

    text = (ROOT / "examples" / "comparisons.audit").read_text(encoding="utf-8")
    module, diags = parse(text)
    assert not diags
    assert format_module(module) == text


NEW_USER = '''audit "Cached scores from a paper" { version: 1 seed: 5 bootstrap: 500 }
scorer hps_op = precomputed(preferred: hps_orig_faithful, other: hps_orig_polished)
scorer hps_dp = precomputed(preferred: hps_wide_faithful, other: hps_wide_polished)
scorer ir_op  = precomputed(preferred: ir_orig_faithful, other: ir_orig_polished)
arm wide = pairs("data/pairs.json", preferred: faithful, other: polished, images: false)
hypothesis S3 "HPSv2 prefers the faithful image less under the wide-spectrum prompt" {
  difference(pairwise_accuracy() for hps_dp, pairwise_accuracy() for hps_op) < 0 on wide
}
hypothesis S4 "ImageReward beats HPSv2 on the same pairs" {
  difference(pairwise_accuracy() for ir_op, pairwise_accuracy() for hps_op) > 0 on wide
}
'''


def test_a_new_user_compares_cached_per_prompt_scores_of_one_pairs_file(tmp_path):
    """Seed 003's table as a user has it: one row per pair, one column per scorer × prompt × side."""
    import numpy as np

    rng = np.random.default_rng(3)
    rows = []
    for k in range(150):
        r = {"id": f"p{k}"}
        hard = rng.random() < 0.3  # pairs the wide prompt flips for HPSv2
        for name, right in (("hps_orig", rng.random() < 0.8), ("ir_orig", rng.random() < 0.85)):
            r[f"{name}_faithful"], r[f"{name}_polished"] = (0.9, 0.2) if right else (0.2, 0.9)
        wide_right = (r["hps_orig_faithful"] > r["hps_orig_polished"]) and not hard
        r["hps_wide_faithful"], r["hps_wide_polished"] = (0.7, 0.3) if wide_right else (0.3, 0.7)
        rows.append(r)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "pairs.json").write_text(json.dumps(rows), encoding="utf-8")
    spec = tmp_path / "cached.audit"
    spec.write_text(NEW_USER, encoding="utf-8")
    results = run(spec, tmp_path / "out")
    cs = cells(results)
    s3 = cs["S3/hps_dp:hps_op/wide"]
    assert s3["detail"]["test"].startswith("sign-flip") and s3["detail"]["signflip"]["a_better"] == 0
    assert s3["outcome"] == "supported" and s3["estimate"] < -0.15
    assert cs["S4/ir_op:hps_op/wide"]["detail"]["paired"]


def test_plan_forward_passes_equal_the_runs(example):
    """issue 26: scores read from tables cost no forward pass in the plan and none in the run."""
    from plan_forward import assert_forward_passes_match

    folder, _ = example
    assert_forward_passes_match(folder / "comparisons.audit", folder / "out")
