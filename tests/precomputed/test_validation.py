"""Each validation problem's exact message: structural ones are diagnostics, value ones exclusions."""

from __future__ import annotations

import math

import pytest

from scoreaudit.runtime.precomputed import combine, load_tables, read_long_table

from precomputed_helpers import within_spec, write_table

FIX = "fix the value or remove the row (the image is left out wherever this score is needed)"


def one(folder, rows, fmt="csv", kind="scores", arm="real", arms=None):
    write_table(folder / f"t.{fmt}", rows)
    return read_long_table(f"t.{fmt}", kind, spec_dir=folder, arm=arm, arms=arms)


# ---------------------------------------------------------------- columns (E0803)


def test_missing_column_with_did_you_mean(folder):
    t = one(folder, [{"id": "a", "scorers": "ir", "score": 1}])
    (d,) = t.diagnostics
    assert d.code == "E0803" and d.path == "t.csv"
    assert d.message == "scores table t.csv has no 'scorer' column (the scorer name)"
    assert d.help == "did you mean 'scorers'? Rename the column to 'scorer'"
    assert d.notes == ("the table's columns are: id, scorers, score",
                       "a scores table has columns id, operator, dose, scorer, score (+ optional arm, side)")
    assert len(t.frame) == 0 and not t.exclusions


def test_every_missing_column_is_reported(folder):
    t = one(folder, [{"image": "a", "val": 1}], kind="measures", arm=None)
    msgs = [d.message for d in t.diagnostics]
    assert msgs == ["measures table t.csv has no 'id' or 'image_id' column (the image id)",
                    "measures table t.csv has no 'measure' or 'name' column (the measure name)",
                    "measures table t.csv has no 'value' column (the value)",
                    "measures table t.csv has no 'arm' column (the arm of each row)"]
    assert t.diagnostics[0].help == "did you mean 'image'? Rename the column to 'id'"
    assert t.diagnostics[3].help == ("add a 'arm' column, or declare the table on its arm: "
                                     "`images(..., measures: \"t.csv\")`")


def test_operator_without_dose_column(folder):
    t = one(folder, [{"id": "a", "operator": "", "scorer": "ir", "score": 1},
                     {"id": "a", "operator": "light", "scorer": "ir", "score": 1}])
    (d,) = t.diagnostics
    assert d.message == "scores table t.csv has no 'dose' column (the operator's dose; row 2 name an operator)"
    # a table of originals only needs no dose column
    t = one(folder, [{"id": "a", "operator": "original", "scorer": "ir", "score": 1}])
    assert t.ok and list(t.frame["dose"]) == [0.0]


def test_aliases_of_a_results_bundle(folder):
    t = one(folder, [{"arm": "real", "image_id": "a", "operator": "light", "dose": 5, "name": "ita",
                      "role": "measure", "value": 3.5}], kind="measures")
    assert t.ok and list(t.frame[["image_id", "name", "value"]].iloc[0]) == ["a", "ita", 3.5]


# ---------------------------------------------------------------- values (exclusions)


@pytest.mark.parametrize("fmt,cell,problem", [
    ("csv", None, "is missing"),
    ("json", None, "is missing"),
    ("parquet", None, "is missing"),
    ("csv", "nan", "is NaN"),
    ("json", float("nan"), "is NaN"),
    ("parquet", float("nan"), "is NaN"),
    ("csv", "inf", "is infinite (+inf)"),
    ("json", float("-inf"), "is infinite (-inf)"),
    ("parquet", float("inf"), "is infinite (+inf)"),
    ("csv", "high", "is not a number ('high')"),
    ("json", "high", "is not a number ('high')"),
    ("json", True, "is not a number (true)"),
    ("json", [1], "is not a number ([1])"),
])
def test_bad_values_are_exclusions_and_nan_cells(folder, fmt, cell, problem):
    rows = [{"id": "a", "operator": "light", "dose": 5, "scorer": "ir", "score": 1.0},
            {"id": "b", "operator": "light", "dose": 5, "scorer": "ir", "score": cell}]
    t = one(folder, rows, fmt=fmt)
    assert t.ok
    (e,) = t.exclusions
    assert (e.arm, e.image_id, e.row, e.stage) == ("real", "b", 2, "score")
    assert e.reason == f"t.{fmt} row 2: the score {problem} for scorer ir, operator light, dose 5; {FIX}"
    values = dict(zip(t.frame["image_id"], t.frame["value"]))
    assert values["a"] == 1.0 and math.isnan(values["b"])  # present (so coverage holds) but unusable


