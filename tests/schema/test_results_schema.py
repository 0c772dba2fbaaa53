"""spec/results.schema.json against real bundles, and against results.json files broken on purpose.

Real bundles: the demo audit on a small demo data set (planted and classical
scorers, a transfer, a homogeneity cell, a verdict), a pairs audit over a JSON
manifest with precomputed scores and one missing score (an exclusion, a
manifest provenance entry), and a within-image audit whose scores and measures
come from tables (table provenance entries). Each must validate; each broken
copy must not, and the error must point at what was broken.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from pathlib import Path

import pytest

jsonschema = pytest.importorskip("jsonschema", reason="the test extra is not installed (pip install 'scoreaudit[test]')")
from jsonschema import Draft202012Validator  # noqa: E402

from scoreaudit import api  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "spec" / "results.schema.json"
sys.path.insert(0, str(ROOT / "tests" / "e2e_precomputed"))

import e2e_helpers as e2e  # noqa: E402


def _schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


VALIDATOR = Draft202012Validator(_schema())


def errors(results: dict) -> list[str]:
    """Every schema error, as 'path: message' (empty when the document is valid)."""
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}"
            for e in sorted(VALIDATOR.iter_errors(results), key=lambda e: list(map(str, e.absolute_path)))]


def error_paths(results: dict) -> set[tuple]:
    out = set()
    for e in VALIDATOR.iter_errors(results):
        out.add(tuple(e.absolute_path))
        for sub in e.context or ():  # anyOf/oneOf: where each alternative failed
            out.add(tuple(sub.absolute_path))
    return out


# ---------------------------------------------------------------- bundles


def _demo_data_builder():
    spec = importlib.util.spec_from_file_location("make_demo_data", ROOT / "scripts" / "make_demo_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict:
    """examples/demo.audit on 6 real views and 3 synthetic prompts, 100 bootstrap draws, HTML only."""
    folder = tmp_path_factory.mktemp("demo")
    _demo_data_builder()(folder / "data" / "demo", n_real=6, n_prompts=3)
    text = (ROOT / "examples" / "demo.audit").read_text(encoding="utf-8")
    for old, new in (("bootstrap: 2000", "bootstrap: 100"), ("formats: html, pdf", "formats: html")):
        assert old in text, f"examples/demo.audit no longer says {old!r}: update this test"
        text = text.replace(old, new)
    spec = e2e.write_spec(folder, text, name="demo.audit")
    results = api.run(spec, out=folder / "out", progress=False, render_report=False, device="cpu")
    on_disk = json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))
    assert on_disk == {k: v for k, v in results.items() if k != "bundle"}  # the location is not in the file
    return on_disk


PAIRS = [("p1", 0.9, 0.1), ("p2", 0.5, 0.5), ("p3", 0.2, 0.4), ("p4", 1.0, 0.0), ("p5", 0.7, None), ("p6", 0.8, 0.3)]
PAIRS_SPEC = '''audit "Pairs from a JSON manifest" { version: 1 seed: 3 scale: sd bootstrap: 100 }
scorer ir = precomputed(preferred: ir_a, other: ir_b)
arm wide = pairs("data/wide.json", preferred: original, other: distorted, images: false)
hypothesis W1 "The scorer prefers the original image" {
  pairwise_accuracy() > 0.5 on wide for each scorer
}
'''


@pytest.fixture(scope="module")
def pairs(tmp_path_factory) -> dict:
    """An imageless pairs arm whose scores are manifest columns; p5's other side has no score."""
    folder = tmp_path_factory.mktemp("pairs")
    e2e.write_json(folder / "data" / "wide.json", [{"id": i, "ir_a": a, "ir_b": b} for i, a, b in PAIRS])
    results = e2e.run(e2e.write_spec(folder, PAIRS_SPEC), folder / "out")
    assert [e["image_id"] for e in results["exclusions"]] == ["p5:other"]
    assert [p["source"] for p in results["precomputed"]] == ["manifest columns"]
    return results


@pytest.fixture(scope="module")
def from_tables(tmp_path_factory) -> dict:
    """The within-image audit computed once, then re-run with its scores and measures read from tables."""
    computed = tmp_path_factory.mktemp("computed")
    e2e.face_images(computed)
    e2e.run(e2e.write_spec(computed, e2e.COMPUTED), computed / "out")
    folder = tmp_path_factory.mktemp("tables")
    e2e.copy_inputs(computed, folder)
    results = e2e.run(e2e.write_spec(folder, e2e.FROM_TABLES["precomputed"]), folder / "out")
    assert {p["provides"] for p in results["precomputed"]} == {"scores", "measures"}
    assert all("rows" in p and "used" in p for p in results["precomputed"])
    return results


# ---------------------------------------------------------------- the schema itself


