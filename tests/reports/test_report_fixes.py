"""Small contradictions of large or unusual audits (issue 28): no Python None, no absolute local paths,
no empty axis for an undefined comparison, no "cross-image" sentence for a probe-only audit."""

from __future__ import annotations

import re
from pathlib import Path

from scoreaudit.reports.context import ReportContext


def _section(html: str, name: str) -> str:
    return re.search(rf'<section id="{name}".*?</section>', html, re.S).group(0)


def test_appendix_prints_no_python_none_and_no_absolute_spec_path(big_bundle_dir):
    import json

    res = json.loads((big_bundle_dir / "results.json").read_text())
    assert res["spec"]["path"].startswith("/")  # the run stores where the spec was
    assert None in res["settings"].values()
    appendix = _section((big_bundle_dir / "report.html").read_text(), "appendix")
    assert not re.search(r">\s*None\s*<", appendix)
    assert res["spec"]["path"] not in appendix and "big.audit" in appendix
    assert re.search(r'<th scope="row">scores</th><td>\u2014</td>', appendix)


def test_lock_detail_paths_are_relative_to_the_spec():
    from scoreaudit.reports.sections.first_screen import relative_paths

    text = ("Locked after scoring began: scores existed already (in /home/ana/audits/out/skin/scores.parquet; "
            "/tmp/x/other/bundle).")
    got = relative_paths(text, "/home/ana/audits/skin.audit")
    assert got == ("Locked after scoring began: scores existed already (in out/skin/scores.parquet; "
                   "\u2026/other/bundle).")
    assert relative_paths("no paths here, 1/2 of them", "/a/b.audit") == "no paths here, 1/2 of them"


def _ctx(cells, ir=None) -> ReportContext:
    return ReportContext(bundle_dir=Path("."), results={"cells": cells, "settings": {"alpha": 0.05}}, ir=ir or {})


def test_probe_only_audit_is_not_told_about_cross_image_comparisons():
    from scoreaudit.reports.sections.first_screen import verdict

    about = verdict(_ctx([{"id": "P1/s", "statistic": "probe_drift", "scorer": "s"}]))["about"]
    assert "probe" in about and "cross-image" not in about
    about = verdict(_ctx([{"id": "W1/s", "statistic": "pairwise_accuracy", "scorer": "s", "arm": "w"}]))["about"]
    assert about == "cross-image comparisons"


def test_undefined_comparison_draws_no_empty_axis():
    from scoreaudit.reports.sections.comparisons import comparisons

    reason = "the denominator's CI [\u22120.01, 0.02] includes 0: the ratio is undefined"
    cell = {"id": "S2/laion", "hypothesis": "S2", "statistic": "ratio", "scorer": "laion", "arms": ["real", "syn"],
            "estimate": None, "ci_low": None, "ci_high": None, "undefined": reason, "outcome": "inconclusive",
            "claim_text": "ratio(...) < 0.33", "test": {"kind": "less", "threshold": 0.33},
            "detail": {"readings": [{"scorer": "laion", "statistic": "asymmetry", "arm": "real", "estimate": 0.01,
                                     "ci_low": -0.01, "ci_high": 0.03},
                                    {"scorer": "laion", "statistic": "asymmetry", "arm": "syn", "estimate": None,
                                     "ci_low": None, "ci_high": None}]}}
    entry = comparisons(_ctx([cell]))["entries"][0]
    assert len(entry["charts"]) == 1  # the defined reading only: no ratio axis without a ratio
    assert "Their ratio" not in str(entry["charts"][0]) and reason in entry["caption"]
    none = dict(cell, detail={"readings": [dict(r, estimate=None, ci_low=None, ci_high=None)
                                           for r in cell["detail"]["readings"]]})
    entry = comparisons(_ctx([none]))["entries"][0]
    assert entry["charts"] == [] and entry["caption"].startswith("Nothing to draw")


def test_each_cell_names_its_test_and_the_bootstrap_p_floor(big_bundle_dir):
    import html as htmllib
    import json

    res = json.loads((big_bundle_dir / "results.json").read_text())
    page = (big_bundle_dir / "report.html").read_text()
    B = res["settings"]["bootstrap"]
    floored = 0
    for i, c in enumerate(res["cells"]):
        li = htmllib.unescape(re.search(rf'<li class="cell \w+" id="cell-{i + 1}">(.*?)</li>', page, re.S).group(1))
        method = c["method"].replace(" (none inversion)", "")
        if method == "own test":
            assert "test: Kruskal\u2013Wallis" in li  # homogeneous(...) reads its own omnibus test
        else:
            assert f"test: {method}" in li, (c["id"], li)
        at_floor = "bootstrap" in c["method"] and c["p"] is not None and abs(c["p"] - 1 / (B + 1)) < 1e-12
        assert ("1/(B + 1) = 0.005" in li) == at_floor, (c["id"], c["p"], li)
        floored += at_floor
    assert floored >= 5  # the planted effects are strong: many bootstrap p sit at the floor