def test_measures_value_message(folder):
    t = one(folder, [{"id": "a", "operator": "light", "dose": 0.5, "measure": "ita", "value": ""}], kind="measures")
    (e,) = t.exclusions
    assert e.stage == "measure"
    assert e.reason == ("t.csv row 1: the value is missing for measure ita, operator light, dose 0.5; fix the value "
                        "or remove the row (the image is left out wherever this value is needed)")


def test_duplicate_keys_name_both_rows(folder):
    t = one(folder, [{"id": "a", "operator": "light", "dose": 5, "scorer": "ir", "score": 1},
                     {"id": "b", "operator": "light", "dose": 5, "scorer": "ir", "score": 2},
                     {"id": "a", "operator": "light", "dose": 5.0, "scorer": "ir", "score": 1}])
    (e,) = t.exclusions
    assert (e.image_id, e.row) == ("a", 1)
    assert e.reason == ("t.csv rows 1 and 3: duplicate key: each gives the score of image a for scorer ir, "
                        "operator light, dose 5; none of them is used: keep one row")
    assert math.isnan(t.frame.set_index("image_id").loc["a", "value"]) and len(t.frame) == 2


def test_duplicates_across_files(folder):
    within_spec(folder)  # the spec folder layout; tables below
    write_table(folder / "all.csv", [{"arm": "real", "id": "a", "scorer": "ir", "score": 1}])
    write_table(folder / "arm.csv", [{"id": "a", "operator": "original", "dose": 0, "scorer": "ir", "score": 1}])
    ts = combine([read_long_table("all.csv", "scores", spec_dir=folder),
                  read_long_table("arm.csv", "scores", spec_dir=folder, arm="real")])
    (e,) = ts.exclusions
    assert e.reason == ("all.csv row 1 and arm.csv row 1 both give the score of image a for scorer ir, original "
                        "image; neither is used: keep it in one table")
    assert len(ts.scores) == 1 and math.isnan(ts.scores["value"].iat[0])


@pytest.mark.parametrize("row,reason", [
    ({"id": "", "scorer": "ir", "score": 1}, "t.csv row 1: the image id is missing; fill it in or remove the row"),
    ({"id": "a", "scorer": "", "score": 1}, "t.csv row 1: the scorer name is missing; fill it in or remove the row"),
    ({"id": "a", "operator": "light", "dose": "", "scorer": "ir", "score": 1},
     "t.csv row 1: the dose is missing (scorer ir, operator light); fill in the dose the operator was applied at"),
    ({"id": "a", "operator": "light", "dose": "five", "scorer": "ir", "score": 1},
     "t.csv row 1: the dose is not a number ('five') (scorer ir, operator light); fill in the dose the operator "
     "was applied at"),
    ({"id": "a", "operator": "original", "dose": 5, "scorer": "ir", "score": 1},
     "t.csv row 1: the original image has dose 0 (or none), but the dose is 5 (scorer ir); fix the operator or "
     "the dose"),
    ({"id": "a", "side": "left", "scorer": "ir", "score": 1},
     "t.csv row 1: side 'left' is not 'preferred' or 'other'; fix it or remove the row"),
])
def test_unkeyable_rows_are_exclusions(folder, row, reason):
    t = one(folder, [row])
    assert [e.reason for e in t.exclusions] == [reason]
    assert len(t.frame) == 0


