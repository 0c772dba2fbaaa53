"""Scopes in the IR (`on`, left out when empty) and `for each scorer` expanded per arm by them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scoreaudit import api
from scoreaudit.compiler.ir import in_scope

from scopes_testutil import CLAIMS, HEAD, check

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.audit"))


def _ir(source):
    c = check(source)
    assert c.ok, [(d.code, d.message) for d in c.diagnostics]
    return c.ir


def _keys(data) -> set:
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in _keys(v)}
    if isinstance(data, list):
        return {k for v in data for k in _keys(v)}
    return set()


def test_scopes_reach_the_ir():
    ir = _ir(HEAD + CLAIMS)
    assert ir.scorers["pick"].on == ("faces",) and ir.scorers["laion"].on == ()
    assert ir.regions["torso"].on == ("bodies",) and ir.regions["skin"].on == ()
    assert ir.measures["width"].on == ("bodies",) and ir.measures["deformation"].on == ("bodies",)
    assert ir.operators["widen"].on == ("bodies",) and ir.operators["light"].on == ("faces",)
    dumped = ir.model_dump(mode="json")
    assert dumped["scorers"]["pick"]["on"] == ["faces"]
    assert "on" not in dumped["scorers"]["laion"] and "on" not in dumped["regions"]["skin"]
    assert json.loads(ir.model_dump_json())["operators"]["widen"]["on"] == ["bodies"]


def test_a_placebo_takes_its_operators_scope_unless_it_has_its_own():
    ir = _ir(HEAD + CLAIMS)
    assert ir.operators["light_rest"].on == ("faces",)  # `placebo light_rest = ... of light`, light on faces
    own = HEAD.replace("of light\n", "of light on faces, bodies\n").replace(
        "doses -10, -5, 0, 5, 10 on faces", "doses -10, -5, 0, 5, 10")
    ir = _ir(own + CLAIMS)
    assert ir.operators["light"].on == () and ir.operators["light_rest"].on == ("faces", "bodies")


def test_in_scope():
    assert in_scope((), "anything")
    assert in_scope(("faces", "bodies"), "bodies")
    assert not in_scope(("faces",), "bodies")


def test_without_scopes_the_declarations_serialise_as_before():
    """The same spec with every scope removed: declarations equal the scoped ones' minus `on`."""
    scoped = _ir(HEAD + CLAIMS).model_dump(mode="json")
    plain = re.sub(r" on [a-z_]+(, [a-z_]+)*(?=( label: \"[^\"]*\")?\n)", "", HEAD)
    assert " on " not in plain
    unscoped = _ir(plain + 'hypothesis H1 "t" {\n  fidelity_index(light) > 0 on faces for laion\n}\n')
    unscoped = unscoped.model_dump(mode="json")
    for part in ("scorers", "regions", "measures", "operators"):
        for name, decl in scoped[part].items():
            assert "on" not in unscoped[part][name]
            assert {k: v for k, v in decl.items() if k != "on"} == unscoped[part][name], name


SCOPED_EXAMPLES = {"benchmark.audit"}  # written to show scopes (issue 26's two-axis benchmark)


@pytest.mark.parametrize("path", [p for p in EXAMPLES if p.name not in SCOPED_EXAMPLES], ids=lambda p: p.name)
def test_examples_ir_has_no_scope_keys(path):
    """The examples that state no scope keep their IR JSON (and so fingerprints and cache keys) unchanged;
    tests/compiler/golden/*.ir.json pin the normative ones byte for byte."""
    c = api.check(f"examples/{path.name}", source=path.read_text(encoding="utf-8"), tables=False)
    assert c.ok
    assert "on" not in _keys(c.ir.model_dump(mode="json"))


def test_the_benchmark_example_states_its_scopes():
    path = next(p for p in EXAMPLES if p.name == "benchmark.audit")
    c = api.check(f"examples/{path.name}", source=path.read_text(encoding="utf-8"), tables=False)
    assert c.ok
    assert c.ir.operators["widen"].on == ("bodies",) and c.ir.regions["torso"].on == ("bodies",)
    assert c.ir.operators["light"].on == ("real", "synthetic")


