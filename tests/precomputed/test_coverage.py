"""Coverage: which cells the claims read, and which of them a table-provided scorer or measure lacks."""

from __future__ import annotations

import pytest

from scoreaudit.compiler.coverage import (LIMIT, MissingCell, Reads, coverage_diagnostics, measure_needs,
                                          missing_cells, reads, score_needs)
from scoreaudit.diagnostics import render
from scoreaudit.runtime.precomputed import load_tables

from precomputed_helpers import check_spec, within_spec, write_table

DOSES = (-10, -5, 0, 5, 10)
IDS = ["img_001", "img_002", "img_003"]


def score_rows(ids=IDS, operators=("light",), scorer="ir", skip=(), original=True):
    rows = []
    for i in ids:
        if original and (i, "original", 0) not in skip:
            rows.append({"id": i, "operator": "original", "dose": 0, "scorer": scorer, "score": 1.0})
        for op in operators:
            for d in DOSES:
                if (i, op, d) not in skip:
                    rows.append({"id": i, "operator": op, "dose": d, "scorer": scorer, "score": 1.0 + d / 10})
    return rows


def tables_for(folder, ir, ids=IDS, arm="real"):
    return load_tables(ir, folder, root=folder).matched(ir, {arm: ids})


def test_a_missing_image_dose_cell_is_named(folder):
    ir = within_spec(folder)
    write_table(folder / "results" / "scores.csv", score_rows(skip={("img_003", "light", 5)}))
    tables = tables_for(folder, ir)
    assert missing_cells(ir, {"real": IDS}, tables) == [MissingCell("real", "img_003", "light", 5.0, "ir")]
    (d,) = coverage_diagnostics(ir, {"real": IDS}, tables)
    assert render(d) == (
        "results/scores.csv: error[E0802]: scores table results/scores.csv has no score for image img_003, "
        "operator light, dose 5, scorer ir\n"
        "  = note: image img_003 is in arm 'real'; needed by H1/ir/real\n"
        "  = help: add a row (id img_003, operator light, dose 5, scorer ir, score ...) to results/scores.csv, "
        "or remove the claims that need it: the audit does not compute what a table provides")


def test_complete_table_is_clean(folder):
    ir = within_spec(folder)
    write_table(folder / "results" / "scores.csv", score_rows())
    assert coverage_diagnostics(ir, {"real": IDS}, tables_for(folder, ir)) == []


def test_an_excluded_cell_is_present_not_missing(folder):
    ir = within_spec(folder)
    rows = score_rows()
    rows[3]["score"] = "nan"
    write_table(folder / "results" / "scores.csv", rows)
    tables = tables_for(folder, ir)
    assert missing_cells(ir, {"real": IDS}, tables) == [] and len(tables.exclusions) == 1


def test_identity_dose_and_original_cover_each_other(folder):
    more = 'hypothesis A1 "t" {\n  spearman(score, column: rating) > 0.5 on real for ir\n}\n'
    ir = within_spec(folder, more=more)
    # no `original` rows: the identity dose of light stands for the unaltered image
    write_table(folder / "results" / "scores.csv", score_rows(original=False))
    assert missing_cells(ir, {"real": IDS}, tables_for(folder, ir)) == []
    # no identity-dose rows: the original stands for light at dose 0
    write_table(folder / "results" / "scores.csv", score_rows(skip={(i, "light", 0) for i in IDS}))
    assert missing_cells(ir, {"real": IDS}, tables_for(folder, ir)) == []
    # neither: both the original and the identity dose are missing for img_002
    write_table(folder / "results" / "scores.csv", score_rows(skip={("img_002", "light", 0),
                                                                    ("img_002", "original", 0)}))
    assert missing_cells(ir, {"real": IDS}, tables_for(folder, ir)) == [
        MissingCell("real", "img_002", "light", 0.0, "ir"), MissingCell("real", "img_002", "original", 0.0, "ir")]


