"""The executor's merge helpers: rows in the bundle's layout, and the same tables in → the same statistics out."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pandas as pd
import pytest

from scoreaudit.compiler.ir import ORIGINAL
from scoreaudit.runtime.precomputed import (load_tables, manifest_scores, precomputed_measures, precomputed_scores,
                                            provenance)
from scoreaudit.runtime.tables import Tables, write_tables

from precomputed_helpers import check_spec, within_spec, write_table

DOSES = (-10, -5, 0, 5, 10)


def test_identity_and_original_are_filled_from_each_other(folder):
    ir = within_spec(folder)
    rows = [{"id": "a", "operator": "light", "dose": d, "scorer": "ir", "score": float(d)} for d in DOSES]
    rows += [{"id": "b", "operator": "original", "scorer": "ir", "score": 7.0}]
    rows += [{"id": "b", "operator": "light", "dose": d, "scorer": "ir", "score": 1.0} for d in (-10, -5, 5, 10)]
    write_table(folder / "results" / "scores.csv", rows)
    tables = load_tables(ir, folder).matched(ir, {"real": ["a", "b"]})
    out = precomputed_scores(ir, "real", ["a", "b"], tables)
    assert list(out.columns) == ["arm", "image_id", "operator", "dose", "scorer", "score"]
    assert out["dose"].dtype == np.float64 and out["score"].dtype == np.float64
    got = {(r.image_id, r.operator, r.dose): r.score for r in out.itertuples()}
    assert got[("a", ORIGINAL, 0.0)] == 0.0          # from light's identity dose
    assert got[("a", "light_rest", 0.0)] == 0.0      # the placebo's identity dose too
    assert got[("b", "light", 0.0)] == 7.0           # from the original
    assert got[("b", "light_rest", 0.0)] == 7.0
    assert len(out) == 5 + 2 + 5 + 2
    keys = list(zip(out["arm"], out["image_id"], out["operator"], out["dose"], out["scorer"]))
    assert keys == sorted(keys)  # spec/bundle.md sort order


def test_only_the_arm_and_the_images_asked_for(folder):
    ir = within_spec(folder)
    write_table(folder / "results" / "scores.csv", [{"id": i, "scorer": "ir", "score": 1.0} for i in "abc"])
    tables = load_tables(ir, folder)
    out = precomputed_scores(ir, "real", ["a", "c"], tables)
    assert list(zip(out["image_id"], out["operator"])) == [  # the original, and each identity dose from it
        ("a", "light"), ("a", "light_rest"), ("a", ORIGINAL), ("c", "light"), ("c", "light_rest"), ("c", ORIGINAL)]
    assert len(precomputed_scores(ir, "other_arm", None, tables)) == 0


def test_measures_take_their_role_from_the_audit(folder):
    ir = within_spec(folder, arm_extra=', measures: "m.jsonl"')
    write_table(folder / "m.jsonl", [{"id": "a", "operator": "light", "dose": 5, "measure": n, "value": 1.0}
                                     for n in ("ita", "clip", "leakage")])
    out = precomputed_measures(ir, "real", ["a"], load_tables(ir, folder))
    assert list(out.columns) == ["arm", "image_id", "operator", "dose", "name", "role", "value"]
    assert dict(zip(out["name"], out["role"])) == {"ita": "measure", "clip": "covariate", "leakage": "builtin"}


def test_manifest_scores_on_an_images_arm_repeat_over_doses(folder):
    ir = check_spec(folder, '''audit "t" { version: 1 }
scorer human = precomputed(column: rating)
arm rated = images("d", manifest: "d.csv")
operator blur = gaussian_blur() doses 0, 1, 2
''')

    class Rec:
        def __init__(self, i, v):
            self.image_id, self.row, self.side, self.columns = i, 1, None, {"rating": v}

    out, excl = manifest_scores(ir, "rated", [Rec("a", "3.5"), Rec("b", "")])
    a = out[out["image_id"] == "a"]
    assert list(zip(a["operator"], a["dose"], a["score"])) == [
        ("blur", 0.0, 3.5), ("blur", 1.0, 3.5), ("blur", 2.0, 3.5), (ORIGINAL, 0.0, 3.5)]
    assert [e.image_id for e in excl] == ["b"] and math.isnan(out[out["image_id"] == "b"]["score"].iat[0])
    assert manifest_scores(ir, "rated", [Rec("a", 1)], skip={("rated", "human")})[0].empty


# ---------------------------------------------------------------- same tables in, same statistics out

MORE = '''hypothesis H3 "t" {
  placebo_ratio(light, light_rest) within [0.5, 2] on real for ir
}
hypothesis B1 "t" {
  abs(attribute_effect(light, measure: ita, controlling: clip)) < 0.1 on real for ir
}
hypothesis H5 "t" {
  abs(net_drift(best2)) < 1.0 on real for ir
}
hypothesis H6 "t" {
  homogeneous(fidelity_index(light), by: race) on real for ir
}
hypothesis A1 "t" {
  spearman(score, column: rating) > 0.1 on real for ir
}
validate ita under light: r2 >= 0.5
'''


def runtime_bundle(ir, out_dir, n=24):
    """Tables as the runtime writes them (spec/bundle.md), from a planted response with one NaN score."""
    rng = np.random.default_rng(11)
    t = Tables()
    for k in range(n):
        iid = f"img_{k:03d}"
        t.add_image(arm="real", image_id=iid, row=k + 1, cluster=f"c{k // 3}", content_hash=f"h{k}", width=8,
                    height=8, manifest={"race": "ab"[k % 2], "rating": float(rng.normal())})
        base, ita0 = rng.normal(), 40 + 5 * rng.normal()
        t.add_score("real", iid, ORIGINAL, 0.0, "ir", base)
        for name in ("ita", "clip"):
            t.add_measure("real", iid, ORIGINAL, 0.0, name, "measure" if name == "ita" else "covariate",
                          ita0 if name == "ita" else 0.0)
        for op, f in (("light", 0.3), ("light_rest", 0.1)):
            for d in DOSES:
                u = d / 10
                s = base if d == 0 else base - f * u * u + 0.05 * u + 0.1 * rng.normal()
                if (k, op, d) == (5, "light", 10):
                    s = float("nan")  # a failed score: NaN row, as the runtime writes it
                t.add_score("real", iid, op, float(d), "ir", s)
                t.add_measure("real", iid, op, float(d), "ita", "measure", ita0 + 0.8 * d + 0.2 * rng.normal())
                t.add_measure("real", iid, op, float(d), "clip", "covariate", abs(d) * 0.01 * rng.random())
                t.add_measure("real", iid, op, float(d), "leakage", "builtin", 0.0 if op == "light" else 0.5)
    return write_tables(t, out_dir)


def estimates(ir, tables):
    from scoreaudit.stats import engine  # noqa: F401  (registers every estimator)
    from scoreaudit.stats.context import StatContext
    from scoreaudit.stats.validity import validations

    ctx = StatContext(ir, tables, n_boot=200)
    out = {}
    for cell in ir.cells():
        e = ctx.evaluate(cell.statistic, cell.arm, cell.scorer)
        out[cell.id] = (e.estimate, e.interval(0.9), e.undefined, e.claim_outcome)
    out["validity"] = [{k: v for k, v in d.items()} for d in validations(ctx)]
    return out


def test_same_tables_in_same_statistics_out(folder):
    ir = within_spec(folder, arm_extra=', strata: race, scores: "results/scores.parquet", '
                                       'measures: "results/measures.parquet"', more=MORE)
    paths = runtime_bundle(ir, folder / "bundle" / "tables")
    (folder / "results").mkdir()
    shutil.copy(paths["scores"], folder / "results" / "scores.parquet")
    shutil.copy(paths["measures"], folder / "results" / "measures.parquet")
    runtime = {k: pd.read_parquet(paths[k]) for k in ("images", "scores", "measures")}
    ids = list(runtime["images"]["image_id"])

    tables = load_tables(ir, folder, root=folder).matched(ir, {"real": ids})
    assert not [d for d in tables.diagnostics if d.is_error]
    assert [(e.image_id, e.stage) for e in tables.exclusions] == [("img_005", "score")]  # the NaN score
    from scoreaudit.compiler.coverage import coverage_diagnostics

    assert coverage_diagnostics(ir, {"real": ids}, tables) == []

    scores = precomputed_scores(ir, "real", ids, tables)
    measures = precomputed_measures(ir, "real", ids, tables)
    pd.testing.assert_frame_equal(scores, runtime["scores"], check_dtype=True)
    pd.testing.assert_frame_equal(measures, runtime["measures"], check_dtype=True)

    a = estimates(ir, runtime)
    b = estimates(ir, {"images": runtime["images"], "scores": scores, "measures": measures})
    assert a.keys() == b.keys() and len(a) == 7
    for key in a:
        assert repr(a[key]) == repr(b[key]), key  # bit for bit, NaN included
    assert all(np.isfinite(a[c][0]) for c in ("H1/ir/real", "H3/ir/real", "B1/ir/real", "H5/ir/real"))

    prov = provenance(tables)
    assert [(p["file"], p["provides"], p["arm"], p["names"]) for p in prov] == [
        ("results/measures.parquet", "measures", "real", ["clip", "ita", "leakage"]),
        ("results/scores.parquet", "scores", "real", ["ir"])]
    import hashlib

    assert prov[1]["sha256"] == hashlib.sha256(paths["scores"].read_bytes()).hexdigest()


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_the_same_through_text_formats(folder, fmt):
    """A bundle's scores exported as CSV / JSON lines read back to the same floats (repr round-trips)."""
    ir = within_spec(folder, arm_extra=f', scores: "results/scores.{fmt}"')
    paths = runtime_bundle(ir, folder / "bundle" / "tables", n=6)
    runtime = pd.read_parquet(paths["scores"])
    rows = [{"arm": r.arm, "image_id": r.image_id, "operator": r.operator, "dose": r.dose, "scorer": r.scorer,
             "score": repr(r.score) if fmt == "csv" else (None if math.isnan(r.score) else r.score)}
            for r in runtime.itertuples()]
    write_table(folder / "results" / f"scores.{fmt}", rows)
    ids = sorted(set(runtime["image_id"]))
    out = precomputed_scores(ir, "real", ids, load_tables(ir, folder).matched(ir, {"real": ids}))
    pd.testing.assert_frame_equal(out, runtime)
