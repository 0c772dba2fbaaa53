"""A bad value in a table is an exclusion with its reason (the run goes on, the cell stays NaN);
under `on_error: fail` it stops the run. A manifest may be JSON lines."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from scoreaudit import api
from scoreaudit.diagnostics import DiagnosticError

from e2e_helpers import face_images, run, write_spec

SPEC = '''audit "Bad values" {{ version: 1 seed: 2 scale: raw bootstrap: 100 {settings} }}
scorer ir = precomputed()
arm real = images("data/real", manifest: "data/{manifest}", kind: real, cluster: group,
                  scores: "results/scores.csv")
region skin = skin()
operator light = lab_shift(channel: L, region: skin) doses -10, 0, 10
hypothesis H1 "Fidelity" {{
  fidelity_index(light) > 0 on real for ir
}}
'''


def project(folder, settings: str = "", manifest: str = "real.csv"):
    face_images(folder)
    lines = ["id,operator,dose,scorer,score"]
    for k in range(12):
        for d in (-10, 0, 10):
            value = "nan" if (k, d) == (3, 10) else f"{k * 0.1 - abs(d) * (0.01 + 0.003 * k) + 0.002 * d * (k % 3):.4f}"
            lines.append(f"img_{k:03d},light,{d},ir,{value}")
    (folder / "results").mkdir()
    (folder / "results" / "scores.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return write_spec(folder, SPEC.format(settings=settings, manifest=manifest))


def test_a_nan_score_is_an_exclusion_with_its_reason(tmp_path):
    results = run(project(tmp_path), tmp_path / "out")
    ex = [e for e in results["exclusions"] if e["stage"] == "score"]
    assert [(e["arm"], e["image_id"]) for e in ex] == [("real", "img_003")]
    assert ex[0]["reason"] == ("results/scores.csv row 12: the score is NaN for scorer ir, operator light, dose 10; "
                               "fix the value or remove the row (the image is left out wherever this score is needed)")
    scores = pd.read_parquet(tmp_path / "out" / "tables" / "scores.parquet")
    cell = scores[(scores["image_id"] == "img_003") & (scores["operator"] == "light") & (scores["dose"] == 10)]
    assert len(cell) == 1 and math.isnan(cell["score"].iat[0])
    assert results["cells"][0]["estimate"] is not None


def test_on_error_fail_stops_the_run(tmp_path):
    spec = project(tmp_path, settings="on_error: fail")
    with pytest.raises(DiagnosticError) as err:
        api.run(spec, out=tmp_path / "out", progress=False, render_report=False, device="cpu")
    assert [d.code for d in err.value.diagnostics] == ["E0706"]
    assert "results/scores.csv row 12: the score is NaN" in err.value.diagnostics[0].message
    assert err.value.diagnostics[0].path == "results/scores.csv"
    assert not (tmp_path / "out" / "results.json").exists()


def test_a_json_lines_manifest(tmp_path):
    spec = project(tmp_path, manifest="real.jsonl")
    csv = pd.read_csv(tmp_path / "data" / "real.csv", dtype=str)
    csv.to_json(tmp_path / "data" / "real.jsonl", orient="records", lines=True)
    (tmp_path / "data" / "real.csv").unlink()
    results = run(spec, tmp_path / "out")
    assert results["arms"]["real"]["n_images"] == 12 and results["arms"]["real"]["n_clusters"] == 6
