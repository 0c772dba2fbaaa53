"""Done-means 1: a pairs audit over a JSON list of records, no image files, one precomputed scorer per prompt.

Each record holds four scores of one pair: the original image and the distorted
one, each under the original prompt and under a wide-spectrum prompt. The
numbers in results.json must equal a hand computation: accuracy counts ties
as half; the mean gap is in SD units, the SD being the sample SD (ddof 1) of
all the scorer's finite scores on the arm, both sides (stats/cross_estimators.py).
"""

from __future__ import annotations

import hashlib
import json
import statistics

import pytest
from scipy import stats

from e2e_helpers import cells, run, write_json, write_spec

# (pair, original image | original prompt, distorted | original prompt,
#        original image | wide prompt,     distorted | wide prompt)
PAIRS = [
    ("p1", 0.91, 0.12, 0.30, 0.64),
    ("p2", 0.50, 0.50, 0.20, 0.21),   # a tie under the original prompt
    ("p3", 0.22, 0.41, 0.11, 0.50),
    ("p4", 1.00, 0.05, 0.80, 0.80),   # a tie under the wide prompt
    ("p5", 0.70, 0.33, 0.42, 0.90),
    ("p6", 0.66, None, -0.20, 0.13),  # the distorted image has no score under the original prompt
    ("p7", 0.80, 0.10, 0.55, 0.35),
    ("p8", 0.35, 0.30, 0.05, 0.45),
]

SPEC = '''audit "Wide-spectrum prompt check" { version: 1 seed: 3 scale: sd bootstrap: 200 }
scorer ir_orig = precomputed(preferred: ir_orig_img_orig_prompt, other: ir_dist_img_orig_prompt)
scorer ir_wide = precomputed(preferred: ir_orig_img_wide_prompt, other: ir_dist_img_wide_prompt)
arm wide = pairs("data/wide.json", preferred: original, other: distorted, images: false)
hypothesis W1 "The scorer prefers the original image under either prompt" {
  pairwise_accuracy() > 0.5 on wide for each scorer
}
hypothesis W2 "By a margin" {
  mean_gap() > 0 on wide for each scorer
}
'''

COLUMNS = {"ir_orig": (1, 2), "ir_wide": (3, 4)}


def hand(scorer: str) -> dict:
    """Accuracy (ties half), mean gap in SD units and its one-sided t-test, without numpy."""
    a, b = COLUMNS[scorer]
    pref = [p[a] for p in PAIRS]
    other = [p[b] for p in PAIRS]
    both = [(x, y) for x, y in zip(pref, other) if x is not None and y is not None]
    wins = sum(1 for x, y in both if x > y)
    ties = sum(1 for x, y in both if x == y)
    sd = statistics.stdev([v for v in pref + other if v is not None])
    gaps = [(x - y) / sd for x, y in both]
    return {"accuracy": (wins + 0.5 * ties) / len(both), "n": len(both), "wins": wins, "ties": ties,
            "gap": sum(gaps) / len(gaps), "sd": sd,
            "gap_p": stats.ttest_1samp(gaps, 0.0, alternative="greater").pvalue,
            "acc_p": stats.binomtest(wins, len(both) - ties, 0.5, alternative="greater").pvalue}


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pairs")
    write_json(folder / "data" / "wide.json",
               [{"id": pid, "ir_orig_img_orig_prompt": oo, "ir_dist_img_orig_prompt": do,
                 "ir_orig_img_wide_prompt": ow, "ir_dist_img_wide_prompt": dw} for pid, oo, do, ow, dw in PAIRS])
    spec = write_spec(folder, SPEC)
    results = run(spec, folder / "out", render=True)
    return folder, results


def test_no_image_files(bundle):
    folder, _ = bundle
    files = [p for p in folder.rglob("*") if p.suffix.lower() in (".png", ".jpg", ".jpeg", ".webp")]
    assert files == []


@pytest.mark.parametrize("scorer", ["ir_orig", "ir_wide"])
def test_pairwise_accuracy_equals_hand(bundle, scorer):
    _, results = bundle
    c = cells(results)[f"W1/{scorer}/wide"]
    h = hand(scorer)
    assert c["estimate"] == pytest.approx(h["accuracy"], abs=1e-12)
    assert c["detail"]["n"] == h["n"] and c["detail"]["wins"] == h["wins"] and c["detail"]["ties"] == h["ties"]
    assert c["p"] == pytest.approx(h["acc_p"], rel=1e-9)


@pytest.mark.parametrize("scorer", ["ir_orig", "ir_wide"])
def test_mean_gap_equals_hand(bundle, scorer):
    _, results = bundle
    c = cells(results)[f"W2/{scorer}/wide"]
    h = hand(scorer)
    assert c["estimate"] == pytest.approx(h["gap"], rel=1e-12)
    assert c["detail"]["sd"] == pytest.approx(h["sd"], rel=1e-12)
    # METHODS: t interval and test over pairs (no cluster column: each pair its own), the pooled SD of both sides
    assert c["method"] == "t over pairs" and c["interval"] == "t"
    assert c["p"] == pytest.approx(h["gap_p"], rel=1e-9)


def test_the_missing_score_is_an_exclusion_with_its_reason(bundle):
    _, results = bundle
    ex = [e for e in results["exclusions"] if e["stage"] == "score"]
    assert [(e["arm"], e["image_id"]) for e in ex] == [("wide", "p6:other")]
    assert "ir_orig" in ex[0]["reason"] and "ir_dist_img_orig_prompt" in ex[0]["reason"]


