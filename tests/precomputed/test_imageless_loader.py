"""The manifest loader on `pairs(..., images: false)` arms and JSON manifests agrees with what
`scoreaudit check` reads (runtime.precomputed.imageless_rows): same ids, clusters and errors."""

from __future__ import annotations

import pytest

from scoreaudit.runtime.manifests import load_manifest
from scoreaudit.runtime.precomputed import imageless_rows, read_records

from precomputed_helpers import check_spec, write_table

SPEC = '''audit "pairs" {{ version: 1 }}
scorer a = precomputed(preferred: sa, other: so)
arm p = pairs("data/p.{ext}", preferred: original, other: distorted, images: false{extra})
hypothesis H "t" {{
  pairwise_accuracy() > 0.5 on p for a
}}
'''


@pytest.mark.parametrize("ext", ["json", "jsonl", "csv", "parquet"])
def test_same_records_as_the_check(folder, ext):
    rows = [{"id": "7", "grp": "g1", "sa": 1.0, "so": 0.5}, {"id": "08", "grp": "g1", "sa": 0.2, "so": 0.4},
            {"id": "x", "grp": None, "sa": 0.1, "so": 0.0}]
    write_table(folder / "data" / f"p.{ext}", rows)
    ir = check_spec(folder, SPEC.format(ext=ext, extra=", cluster: grp"))
    res = load_manifest(ir.arms["p"], folder, columns=["sa", "so"], root=folder)
    assert res.ok and res.exclusions == (), [d.message for d in res.diagnostics]
    model, diags = imageless_rows(ir, "p", read_records(folder / "data" / f"p.{ext}"))
    assert diags == []
    got = [(r.image_id, r.row, r.cluster, r.side, r.pair_id, r.path) for r in res.records]
    assert got == [(m.image_id, m.row, m.cluster, m.side, m.pair_id, None) for m in model]
    assert [g[0] for g in got] == ["7:preferred", "7:other", "08:preferred", "08:other", "x:preferred", "x:other"]
    assert [g[2] for g in got][-2:] == ["x", "x"]  # no cluster value: the pair is its own cluster


def test_duplicate_and_missing_ids_are_errors(folder):
    write_table(folder / "data" / "p.json", [{"id": "a", "sa": 1, "so": 0}, {"id": "a", "sa": 1, "so": 0},
                                             {"id": None, "sa": 1, "so": 0}])
    ir = check_spec(folder, SPEC.format(ext="json", extra=""))
    res = load_manifest(ir.arms["p"], folder, columns=["sa", "so"], root=folder)
    assert sorted(d.code for d in res.diagnostics) == ["E0703", "E0708"]
    assert any("row 1 and row 2" in d.message for d in res.diagnostics)


def test_score_columns_are_still_required(folder):
    write_table(folder / "data" / "p.json", [{"id": "a", "sa": 1, "sx": 0}])
    ir = check_spec(folder, SPEC.format(ext="json", extra=""))
    res = load_manifest(ir.arms["p"], folder, columns=["sa", "so"], root=folder)
    assert [d.code for d in res.diagnostics] == ["E0702"]
    assert "'so'" in res.diagnostics[0].message


def test_a_broken_json_manifest_is_e0701(folder):
    (folder / "data").mkdir()
    (folder / "data" / "p.json").write_text('[{"id": "a", "sa": 1,}]', encoding="utf-8")
    ir = check_spec(folder, SPEC.format(ext="json", extra=""))
    res = load_manifest(ir.arms["p"], folder, columns=["sa", "so"], root=folder)
    assert [d.code for d in res.diagnostics] == ["E0701"]
    assert "not valid JSON" in res.diagnostics[0].message and "line 1" in res.diagnostics[0].message
