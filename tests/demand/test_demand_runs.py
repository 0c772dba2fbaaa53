"""The plan is demanded by the hypotheses (issue 26), end to end through the command line.

An audit of an images arm whose scores are all read from its manifest and a
pairs arm (the shape of an audit of published score tables): the images arm
needs no image file (nothing the plan runs reads pixels), each scorer runs
only on the arm a claim reads it on, and no exclusion is logged for work the
hypotheses never needed. Before, every scorer ran on every arm: the pairs
scorer excluded every image of the images arm, the column scorer every pair,
and the images arm needed every file.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from scoreaudit import cli
from scoreaudit.exitcodes import Exit

SPEC = '''audit "Published scores" { version: 1 seed: 5 bootstrap: 300 scale: raw }
scorer aesthetic = precomputed(column: aesthetic)
scorer judge = precomputed(preferred: judge_a, other: judge_b)
arm rated = images("data/rated", manifest: "data/rated.csv", kind: real)
arm wide = pairs("data/wide.csv", preferred: good, other: bad, images: false)
hypothesis A1 "aesthetic scores follow the human ratings" {
  spearman(column: rating) > 0 on rated for aesthetic
}
hypothesis W1 "the judge prefers the faithful image" {
  pairwise_accuracy() > 0.5 on wide for judge
}
'''


def _data(root):
    rng = np.random.default_rng(4)
    (root / "data").mkdir(parents=True)
    n = 60
    rating = rng.integers(1, 6, n)  # discrete human ratings, with ties
    pd.DataFrame({"id": [f"r{k}" for k in range(n)], "path": [f"r{k}.png" for k in range(n)],
                  "aesthetic": np.round(rating + rng.normal(0, 1.0, n), 1), "rating": rating}).to_csv(
        root / "data" / "rated.csv", index=False)
    m = 40
    a = rng.normal(0.5, 1.0, m)
    pd.DataFrame({"id": [f"p{k}" for k in range(m)], "good": [f"g{k}" for k in range(m)],
                  "bad": [f"b{k}" for k in range(m)], "judge_a": a, "judge_b": rng.normal(0, 1.0, m)}).to_csv(
        root / "data" / "wide.csv", index=False)


def test_images_and_pairs_arms_run_without_image_files_or_unneeded_exclusions(tmp_path, capsys, monkeypatch):
    _data(tmp_path)
    (tmp_path / "a.audit").write_text(SPEC, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert not (tmp_path / "data" / "rated").exists()  # not one image file
    assert cli.main(["check", "a.audit"]) == Exit.OK
    assert cli.main(["plan", "a.audit", "--json"]) == Exit.OK
    plan = json.loads(capsys.readouterr().out)
    scored = sorted((s["arm"], s["params"]["scorer"]) for s in plan["steps"] if s["kind"] == "score")
    assert scored == [("rated", "aesthetic"), ("wide", "judge")]  # each scorer on the arm its claim reads
    decode = {s["arm"]: s["params"] for s in plan["steps"] if s["kind"] == "decode"}
    assert decode["rated"].get("pixels") is False  # said in the plan: nothing decodes this arm
    by = {s["id"]: s["needed_by"] for s in plan["steps"]}
    assert by["score/rated/aesthetic/original"] == ["A1/aesthetic/rated"]
    assert by["score/wide/judge/original"] == ["W1/judge/wide"]

    assert cli.main(["run", "a.audit", "--out", "out", "--device", "cpu", "--quiet"]) == Exit.OK
    out = tmp_path / "out"
    excl = pd.read_parquet(out / "tables" / "exclusions.parquet")
    assert len(excl) == 0, excl.to_dict("records")
    run = json.loads((out / "run.json").read_text())
    assert run["counts"]["excluded"] == {"rated": 0, "wide": 0}
    assert run["counts"]["images"] == {"rated": 60, "wide": 80}
    cells = {c["id"]: c for c in json.loads((out / "results.json").read_text())["cells"]}
    assert set(cells) == {"A1/aesthetic/rated", "W1/judge/wide"}
    assert all(c["estimate"] is not None for c in cells.values())
    # the estimate is the data's own: scipy's Spearman of the manifest's two columns
    from scipy.stats import spearmanr

    m = pd.read_csv(tmp_path / "data" / "rated.csv")
    assert abs(cells["A1/aesthetic/rated"]["estimate"] - spearmanr(m.aesthetic, m.rating).statistic) < 1e-9


def test_a_hypothesis_that_reads_pixels_still_needs_the_files(tmp_path, capsys, monkeypatch):
    """Pixel-free holds only while nothing decodes: a claim under an operator puts the files back in the plan."""
    _data(tmp_path)
    spec = SPEC.replace("scorer judge", "operator light = lab_shift(channel: L) doses -5, 0, 5\nscorer judge") + (
        'hypothesis F1 "light" {\n  fidelity_index(light) > 0 on rated for aesthetic\n}\n')
    (tmp_path / "a.audit").write_text(spec, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert cli.main(["plan", "a.audit", "--json"]) == Exit.OK
    plan = json.loads(capsys.readouterr().out)
    decode = {s["arm"]: s["params"] for s in plan["steps"] if s["kind"] == "decode"}
    assert "pixels" not in decode["rated"]
    assert cli.main(["run", "a.audit", "--out", "out", "--device", "cpu", "--quiet"]) != Exit.OK
    assert "r0.png" in capsys.readouterr().err  # the missing files are named


def test_an_arm_nothing_reads_is_warned_about_and_never_read(tmp_path, capsys, monkeypatch):
    """W0540 at check; the run neither opens its (missing) manifest nor lists it in the tables."""
    _data(tmp_path)
    spec = SPEC.replace('arm wide =', 'arm spare = images("data/spare", manifest: "data/spare.csv")\narm wide =')
    (tmp_path / "a.audit").write_text(spec, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert cli.main(["check", "a.audit"]) == Exit.OK
    err = capsys.readouterr().err
    assert "warning[W0540]: arm `spare` is declared but nothing needs it" in err
    assert cli.main(["run", "a.audit", "--out", "out", "--device", "cpu", "--quiet"]) == Exit.OK
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert "spare" not in run["counts"]["images"]
    assert "spare.csv" not in capsys.readouterr().err


def test_missing_files_name_what_needs_the_pixels(tmp_path, capsys, monkeypatch):
    """When a claim needs pixels and the files are missing, the run's error says which steps and cells need them."""
    _data(tmp_path)
    spec = SPEC.replace("scorer judge", "operator light = lab_shift(channel: L) doses -5, 0, 5\nscorer judge") + (
        'hypothesis F1 "light" {\n  fidelity_index(light) > 0 on rated for aesthetic\n}\n')
    (tmp_path / "a.audit").write_text(spec, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert cli.main(["run", "a.audit", "--out", "out", "--device", "cpu", "--quiet"]) != Exit.OK
    err = capsys.readouterr().err
    assert "the plan decodes this arm's images for operator light" in err
    assert "F1/aesthetic/rated" in err