def test_schema_is_a_valid_draft_2020_12_schema():
    schema = _schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_schema_describes_every_replace():
    """results.json["settings"] is Settings.model_dump(): a new setting needs a line in the schema."""
    from scoreaudit.compiler.ir import Settings

    described = set(_schema()["$defs"]["settings"]["properties"])
    assert set(Settings.model_fields) <= described, sorted(set(Settings.model_fields) - described)


# ---------------------------------------------------------------- real bundles validate


def test_demo_bundle_validates(demo):
    assert errors(demo) == []
    # the demo exercises the parts of the contract the schema is precise about
    assert {c["outcome"] for c in demo["cells"]} <= {"supported", "refuted", "inconclusive"}
    assert demo["verdicts"] and all(len(v["conditions"]) == 3 for v in demo["verdicts"])
    assert any(c["arm"] is None for c in demo["cells"])  # a transfers cell
    assert demo["lock"]["status"] == "not pre-registered"


def test_pairs_bundle_with_a_manifest_of_scores_validates(pairs):
    assert errors(pairs) == []


def test_bundle_with_tables_of_scores_and_measures_validates(from_tables):
    assert errors(from_tables) == []


def test_undefined_numbers_are_null(demo):
    """An undefined estimate: every number null, the reason in `undefined`, the outcome inconclusive."""
    doc = copy.deepcopy(demo)
    doc["cells"][0].update(estimate=None, ci_low=None, ci_high=None, se=None, p=None, q=None,
                           undefined="fewer than 2 clusters", outcome="inconclusive")
    assert errors(doc) == []


# ---------------------------------------------------------------- broken copies are rejected


def _parent(doc: dict, path: tuple):
    for k in path[:-1]:
        doc = doc[k]
    return doc


def _replace(path: tuple, value):
    def mutate(doc):
        _parent(doc, path)[path[-1]] = value
    return mutate


def _drop(path: tuple):
    def mutate(doc):
        del _parent(doc, path)[path[-1]]
    return mutate


BROKEN = {
    # (mutation, the path an error must point at)
    "outcome maybe": (_replace(("cells", 0, "outcome"), "maybe"), ("cells", 0, "outcome")),
    "cell without q": (_drop(("cells", 0, "q")), ("cells", 0)),
    "verdict bias": (_replace(("verdicts", 0, "verdict"), "bias"), ("verdicts", 0, "verdict")),
    "estimate as text": (_replace(("cells", 1, "estimate"), "0.3"), ("cells", 1, "estimate")),
    "p above 1": (_replace(("cells", 2, "p"), 1.5), ("cells", 2, "p")),
    "unknown lock status": (_replace(("lock", "status"), "locked"), ("lock", "status")),
    "condition without held": (_drop(("verdicts", 0, "conditions", 0, "held")), ("verdicts", 0, "conditions", 0)),
    "unknown condition": (_replace(("verdicts", 0, "conditions", 1, "name"), "vibes"),
                          ("verdicts", 0, "conditions", 1, "name")),
    "wrong schema_version": (_replace(("schema_version",), 2), ("schema_version",)),
    "no precomputed list": (_drop(("precomputed",)), ()),
    "hypothesis cell outcome": (_replace(("hypotheses", 0, "cells", 0, "outcome"), "yes"),
                                ("hypotheses", 0, "cells", 0, "outcome")),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_demo_results_are_rejected(demo, name):
    mutate, where = BROKEN[name]
    broken = copy.deepcopy(demo)
    mutate(broken)
    assert errors(broken), f"{name}: the schema accepted it"
    assert where in error_paths(broken), (name, errors(broken))


def test_verdict_follows_its_conditions(demo):
    """bias-measurement exactly when every condition held (the small demo's real arm is too small)."""
    doc = copy.deepcopy(demo)
    v = doc["verdicts"][0]
    assert v["verdict"] == "stress-test-only" and not all(c["held"] for c in v["conditions"])
    v["verdict"] = "bias-measurement"
    assert errors(doc)
    for c in v["conditions"]:
        c["held"] = True
    assert errors(doc) == []
    v["verdict"] = "stress-test-only"
    assert errors(doc)


def test_exclusion_stage_and_precomputed_provides_are_closed_sets(pairs):
    broken = copy.deepcopy(pairs)
    broken["exclusions"][0]["stage"] = "scoring"
    broken["precomputed"][0]["provides"] = "weights"
    assert {("exclusions", 0, "stage"), ("precomputed", 0, "provides")} <= error_paths(broken)


def test_table_provenance_needs_rows_and_used(from_tables):
    broken = copy.deepcopy(from_tables)
    del broken["precomputed"][0]["used"]
    assert errors(broken)
    assert ("precomputed", 0) in error_paths(broken)
