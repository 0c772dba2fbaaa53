"""Auditability verdicts on planted data, and the bundle written by `analyse`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from stats_helpers import only_hypotheses, with_settings

from scoreaudit.stats.engine import analyse, compute
from scoreaudit.stats.planted import ArmShape, MeasureModel, planted_tables


def _verdicts(ir, shapes, model=MeasureModel()):
    res, _, _ = compute(ir, planted_tables(ir, shapes, {"*": {"fidelity": 0.5, "noise": 0.5}}, seed=4, model=model),
                        with_sections=False)
    return {(v["measure"], v["operator"]): v for v in res["verdicts"]}


def test_skin_shaped_audit_is_a_bias_measurement(skin_ir):
    v = _verdicts(only_hypotheses(skin_ir, "H1"), {"real": ArmShape(120, 1), "synthetic": ArmShape(10, 3)})
    assert v[("ita", "light")]["verdict"] == "bias-measurement"
    assert all(c["held"] for c in v[("ita", "light")]["conditions"])


def test_too_few_real_clusters_fails_only_the_real_data_condition(skin_ir):
    v = _verdicts(only_hypotheses(skin_ir, "H1"), {"real": ArmShape(40, 1), "synthetic": ArmShape(10, 3)})
    axis = v[("ita", "light")]
    assert axis["verdict"] == "stress-test-only" and axis["failed"] == ["real-data arm"]
    assert "40 usable clusters" in axis["conditions"][2]["detail"]


def test_body_warp_shaped_audit_is_a_stress_test_with_three_failures(body_ir):
    # width barely moves with the dose relative to its noise: validation fails (as on the seed paper's data)
    v = _verdicts(body_ir, {"bodies": ArmShape(30, 2)}, MeasureModel(slope=1.0, noise=0.5))
    axis = v[("width", "widen")]
    assert axis["verdict"] == "stress-test-only"
    assert axis["failed"] == ["pixel isolation", "measurement validity", "real-data arm"]
    iso, val, real = axis["conditions"]
    assert "geometric" in iso["detail"] and "r2 =" in val["detail"] and "no real arm" in real["detail"]


def test_cells_on_a_stress_test_axis_carry_the_qualifier(body_ir, skin_ir):
    tables = planted_tables(body_ir, {"bodies": ArmShape(30, 2)}, {"*": {"noise": 0.5}}, seed=4,
                            model=MeasureModel(slope=1.0, noise=0.5))
    res, _, _ = compute(body_ir, tables, with_sections=False)
    for c in res["cells"]:
        assert c["axis"] == ["width", "widen"] and c["qualifier"] == "stress-test-only"
        assert "stress test, not a bias measurement" in c["sentence"]
    ok = only_hypotheses(skin_ir, "H1")
    res, _, _ = compute(ok, planted_tables(ok, {"real": ArmShape(120, 1), "synthetic": ArmShape(10, 3)},
                                           {"*": {"fidelity": 0.5, "noise": 0.5}}, seed=4), with_sections=False)
    assert all(c["qualifier"] is None and "stress test" not in c["sentence"] for c in res["cells"])


def _write_bundle(tmp_path, ir, tables):
    (tmp_path / "tables").mkdir()
    (tmp_path / "ir.json").write_text(ir.model_dump_json(), encoding="utf-8")
    (tmp_path / "spec.audit").write_text("audit \"x\" {}\n", encoding="utf-8")
    (tmp_path / "run.json").write_text(json.dumps({"device": "cpu", "first_score_at": "2026-11-29T00:00:00Z"}))
    for name, df in tables.items():
        df.to_parquet(tmp_path / "tables" / f"{name}.parquet", index=False)


def test_analyse_writes_a_json_clean_results_bundle(skin_ir, tmp_path):
    ir = with_settings(skin_ir, bootstrap=300, robustness=3)
    tables = planted_tables(ir, {"real": ArmShape(40, 1, {"race": ("A", "B")}), "synthetic": ArmShape(10, 3)},
                            {"*": {"fidelity": 0.5, "asymmetry": 0.1, "noise": 0.5, "placebo": -1.0}}, seed=9)
    # one image lacks a score at one dose: it must be listed, not silently dropped
    s = tables["scores"]
    tables["scores"] = s.drop(s.index[(s.image_id == "rea000003") & (s.operator == "blur") & (s.dose == 2.0)])
    _write_bundle(tmp_path, ir, tables)
    res = analyse(tmp_path, progress=False)
    text = (tmp_path / "results.json").read_text()
    on_disk = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert "bundle" not in on_disk and res["bundle"] == str(tmp_path)
    assert on_disk == {k: v for k, v in res.items() if k != "bundle"}
    assert res["schema_version"] == 1 and res["lock"]["status"] == "not pre-registered"
    assert res["environment"]["device"] == "cpu" and "numpy" in res["environment"]["packages"]
    assert len(res["cells"]) == len(ir.cells())
    for c in res["cells"]:
        assert c["outcome"] in ("supported", "refuted", "inconclusive") and c["sentence"].endswith(".")
        assert "robustness" in c
    # the scorer rewards the shift on the placebo region (FI < 0) → ratio undefined, with the reason → null in JSON
    h3 = [c for c in res["cells"] if c["hypothesis"] == "H3"]
    assert all(c["estimate"] is None and c["outcome"] == "inconclusive" and "rewards" in c["undefined"] for c in h3)
    for name in ("cells", "curves", "fi", "placebo", "drift", "transfer", "strata", "validity", "contrasts"):
        assert res["tables"][name] == f"tables/{name}.parquet"
        assert len(pd.read_parquet(tmp_path / res["tables"][name]))
    ex = pd.read_parquet(tmp_path / "tables" / "exclusions.parquet")
    assert ((ex.image_id == "rea000003") & (ex.stage == "statistic")).any()
    assert res["arms"]["real"]["n_clusters"] == 40
    # idempotent: a second analyse gives the same numbers
    again = analyse(tmp_path, progress=False)
    assert [c["estimate"] for c in again["cells"]] == [c["estimate"] for c in res["cells"]]
    assert len(pd.read_parquet(tmp_path / "tables" / "exclusions.parquet")) == len(ex)


def test_lock_json_is_reported(skin_ir, tmp_path):
    ir = only_hypotheses(with_settings(skin_ir, bootstrap=100), "H1")
    _write_bundle(tmp_path, ir, planted_tables(ir, {"real": ArmShape(10, 1), "synthetic": ArmShape(5, 2)}, {}, seed=1))
    (tmp_path / "lock.json").write_text(json.dumps({"status": "pre-registered", "locked_at": "2026-11-28T00:00:00Z"}))
    res = analyse(tmp_path, progress=False)
    assert res["lock"]["status"] == "pre-registered"
    assert res["lock"]["first_score_at"] == "2026-11-29T00:00:00Z"
    assert np.isfinite(res["cells"][0]["estimate"])
