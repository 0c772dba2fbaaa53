"""A pairs audit over a JSON list of records, four scores per pair, no image files.

Each record holds ImageReward-style scores of the original image and of a
distorted one, each under the original prompt and under a wide-spectrum
prompt. Two precomputed scorers (one per prompt) read them; pairwise_accuracy
and mean_gap under either prompt must equal a hand computation, through
stats.cross directly and through the registered estimators.
"""

from __future__ import annotations

import math
import statistics

import numpy as np
import pandas as pd
import pytest

from scoreaudit.compiler.coverage import coverage_diagnostics, missing_cells, source_diagnostics
from scoreaudit.compiler.ir import StatCallIR
from scoreaudit.runtime.precomputed import (imageless_rows, load_tables, manifest_scores, precomputed_scores,
                                            read_records)
from scoreaudit.stats import cross

from precomputed_helpers import check_spec, write_table

# (pair id, original image under original prompt, distorted under original,
#           original image under wide prompt,   distorted under wide)
PAIRS = [
    ("p1", 0.9, 0.1, 0.3, 0.6),
    ("p2", 0.5, 0.5, 0.2, 0.2),   # ties under both prompts
    ("p3", 0.2, 0.4, 0.1, 0.5),
    ("p4", 1.0, 0.0, 0.8, 0.4),
    ("p5", 0.7, 0.3, 0.4, 0.9),
    ("p6", 0.6, None, -0.2, 0.1),  # the distorted image has no score under the original prompt
]

SPEC = '''audit "Wide-spectrum prompt check" { version: 1 seed: 3 scale: sd }
scorer ir_orig = precomputed(preferred: ir_orig_img_orig_prompt, other: ir_dist_img_orig_prompt)
scorer ir_wide = precomputed(preferred: ir_orig_img_wide_prompt, other: ir_dist_img_wide_prompt)
arm wide = pairs("data/wide.json", preferred: original, other: distorted, prompt: prompt, images: false)
hypothesis W1 "The scorer prefers the original image" {
  pairwise_accuracy() > 0.5 on wide for each scorer
}
hypothesis W2 "By a margin" {
  mean_gap() > 0 on wide for each scorer
}
'''


def records() -> list[dict]:
    return [{"id": pid, "prompt": f"a photo, pair {pid}", "wide_prompt": "a photo, any style",
             "ir_orig_img_orig_prompt": oo, "ir_dist_img_orig_prompt": do,
             "ir_orig_img_wide_prompt": ow, "ir_dist_img_wide_prompt": dw} for pid, oo, do, ow, dw in PAIRS]


def hand(prompt: str) -> tuple[float, float, int]:
    """(accuracy, mean gap in SD units, usable pairs), computed without numpy."""
    col = {"orig": (1, 2), "wide": (3, 4)}[prompt]
    pref = [p[col[0]] for p in PAIRS]
    other = [p[col[1]] for p in PAIRS]
    both = [(a, b) for a, b in zip(pref, other) if a is not None and b is not None]
    wins = sum(1 for a, b in both if a > b)
    ties = sum(1 for a, b in both if a == b)
    every = [x for x in pref + other if x is not None]
    sd = statistics.stdev(every)  # the SD of all the scorer's scores on the arm (both sides)
    gap = sum(a - b for a, b in both) / len(both) / sd
    return (wins + 0.5 * ties) / len(both), gap, len(both)


@pytest.fixture
def audit(folder):
    write_table(folder / "data" / "wide.json", records())
    ir = check_spec(folder, SPEC)
    rows, diags = imageless_rows(ir, "wide", read_records(folder / "data" / "wide.json"))
    assert diags == []
    return folder, ir, rows


def sides(scores: pd.DataFrame, scorer: str) -> tuple[np.ndarray, np.ndarray]:
    s = scores[scores["scorer"] == scorer].set_index("image_id")["score"]
    ids = sorted({i.split(":")[0] for i in s.index})
    return (np.array([s[f"{i}:preferred"] for i in ids]), np.array([s[f"{i}:other"] for i in ids]))


def test_hand_numbers_are_what_the_design_says():
    assert hand("orig")[0] == pytest.approx(0.7) and hand("orig")[2] == 5   # 3 wins, 1 tie, 1 loss
    assert hand("wide")[0] == pytest.approx(1.5 / 6)                         # 1 win, 1 tie, 4 losses


def test_rows_are_two_images_per_pair(audit):
    _, _, rows = audit
    assert [r.image_id for r in rows[:4]] == ["p1:preferred", "p1:other", "p2:preferred", "p2:other"]
    assert {r.cluster for r in rows} == {p[0] for p in PAIRS} and rows[0].pair_id == "p1"


@pytest.mark.parametrize("scorer,prompt", [("ir_orig", "orig"), ("ir_wide", "wide")])
def test_accuracy_equals_the_hand_computation(audit, scorer, prompt):  # the gap: test_registered_estimators_agree
    _, ir, rows = audit
    scores, excl = manifest_scores(ir, "wide", rows)
    assert list(scores.columns) == ["arm", "image_id", "operator", "dose", "scorer", "score"]
    assert set(scores["operator"]) == {"original"} and set(scores["dose"]) == {0.0}
    pref, other = sides(scores, scorer)
    acc_h, _, n = hand(prompt)
    acc = cross.pairwise_accuracy(pref, other)
    assert acc.estimate == pytest.approx(acc_h, abs=1e-12) and acc.detail["n"] == n