def test_for_each_scorer_expands_to_the_scorers_in_scope_on_each_arm():
    ir = _ir(HEAD + CLAIMS + 'hypothesis N "no for" {\n  fidelity_index(light) > 0 on faces\n}\n')
    assert [c.id for c in ir.cells()] == ["H1/pick/faces", "H1/laion/faces", "B1/laion/bodies", "B1/sharp/bodies",
                                          "P1/laion/wide", "N/pick/faces", "N/laion/faces"]


def test_a_claim_on_several_arms_expands_each_arm_by_its_own_scorers():
    spec = HEAD.replace("scorer laion = laion_aesthetic()", "scorer laion = laion_aesthetic() on wide") + \
        "operator blur = gaussian_blur(region: face) doses 0, 1, 2\n" \
        'hypothesis G "t" {\n  fidelity_index(blur) > 0 on faces, bodies for each scorer\n}\n'
    assert [c.id for c in _ir(spec).cells()] == ["G/pick/faces", "G/sharp/bodies"]


def test_cross_arm_and_comparison_claims_expand_within_scopes():
    spec = HEAD + "operator blur = gaussian_blur(region: face) doses 0, 1, 2\n" + '''hypothesis T "t" {
  transfers(fidelity_index(blur), from: bodies, to: faces) for each scorer
}
hypothesis S "t" {
  difference(fidelity_index(light) where race = "Black", fidelity_index(light) where race = "White") > 0 on faces
}
hypothesis R "t" {
  abs(ratio(fidelity_index(light) for pick, fidelity_index(light))) < 2 on faces for each scorer
}
hypothesis A "t" {
  difference(fidelity_index(blur) on faces, fidelity_index(blur) on bodies) > 0 for each scorer
}
'''
    ids = [c.id for c in _ir(spec).cells()]
    # pick only scores faces and sharp only bodies: a transfer between the two needs a scorer on both
    assert ids == ["T/laion/bodies->faces", "S/pick/faces", "S/laion/faces", "R/pick:laion/faces",
                   "A/laion/faces:bodies"]


def test_axis_rules_pick_only_a_measure_in_scope_on_the_claims_arms():
    spec = HEAD + "operator hue = hue_rotate(region: skin) doses -20..20 step 10\nvalidate ita under hue: r2 >= 0.5\n" \
        'hypothesis X "t" {\n  fidelity_index(hue) > 0 on faces for laion\n  fidelity_index(hue) > 0 on bodies for laion\n}\n'
    cells = {c.id: c for c in _ir(spec).cells()}
    assert cells["X.1/laion/faces"].axis == ("ita", "hue")
    assert cells["X.2/laion/bodies"].axis is None  # ita (rules 3 and 4) is computed on faces only


def test_runs_on_fills_an_empty_scope_by_kind():
    from scoreaudit.compiler.ir import runs_on

    ir = _ir(HEAD + CLAIMS)
    assert runs_on(ir.scorers["laion"], ir) == ("faces", "bodies", "wide")  # a scorer scores pairs arms too
    assert runs_on(ir.scorers["pick"], ir) == ("faces",)
    assert runs_on(ir.regions["skin"], ir) == ("faces", "bodies")  # pixels: images arms only
    assert runs_on(ir.operators["light_rest"], ir) == ("faces",)
    assert runs_on(ir.measures["deformation"], ir) == ("bodies",)


def test_a_scope_is_a_set_of_arms_in_declaration_order():
    a = _ir(HEAD.replace("sharpness() on bodies", "sharpness() on bodies, faces") + CLAIMS)
    b = _ir(HEAD.replace("sharpness() on bodies", "sharpness() on faces, bodies") + CLAIMS)
    assert a.scorers["sharp"].on == b.scorers["sharp"].on == ("faces", "bodies")
    assert a.model_dump(mode="json")["scorers"] == b.model_dump(mode="json")["scorers"]