def test_placebo_is_read_at_every_dose(folder):
    more = 'hypothesis H3 "t" {\n  placebo_ratio(light, light_rest) within [0.5, 2] on real for ir\n}\n'
    ir = within_spec(folder, more=more)
    write_table(folder / "results" / "scores.csv",
                score_rows(operators=("light", "light_rest"), skip={("img_001", "light_rest", -10)}))
    assert missing_cells(ir, {"real": IDS}, tables_for(folder, ir)) == [
        MissingCell("real", "img_001", "light_rest", -10.0, "ir")]


def test_a_model_scorer_is_computed_unless_a_table_gives_it(folder):
    more = 'hypothesis H9 "t" {\n  fidelity_index(light) > 0 on real for pick\n}\n'
    ir = within_spec(folder, more=more)
    write_table(folder / "results" / "scores.csv", score_rows())
    assert missing_cells(ir, {"real": IDS}, tables_for(folder, ir)) == []  # pick: the runtime scores it
    write_table(folder / "results" / "scores.csv", score_rows() + score_rows(ids=IDS[:2], scorer="pick"))
    got = missing_cells(ir, {"real": IDS}, tables_for(folder, ir))
    assert got == [MissingCell("real", "img_003", op, float(d), "pick")
                   for op, d in [("light", -10), ("light", -5), ("light", 0), ("light", 5), ("light", 10)]]


def test_precomputed_without_rows_is_e0804(folder):
    ir = within_spec(folder, arm_extra="")
    (d,) = coverage_diagnostics(ir, {"real": IDS}, tables_for(folder, ir))
    assert d.code == "E0804"
    assert d.message == ("scorer 'ir' = precomputed() takes its scores from a table, but no scores table has rows "
                         "for scorer 'ir' on arm 'real' (needed by H1/ir/real)")
    assert d.help.startswith("add `scores: \"PATH\"` to arm 'real'")


def test_e0804_suggests_the_table_name(folder):
    ir = within_spec(folder)
    write_table(folder / "results" / "scores.csv", score_rows(scorer="ir_1"))
    ir2 = check_spec(folder, (folder / "a.audit").read_text().replace("scorer pick = pickscore(prompt: \"a photo\")",
                                                                      "scorer ir_1 = precomputed()"), "b.audit")
    tables = tables_for(folder, ir2)
    diags = coverage_diagnostics(ir2, {"real": IDS}, tables)
    assert [d.code for d in diags] == ["E0804"]
    assert diags[0].help == "did you mean 'ir_1'? The table's scorer column must hold the scorer's name"
    assert diags[0].notes[0] == "scores tables give arm 'real' the scorers: ir_1"
    assert ir is not None


def test_many_missing_cells_are_summarised(folder):
    ids = [f"img_{i:03d}" for i in range(1, 8)]
    ir = within_spec(folder)
    write_table(folder / "results" / "scores.csv",
                score_rows(ids=ids, skip={(i, "light", d) for i in ids[1:] for d in (5, 10)}))
    missing = missing_cells(ir, {"real": ids}, tables_for(folder, ir, ids))
    assert len(missing) == 12
    diags = coverage_diagnostics(ir, {"real": ids}, tables_for(folder, ir, ids))
    assert len(diags) == LIMIT + 1 and all(d.code == "E0802" for d in diags)
    assert diags[0].message.endswith("image img_002, operator light, dose 5, scorer ir")
    last = diags[-1]
    assert last.message == ("scores table results/scores.csv lacks 2 more cells that the audit reads (12 in all)")
    assert last.notes == ("arm 'real', scorer ir: 2 cells (images img_007)",)


