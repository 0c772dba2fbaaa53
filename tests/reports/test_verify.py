"""`verify`: an untouched bundle verifies; an edited number, table or report is named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from scoreaudit.reports.verify import compare, compare_reports


@pytest.fixture(scope="module")
def planted(tmp_path_factory) -> Path:
    from real_bundle import planted_bundle

    from scoreaudit.reports.render import render

    d = planted_bundle(tmp_path_factory.mktemp("planted") / "b", clusters=24, bootstrap=100,
                       exclusions=[{"arm": "real", "image_id": "x1", "row": 3, "stage": "decode",
                                    "reason": "<script>alert(1)</script>"}])
    render(d, formats=["html"])
    from scoreaudit.reports.manifest import write_manifest

    write_manifest(d)  # as `run` does last: a re-render alone never writes a whole manifest
    return d


@pytest.fixture()
def copy(planted, tmp_path) -> Path:
    d = tmp_path / "b"
    shutil.copytree(planted, d)
    return d


def test_untouched_bundle_verifies(planted):
    from scoreaudit.reports.verify import verify

    assert verify(planted) == []


def test_edited_number_in_results_is_named(copy):
    from scoreaudit.reports.verify import verify

    r = json.loads((copy / "results.json").read_text())
    cell = r["cells"][0]
    cell["estimate"] = cell["estimate"] + 0.01
    (copy / "results.json").write_text(json.dumps(r))
    out = verify(copy)
    assert any(m.startswith(f"cells[{cell['id']}].estimate: results.json says") for m in out), out


def test_edited_runtime_table_changes_the_numbers(copy):
    import pandas as pd

    from scoreaudit.reports.verify import verify

    p = copy / "tables" / "scores.parquet"
    df = pd.read_parquet(p)
    mask = (df["operator"] == "light") & (df["dose"] == 15.0) & (df["arm"] == "real")
    df.loc[mask, "score"] -= 0.5
    df.to_parquet(p, index=False)
    out = verify(copy)
    assert any(".estimate: results.json says" in m for m in out), out


def test_edited_derived_table_is_named(copy):
    import pandas as pd

    from scoreaudit.reports.verify import verify

    p = copy / "tables" / "cells.parquet"
    df = pd.read_parquet(p)
    col = "estimate" if "estimate" in df else df.select_dtypes("number").columns[0]
    df.loc[0, col] = df.loc[0, col] + 1.0
    df.to_parquet(p, index=False)
    out = verify(copy)
    assert any(m.startswith(f"tables/cells.parquet row 0 column {col}") for m in out), out


def test_hand_edited_report_is_caught(copy):
    from scoreaudit.reports.fmt import signed
    from scoreaudit.reports.verify import verify

    r = json.loads((copy / "results.json").read_text())
    shown = signed(r["cells"][0]["estimate"])
    html = (copy / "report.html").read_text()
    assert shown in html
    (copy / "report.html").write_text(html.replace(shown, "+0.999", 1))
    out = verify(copy)
    assert any(m.startswith("report.html: shows +0.999 where the results give " + shown) for m in out), out


def test_compare_names_paths():
    a = {"cells": [{"id": "H1/a/b", "estimate": 0.071, "outcome": "supported"}], "environment": {"python": "x"}}
    b = {"cells": [{"id": "H1/a/b", "estimate": 0.069, "outcome": "supported"}], "environment": {"python": "y"}}
    assert list(compare(a, b)) == ["cells[H1/a/b].estimate: results.json says 0.071, tables give 0.069"]
    assert list(compare(a, a)) == []
    c = {"x": [1.0, 2.0]}
    assert list(compare(c, {"x": [1.0, 2.0 + 1e-13]})) == []
    assert list(compare(c, {"x": [1.0]})) == ["x: results.json lists 2 entries, the tables give 1"]
    assert list(compare({"o": "supported"}, {"o": "refuted"})) == ["o: results.json says 'supported', tables give 'refuted'"]


def test_compare_reports_names_first_number():
    a = "<p>FI is +0.071 [0.05, 0.09]</p>"
    b = "<p>FI is +0.069 [0.05, 0.09]</p>"
    assert compare_reports(a, b) == ["report.html: shows +0.071 where the results give +0.069 (in: 'FI is +0.071 [0.05, 0.09]')"]
    assert compare_reports(a, a) == []


def test_cli_verify_exit_codes(planted, copy, capsys):
    from scoreaudit.cli import main

    assert main(["verify", str(planted)]) == 0
    r = json.loads((copy / "results.json").read_text())
    r["cells"][1]["q"] = 0.5
    (copy / "results.json").write_text(json.dumps(r))
    assert main(["verify", str(copy)]) == 5
    assert f"cells[{r['cells'][1]['id']}].q" in capsys.readouterr().err