def test_the_missing_score_is_an_exclusion_not_a_silent_drop(audit):
    _, ir, rows = audit
    scores, excl = manifest_scores(ir, "wide", rows)
    assert [(e.arm, e.image_id, e.row, e.stage) for e in excl] == [("wide", "p6:other", 6, "score")]
    assert "ir_dist_img_orig_prompt" in excl[0].reason and "(ir_orig, row 6)" in excl[0].reason
    cell = scores[(scores["image_id"] == "p6:other") & (scores["scorer"] == "ir_orig")]["score"]
    assert len(cell) == 1 and math.isnan(cell.iat[0])


def images_table(rows) -> pd.DataFrame:
    return pd.DataFrame([{"arm": r.arm, "image_id": r.image_id, "row": r.row, "cluster": r.cluster,
                          "side": r.side, "pair_id": r.pair_id} for r in rows])


@pytest.mark.parametrize("scorer,prompt", [("ir_orig", "orig"), ("ir_wide", "wide")])
def test_registered_estimators_agree(audit, scorer, prompt):
    from scoreaudit.stats import engine  # noqa: F401  (registers every estimator)
    from scoreaudit.stats.context import StatContext

    _, ir, rows = audit
    scores, _ = manifest_scores(ir, "wide", rows)
    ctx = StatContext(ir, {"images": images_table(rows), "scores": scores}, n_boot=50)
    acc_h, gap_h, _ = hand(prompt)
    assert ctx.evaluate(StatCallIR(name="pairwise_accuracy", version="1"), "wide", scorer).estimate == \
        pytest.approx(acc_h, abs=1e-12)
    assert ctx.evaluate(StatCallIR(name="mean_gap", version="1"), "wide", scorer).estimate == \
        pytest.approx(gap_h, abs=1e-12)


def test_the_same_scores_as_a_long_table(folder):
    """The four scores as a JSON-lines long table (pair id + side) give the same rows."""
    long = []
    for pid, oo, do, ow, dw in PAIRS:
        for side, s_orig, s_wide in (("preferred", oo, ow), ("other", do, dw)):
            long.append({"id": pid, "side": side, "scorer": "ir_orig", "score": s_orig})
            long.append({"id": pid, "side": side, "scorer": "ir_wide", "score": s_wide})
    write_table(folder / "results" / "ir.jsonl", long)
    write_table(folder / "data" / "wide.json", [{"id": p[0]} for p in PAIRS])
    ir = check_spec(folder, '''audit "w" { version: 1 seed: 3 }
scorer ir_orig = precomputed()
scorer ir_wide = precomputed()
arm wide = pairs("data/wide.json", preferred: original, other: distorted, images: false, scores: "results/ir.jsonl")
hypothesis W1 "t" {
  pairwise_accuracy() > 0.5 on wide for each scorer
}
''')
    rows, _ = imageless_rows(ir, "wide", read_records(folder / "data" / "wide.json"))
    ids = [r.image_id for r in rows]
    tables = load_tables(ir, folder, root=folder).matched(ir, {"wide": ids})
    assert [e.reason for e in tables.exclusions] == [
        "results/ir.jsonl row 23: the score is missing for scorer ir_orig, original image; fix the value or "
        "remove the row (the image is left out wherever this score is needed)"]
    assert missing_cells(ir, {"wide": ids}, tables) == [] and coverage_diagnostics(ir, {"wide": ids}, tables) == []
    scores = precomputed_scores(ir, "wide", ids, tables)
    for scorer, prompt in (("ir_orig", "orig"), ("ir_wide", "wide")):
        pref, other = sides(scores, scorer)
        assert cross.pairwise_accuracy(pref, other).estimate == pytest.approx(hand(prompt)[0], abs=1e-12)
    # identical to the manifest-column route
    write_table(folder / "data" / "wide.json", records())
    ir2 = check_spec(folder, SPEC, "b.audit")
    rows2, _ = imageless_rows(ir2, "wide", read_records(folder / "data" / "wide.json"))
    via_manifest, _ = manifest_scores(ir2, "wide", rows2)
    pd.testing.assert_frame_equal(scores, via_manifest)


def test_a_model_scorer_on_an_imageless_arm_is_e0805(folder):
    write_table(folder / "data" / "wide.json", records())
    ir = check_spec(folder, SPEC.replace("scorer ir_wide", 'scorer pick = pickscore(prompt: "a photo")\n'
                                                         "scorer ir_wide"))
    diags = source_diagnostics(ir, None)
    assert [(d.code, d.message) for d in diags] == [
        ("E0805", "arm 'wide' has no image files (`images: false`), but scorer 'pick' (pickscore) needs the images "
                  "to score them (needed by W1/pick/wide, W2/pick/wide)")]
    assert "`for s1, s2`" in diags[0].help