def test_side_column_makes_pair_image_ids(folder):
    t = one(folder, [{"id": "p1", "side": "preferred", "scorer": "ir", "score": 1},
                     {"id": "p1", "side": "other", "scorer": "ir", "score": 0},
                     {"id": "p1:other", "side": "", "scorer": "hps", "score": 0}])
    assert list(t.frame["image_id"]) == ["p1:preferred", "p1:other", "p1:other"]


# ---------------------------------------------------------------- arms and the manifest (W0801/W0802)


def test_audit_table_rows_for_unknown_or_missing_arms(folder):
    t = one(folder, [{"arm": "reel", "id": "a", "scorer": "ir", "score": 1},
                     {"arm": "", "id": "a", "scorer": "ir", "score": 1},
                     {"arm": "real", "id": "a", "scorer": "ir", "score": 1}], arm=None, arms=["real", "synthetic"])
    assert len(t.frame) == 1
    ts = combine([t])
    assert [(d.code, d.message, d.help, d.notes) for d in ts.diagnostics] == [
        ("W0802", "1 row of table t.csv not used: arm 'reel' is not declared in the audit", "did you mean 'real'?",
         ("row 1",)),
        ("W0802", "1 row of table t.csv not used: they have no arm", "fill in the `arm` column", ("row 2",)),
    ]


def test_arm_table_rows_of_another_arm(folder):
    t = one(folder, [{"arm": "synthetic", "id": "a", "scorer": "ir", "score": 1}])
    (d,) = combine([t]).diagnostics
    assert d.message == ("1 row of table t.csv not used: their arm 'synthetic' is not 'real', the arm that "
                         "declares this table")


def test_ids_names_operators_and_doses_not_in_the_audit(folder):
    ir = within_spec(folder)
    rows = [{"id": f"img_{i}", "operator": "light", "dose": d, "scorer": "ir", "score": 1.0}
            for i in (1, 2) for d in (-10, -5, 0, 5, 10)]
    rows += [{"id": "img_9", "operator": "light", "dose": 5, "scorer": "ir", "score": 1.0},
             {"id": "img_1", "operator": "light", "dose": 5, "scorer": "hps", "score": 1.0},
             {"id": "img_1", "operator": "lihgt", "dose": 5, "scorer": "ir", "score": 1.0},
             {"id": "img_1", "operator": "light", "dose": 7, "scorer": "ir", "score": 1.0},
             {"id": "img_1", "operator": "light", "dose": 5.0000000000001, "scorer": "pick", "score": 2.0},
             {"id": "img_8", "operator": "light", "dose": "x", "scorer": "ir", "score": 1.0}]
    write_table(folder / "results" / "scores.csv", rows)
    ts = load_tables(ir, folder, root=folder).matched(ir, {"real": ["img_1", "img_2", "img_3"]})
    got = [(d.code, d.message, d.notes) for d in ts.diagnostics]
    assert got == [
        ("W0801", "1 row of table results/scores.csv not used: image id 'img_9' (did you mean 'img_3'?) is not in "
                  "the manifest of arm 'real'", ("row 11",)),
        ("W0802", "1 row of table results/scores.csv not used: scorer hps is not declared in the audit", ("row 12",)),
        ("W0802", "1 row of table results/scores.csv not used: operator 'lihgt' is not declared (did you mean "
                  "'light'?)", ("row 13",)),
        ("W0802", "1 row of table results/scores.csv not used: operator 'light' has no dose 7 (its doses: -10, -5, "
                  "0, 5, 10)", ("row 14",)),
        ("W0801", "1 table row with problems name image ids not in the manifest of arm 'real'; not used",
         ("results/scores.csv row 16: the dose is not a number ('x') (scorer ir, operator light); fill in the dose "
          "the operator was applied at",)),
    ]
    assert not ts.exclusions  # the only exclusion was about an image the arm does not have
    # the near-5 dose was snapped to the declared 5
    assert ts.scores[ts.scores["name"] == "pick"]["dose"].tolist() == [5.0]
    assert len(ts.scores) == 11