def test_the_missing_score_is_a_null_that_sql_skips(bundle):
    """METHODS: missing values are nulls, counted as exclusions; before, the NaN row made duckdb's
    count(score) count it and avg(score) NaN."""
    import math

    import duckdb

    folder, results = bundle
    scores = folder / "out" / "tables" / "scores.parquet"
    con = duckdb.connect()
    q = f"select count(*), count(score), avg(score) from '{scores}' where scorer = 'ir_orig'"
    n_rows, n_score, avg = con.execute(q).fetchone()
    assert n_score == n_rows - 1 and math.isfinite(avg)
    assert con.execute(f"select image_id from '{scores}' where score is null").fetchall() == [("p6:other",)]
    excl = folder / "out" / "tables" / "exclusions.parquet"
    rows = con.execute(f"select image_id, reason from '{excl}' where stage = 'score'").fetchall()
    assert [r[0] for r in rows] == ["p6:other"] and "ir_dist_img_orig_prompt" in rows[0][1]


def test_provenance_names_the_manifest(bundle):
    folder, results = bundle
    sha = hashlib.sha256((folder / "data" / "wide.json").read_bytes()).hexdigest()
    entries = results["precomputed"]
    assert entries == [{"file": "data/wide.json", "sha256": sha, "provides": "scores", "arm": "wide",
                        "names": ["ir_orig", "ir_wide"], "by_arm": {"wide": ["ir_orig", "ir_wide"]},
                        "source": "manifest columns"}]
    run_json = json.loads((folder / "out" / "run.json").read_text())
    assert run_json["precomputed"] == entries
    html = (folder / "out" / "report.html").read_text(encoding="utf-8")
    sources = html[html.index('id="number-sources"'):]
    sources = sources[:sources.index("</table>")]
    for scorer in ("ir_orig", "ir_wide"):
        assert (f"<td>scorer {scorer}</td><td>wide</td><td>read from <code>data/wide.json</code> (manifest columns) "
                f"(sha256 <code class=\"hash\">{sha}</code>)</td>") in sources
    assert "computed by scoreaudit" not in sources


def test_images_table_has_no_pixels(bundle):
    import pandas as pd

    folder, _ = bundle
    images = pd.read_parquet(folder / "out" / "tables" / "images.parquet")
    assert len(images) == 2 * len(PAIRS)
    assert images["content_hash"].isna().all() and images["width"].isna().all()
    assert set(images["side"]) == {"preferred", "other"}
    assert sorted(images["image_id"])[:2] == ["p1:other", "p1:preferred"]


def test_the_same_numbers_as_a_long_table(bundle, tmp_path):
    """Rows `id, side, scorer, score` (JSON lines) and `precomputed()` scorers: the same cells."""
    _, results = bundle
    write_json(tmp_path / "data" / "wide.json", [{"id": p[0]} for p in PAIRS])
    lines = []
    for pid, *vals in PAIRS:
        for scorer, (a, b) in COLUMNS.items():
            for side, v in (("preferred", vals[a - 1]), ("other", vals[b - 1])):
                if v is not None:
                    lines.append(json.dumps({"id": pid, "side": side, "scorer": scorer, "score": v}))
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "wide.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    spec = SPEC.replace("scorer ir_orig = precomputed(preferred: ir_orig_img_orig_prompt, other: ir_dist_img_orig_prompt)",
                        "scorer ir_orig = precomputed()")
    spec = spec.replace("scorer ir_wide = precomputed(preferred: ir_orig_img_wide_prompt, other: ir_dist_img_wide_prompt)",
                        "scorer ir_wide = precomputed()")
    spec = spec.replace("images: false)", 'images: false, scores: "results/wide.jsonl")')
    assert spec.count("precomputed()") == 2 and "wide.jsonl" in spec
    from scoreaudit import api

    checked = api.check(write_spec(tmp_path, spec))
    # p6:other has no ir_orig row: the table lacks a cell the pairs statistics read
    assert [d.code for d in checked.diagnostics if d.is_error] == ["E0802"]
    assert "image p6:other, operator original, dose 0, scorer ir_orig" in next(
        d for d in checked.diagnostics if d.is_error).message
    # give the hole as an explicit null: an exclusion with its reason, as with the manifest column
    (tmp_path / "results" / "wide.jsonl").write_text(
        "\n".join(lines + [json.dumps({"id": "p6", "side": "other", "scorer": "ir_orig", "score": None})]) + "\n",
        encoding="utf-8")
    other = run(tmp_path / "a.audit", tmp_path / "out")
    for cid, c in cells(results).items():
        o = cells(other)[cid]
        assert [o[f] for f in ("estimate", "ci_low", "ci_high", "p", "q", "outcome")] == \
            [c[f] for f in ("estimate", "ci_low", "ci_high", "p", "q", "outcome")], cid
    ex = [e for e in other["exclusions"] if e["stage"] == "score"]
    assert [(e["image_id"], e["row"]) for e in ex] == [("p6:other", len(lines) + 1)]
    assert ex[0]["reason"].startswith(f"results/wide.jsonl row {len(lines) + 1}: the score is missing")


def test_the_imageless_bundle_verifies(bundle):
    from scoreaudit.reports.verify import verify

    folder, _ = bundle
    assert verify(folder / "out") == []