def test_summary_says_how_many_raw_significant_cells_survive_the_correction(big_bundle_dir):
    import json

    from scoreaudit.reports.render import render

    render(big_bundle_dir, formats=["html"])
    res = json.loads((big_bundle_dir / "results.json").read_text())
    raw = [c for c in res["cells"] if c["p"] is not None and c["p"] <= 0.05]
    kept = [c for c in raw if c["q"] is not None and c["q"] <= 0.05]
    assert 0 < len(kept) < len(raw)  # the planted audit has both kinds
    summary = re.search(r'<p class="summary">(.*?)</p>', (big_bundle_dir / "report.html").read_text(), re.S).group(1)
    assert f"{len(kept)} of {len(raw)} raw-significant cells (p \u2264 0.05) survive the false discovery rate" in summary


def test_one_number_style_and_complete_sentences(big_bundle_dir):
    """No ASCII hyphen as a minus before a number, no "p = 1.00" beside "q = 1", no plus signs inside intervals;
    every comparison's sentence states its interval's level, p, q and claim (as the other cells' do)."""
    import html as htmllib
    import json

    page = (big_bundle_dir / "report.html").read_text()
    body = re.sub(r"<pre class=\"spec\">.*?</pre>", "", page, flags=re.S)  # the spec is the user's own text
    text = re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", body)))
    assert not re.findall(r"(?<![\w\-.])-\d", text), re.findall(r".{40}(?<![\w\-.])-\d.{20}", text)[:3]
    assert not re.search(r"[pq] = 1\.0", text)
    assert not re.search(r"\[\+", text)
    res = json.loads((big_bundle_dir / "results.json").read_text())
    comps = [c for c in res["cells"] if c["statistic"] in ("difference", "ratio") and c["estimate"] is not None]
    assert comps
    for c in comps:
        s = c["sentence"]
        assert re.search(r"\] \(\d+% CI(; [^)]*\)?)?\), p (=|<) [\d.]+, q (=|<) [\d.]+ \(claim: ", s), s


def test_appendix_says_how_to_reproduce_the_bundle(big_bundle_dir):
    import html as htmllib
    import json

    res = json.loads((big_bundle_dir / "results.json").read_text())
    appendix = htmllib.unescape(_section((big_bundle_dir / "report.html").read_text(), "appendix"))
    assert "scoreaudit run big.audit --out OUT --device cpu" in appendix
    assert "scoreaudit verify OUT" in appendix
    for k in ("seed", "bootstrap", "robustness"):
        assert re.search(rf"<th scope=\"row\">{k}</th><td>{res['settings'][k]}</td>", appendix), k
    assert f"<td>{res['tool']['version']}</td>" in appendix
    assert "not recorded by this run" in appendix  # this run recorded no git commit: said, not guessed


def test_each_within_image_cell_names_the_images_that_move_it_most(big_bundle_dir):
    """The five images with the largest |score at the extreme dose − original score|, checked against a direct
    computation on tables/scores.parquet."""
    import html as htmllib
    import json

    import pandas as pd

    res = json.loads((big_bundle_dir / "results.json").read_text())
    page = htmllib.unescape((big_bundle_dir / "report.html").read_text())
    s = pd.read_parquet(big_bundle_dir / "tables" / "scores.parquet")
    i, c = next((i, c) for i, c in enumerate(res["cells"]) if c["id"] == "H1/pick/real")
    mine = s[(s.arm == "real") & (s.scorer == "pick")]
    orig = mine[mine.operator == "original"].set_index("image_id")["score"]
    ext = mine[(mine.operator == "light") & (mine.dose.abs() == 15)].copy()
    ext["change"] = ext["score"].to_numpy() - orig.reindex(ext["image_id"]).to_numpy()
    ext = ext.assign(size=ext.change.abs()).sort_values(["size", "image_id"], ascending=[False, True])
    want = ext.drop_duplicates("image_id").head(5)["image_id"].tolist()
    li = re.search(rf'<li class="cell \w+" id="cell-{i + 1}">(.*?)</li>', page, re.S).group(1)
    line = re.search(r"Moved most \(raw score change at the extreme dose\): (.*?)\.</span>", li).group(1)
    assert [part.split(" ")[0] for part in line.split("; ")] == want
    # a cross-image cell (no operator) has no such line
    j = next(j for j, c in enumerate(res["cells"]) if c["statistic"] == "pairwise_accuracy")
    assert "Moved most" not in re.search(rf'id="cell-{j + 1}">(.*?)</li>', page, re.S).group(1)


def test_number_sources_name_each_scorer_of_a_comparison_once():
    from scoreaudit.reports.sections.appendix import sources

    rows = sources({"cells": [{"scorer": "ir:laion", "arm": "wide"}, {"scorer": "laion", "arm": "wide"}]})
    assert [(r["name"], r["arm"]) for r in rows] == [("ir", "wide"), ("laion", "wide")]  # never "ir:laion"
