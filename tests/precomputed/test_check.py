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