def test_measure_cells_of_attribute_effect_and_drift(folder):
    more = ('hypothesis B1 "t" {\n  abs(attribute_effect(light, measure: ita, controlling: clip)) < 0.1 on real for ir\n}\n'
            'hypothesis H5 "t" {\n  abs(net_drift(best2)) < 1.0 on real for ir\n}\n')
    ir = within_spec(folder, arm_extra=', scores: "results/scores.csv", measures: "results/measures.parquet"',
                     more=more)
    write_table(folder / "results" / "scores.csv", score_rows())
    m = [{"id": i, "operator": "light", "dose": d, "measure": name, "value": 40.0 + d}
         for i in IDS for d in DOSES for name in ("ita", "clip") if (i, d, name) != ("img_002", -5, "ita")]
    write_table(folder / "results" / "measures.parquet", m)
    tables = tables_for(folder, ir)
    assert missing_cells(ir, {"real": IDS}, tables, "measures") == [
        MissingCell("real", "img_002", "light", -5.0, "ita")]
    (d,) = coverage_diagnostics(ir, {"real": IDS}, tables)
    assert d.message == ("measures table results/measures.parquet has no value for image img_002, operator light, "
                         "dose -5, measure ita")
    assert d.notes == ("image img_002 is in arm 'real'; needed by B1/ir/real, H5/ir/real",)


def test_validation_and_verdict_reads(folder):
    more = "validate ita under light: r2 >= 0.5\n"
    ir = within_spec(folder, more=more)
    needs = measure_needs(ir)
    assert set(needs[("real", "ita")]) == {("light", float(d)) for d in DOSES}
    assert needs[("real", "ita")][("light", 5.0)] == ["validate ita under light"]
    assert set(needs[("real", "leakage")]) == {("light", float(d)) for d in DOSES}  # H1 is on the ita × light axis


@pytest.mark.parametrize("claim,expected", [
    ("fidelity_index(light) > 0", Reads(("light",))),
    ("curve(light, 5) > 0", Reads(("light",))),
    ("placebo_ratio(light, light_rest) within [0.5, 2]", Reads(("light", "light_rest"))),
    ("abs(attribute_effect(light, measure: ita, controlling: clip)) < 1", Reads(("light",),
                                                                             (("light", "ita"), ("light", "clip")))),
    ("abs(artifact_effect(light, clip)) < 1", Reads(("light",), (("light", "clip"),))),
    ("abs(net_drift(best2)) < 1", Reads(("light",), (("light", "ita"),), ("best2",))),
    ("homogeneous(fidelity_index(light), by: race)", Reads(("light",))),
    ("spearman(score, column: rating) > 0.5", Reads(("original",))),
])
def test_what_each_statistic_reads(folder, claim, expected):
    ir = within_spec(folder, arm_extra=", strata: race", more=f'hypothesis X "t" {{\n  {claim} on real for ir\n}}\n')
    (cell,) = [c for c in ir.cells() if c.hypothesis == "X"]
    assert reads(cell.statistic, ir) == expected


def test_transfers_reads_both_arms(folder):
    ir = check_spec(folder, '''audit "t" { version: 1 }
scorer ir = precomputed()
arm real = images("r", manifest: "r.csv", kind: real, scores: "s.csv")
arm syn = images("s", manifest: "s.csv", kind: synthetic)
operator light = lab_shift(channel: L) doses -5, 0, 5
hypothesis H4 "t" {
  transfers(asymmetry(light), from: syn, to: real) for each scorer
}
''')
    needs = score_needs(ir)
    assert set(needs) == {("real", "ir"), ("syn", "ir")}
    assert needs[("syn", "ir")][("light", 5.0)] == ["H4/ir/syn->real"]
    write_table(folder / "s.csv", [{"id": "a", "operator": "light", "dose": d, "scorer": "ir", "score": 0.0}
                                   for d in (-5, 0, 5)])
    tables = load_tables(ir, folder).matched(ir, {"real": ["a"], "syn": ["b"]})
    assert [d.code for d in coverage_diagnostics(ir, {"real": ["a"], "syn": ["b"]}, tables)] == ["E0804"]
