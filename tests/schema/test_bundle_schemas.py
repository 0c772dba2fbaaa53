"""The bundle's JSON schemas are generated from the code that writes the files, and hold it to them.

spec/results.schema.json, run.schema.json and manifest.schema.json are
`scoreaudit.bundleschema`'s output (stale files fail here); their closed sets
are the writers' own (a transfer class the statistics emit is in the schema);
and tests/conftest.py validates every results.json, run.json, plan.json and
manifest.json a test's run writes, so a writer drifting from its schema fails
the test that ran it.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("jsonschema", reason="the test extra is not installed (pip install 'scoreaudit[test]')")
from jsonschema import Draft202012Validator  # noqa: E402

from scoreaudit import bundleschema, safeio  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "spec"


def on_disk(file: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((SPEC / file).read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", [n for n in bundleschema.SCHEMAS if n != "plan.json"])
def test_schema_files_are_current(name):
    file, build = bundleschema.SCHEMAS[name]
    Draft202012Validator.check_schema(build())
    assert (SPEC / file).read_text(encoding="utf-8") == bundleschema.text(build()), \
        f"spec/{file} is stale: python -m scoreaudit.bundleschema"


def _results_with_transfer(cls: str) -> dict:
    """A minimal results.json (every required key) whose one transfer row has class `cls`."""
    return {"schema_version": 1, "tool": {"name": "scoreaudit", "version": "0"}, "title": "t",
            "spec": {"path": None, "sha256": None, "text": None},
            "lock": {"status": "not pre-registered", "path": None, "locked_at": None, "spec_sha256": None,
                     "hypotheses_sha256": None, "first_score_at": None, "deviations": []},
            "settings": __import__("scoreaudit.compiler.ir", fromlist=["Settings"]).Settings(title="t")
            .model_dump(mode="json"),
            "environment": {"python": "3", "platform": "x", "device": "cpu", "packages": {}, "scorers": {}},
            "plan": {"fingerprint": None, "steps": 0, "images": {}, "forward_passes": {}},
            "arms": {}, "exclusions": [], "hypotheses": [], "cells": [], "verdicts": [], "validations": [],
            "sections": {"transfer": [{"cell": "T1/s", "scorer": "s", "class": cls}]},
            "tables": {"exclusions": "tables/exclusions.parquet"}, "precomputed": []}


def test_every_transfer_class_the_statistics_emit_validates():
    """The demo's transfer rows could be 'amplification', which the hand-written schema's enum lacked."""
    from scoreaudit.stats.transfer import CLASSES

    v = on_disk("results.schema.json")
    for cls in CLASSES:
        assert list(v.iter_errors(_results_with_transfer(cls))) == [], cls
    assert list(v.iter_errors(_results_with_transfer("magnification")))


def test_transfer_classes_in_bundle_md_are_the_statistics_own():
    from scoreaudit.stats.transfer import CLASSES

    line = next(ln for ln in (SPEC / "bundle.md").read_text(encoding="utf-8").splitlines() if '"class":' in ln)
    assert re.findall(r'"([a-z]+)"', line.split('"class":')[1]) == list(CLASSES)


def test_validation_checks_are_keyed_statistic_as_the_statistics_write_them():
    """stats/validity.py writes {"statistic", "op", ...}; bundle.md said "name" and the schema took either."""
    v = on_disk("results.schema.json")
    check = {"statistic": "r2", "op": ">=", "threshold": 0.5, "value": 0.9, "held": True}
    schema = {"$ref": "#/$defs/validation", "$defs": v.schema["$defs"]}
    row = {"measure": "ita", "operator": "light", "arm": "real", "r2": 0.9, "monotonic": 1.0, "passed": True,
           "checks": [check]}
    assert list(Draft202012Validator(schema).iter_errors(row)) == []
    renamed = copy.deepcopy(row)
    renamed["checks"][0]["name"] = renamed["checks"][0].pop("statistic")
    assert list(Draft202012Validator(schema).iter_errors(renamed))
    text = (SPEC / "bundle.md").read_text(encoding="utf-8")
    assert '`validations[].checks` = `[{"statistic": "r2" | "monotonic"' in text


def test_settings_schema_is_the_settings_model():
    """A setting added to Settings is in the schema, typed, without editing it by hand."""
    from scoreaudit.compiler.ir import Settings

    props = on_disk("results.schema.json").schema["$defs"]["settings"]["properties"]
    assert set(props) == set(Settings.model_fields)
    assert props["ci"]["enum"] == ["bca", "percentile", "studentized"]


def test_bundle_files_are_validated_as_written(tmp_path):
    """The conftest hook: a results.json or manifest.json outside the contract is refused, and not written."""
    assert safeio.write_atomic.__module__ != safeio.__name__ or pytest.skip("jsonschema hook inactive")
    good = {"algorithm": "sha256", "files": {"results.json": "0" * 64}}
    safeio.write_atomic(tmp_path / "manifest.json", json.dumps(good))
    with pytest.raises(AssertionError, match="manifest.schema.json"):
        safeio.write_atomic(tmp_path / "b" / "manifest.json", json.dumps({"algorithm": "md5", "files": {}}))
    assert not (tmp_path / "b" / "manifest.json").exists()
    doc = _results_with_transfer("null")
    safeio.write_atomic(tmp_path / "results.json", json.dumps(doc))
    doc["lock"]["status"] = "locked"
    with pytest.raises(AssertionError, match="(?s)results.schema.json.*lock/status"):
        safeio.write_atomic(tmp_path / "c" / "results.json", json.dumps(doc))
    safeio.write_atomic(tmp_path / "notes.json", "not json at all")  # other files pass through


def test_manifest_paths_stay_inside_the_bundle():
    v = on_disk("manifest.schema.json")
    for bad in ("/etc/passwd", "../x", "a/../../x", "a\\b"):
        assert list(v.iter_errors({"algorithm": "sha256", "files": {bad: "0" * 64}})), bad
    assert not list(v.iter_errors({"algorithm": "sha256", "files": {"tables/cells.parquet": "a" * 64,
                                                                    "..hidden": "b" * 64}}))
