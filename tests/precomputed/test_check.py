"""`check_precomputed`: the one call `scoreaudit check` makes, on a spec folder with manifests and tables."""

from __future__ import annotations

import numpy as np
from PIL import Image

from scoreaudit.runtime.precomputed import check_precomputed, manifest_ids, uses_precomputed

from precomputed_helpers import check_spec, within_spec, write_table

IDS = ["img_001", "img_002", "img_003"]


def images_arm(folder, ids=IDS):
    (folder / "data" / "real").mkdir(parents=True)
    for i in ids:
        Image.fromarray(np.full((4, 4, 3), 128, np.uint8)).save(folder / "data" / "real" / f"{i}.png")
    write_table(folder / "data" / "real.csv", [{"id": i, "path": f"{i}.png"} for i in ids])


def test_missing_cell_fails_the_check(folder):
    images_arm(folder)
    ir = within_spec(folder)
    rows = [{"id": i, "operator": "light", "dose": d, "scorer": "ir", "score": 0.5}
            for i in IDS for d in (-10, -5, 0, 5, 10) if (i, d) != ("img_002", 10)]
    write_table(folder / "results" / "scores.csv", rows)
    assert manifest_ids(ir, folder, root=folder) == {"real": IDS}
    diags, tables = check_precomputed(ir, folder, root=folder)
    assert [(d.code, d.message) for d in diags] == [
        ("E0802", "scores table results/scores.csv has no score for image img_002, operator light, dose 10, "
                  "scorer ir")]
    assert tables is not None and len(tables.scores) == 14


def test_unreadable_table_reports_only_that(folder):
    images_arm(folder)
    ir = within_spec(folder)
    diags, _ = check_precomputed(ir, folder, root=folder)
    assert [d.code for d in diags] == ["E0801"]


def test_plain_audits_are_not_read(folder):
    ir = check_spec(folder, '''audit "t" { version: 1 }
scorer s = sharpness()
arm a = images("nowhere", manifest: "nowhere.csv")
''')
    assert not uses_precomputed(ir) and check_precomputed(ir, folder) == ([], None)


def test_imageless_pairs_check_clean(folder):
    write_table(folder / "d.json", [{"id": "p1", "a": 1, "b": 0}, {"id": "p2", "a": 0, "b": 1}])
    ir = check_spec(folder, '''audit "t" { version: 1 }
scorer s = precomputed(preferred: a, other: b)
arm w = pairs("d.json", preferred: x, other: y, images: false)
hypothesis W "t" {
  pairwise_accuracy() > 0.5 on w for each scorer
}
''')
    assert manifest_ids(ir, folder) == {"w": ["p1:preferred", "p1:other", "p2:preferred", "p2:other"]}
    assert check_precomputed(ir, folder)[0] == []


def test_a_misspelled_operator_column_is_named_by_check_with_did_you_mean(folder, capsys):
    """`operater` instead of `operator`: the optional column would be missing, every row read as an original."""
    from scoreaudit import api, cli
    from scoreaudit.exitcodes import Exit

    images_arm(folder)
    within_spec(folder)
    rows = [{"id": i, "operater": "light", "dose": d, "scorer": "ir", "score": 0.5}
            for i in IDS for d in (-10, -5, 0, 5, 10)]
    write_table(folder / "results" / "scores.csv", rows)
    checked = api.check(folder / "a.audit")
    named = [d for d in checked.diagnostics if d.code == "E0803"]
    assert [(d.message, d.help) for d in named] == [(
        "scores table results/scores.csv has no 'operator' column (the operator of each row)",
        "did you mean 'operater'? Rename the column to 'operator' (without it every row is read as a score "
        "of the unaltered image)")]
    assert not checked.ok
    assert cli.main(["check", str(folder / "a.audit")]) == Exit.SPEC
    err = capsys.readouterr().err
    assert "no 'operator' column" in err and "did you mean 'operater'?" in err
    # the fix passes; other spellings of the same column (case) are named too
    def renamed(name):
        return [{(name if k == "operater" else k): v for k, v in r.items()} for r in rows]

    write_table(folder / "results" / "scores.csv", renamed("operator"))
    assert not [d for d in api.check(folder / "a.audit").diagnostics if d.code == "E0803"]
    write_table(folder / "results" / "scores.csv", renamed("Operators"))
    assert [d.help.split("?")[0] for d in api.check(folder / "a.audit").diagnostics
            if d.code == "E0803"] == ["did you mean 'Operators'"]


def test_a_table_without_any_operator_like_column_is_a_table_of_originals(folder):
    """No near-miss, no error: a table of original scores needs no operator column."""
    from scoreaudit.runtime.precomputed import read_long_table

    write_table(folder / "t.csv", [{"id": "a", "scorer": "ir", "score": 1, "operation_id": 7, "notes": "x"}])
    t = read_long_table("t.csv", "scores", spec_dir=folder, arm="real")
    assert t.ok and list(t.frame["operator"]) == ["original"]
