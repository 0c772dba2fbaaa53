"""Comparisons in the checker: expansion of readings into cells, and the manifest-based diagnostics."""

from __future__ import annotations

from pathlib import Path

import pytest

from scoreaudit.compiler.ir import readings_of
from scoreaudit.diagnostics import render_all

from compiler_testutil import ROOT, check_text, golden

CASES = ROOT / "tests" / "compiler" / "manifest_cases"
PRELUDE = (CASES / "prelude.txt").read_text(encoding="utf-8")


def _check_in_cases(name: str):
    """Check prelude + case text as a spec file inside manifest_cases/ (so its manifests are read)."""
    from scoreaudit import api

    source = PRELUDE + (CASES / name).read_text(encoding="utf-8")
    return source, api.check(CASES / "spec.audit", source=source)


@pytest.mark.parametrize("code", ["E0465", "E0466", "E0470"])
def test_manifest_diagnostics_golden(code):
    source, checked = _check_in_cases(f"{code}.audit")
    assert code in {d.code for d in checked.diagnostics} and checked.ir is None
    text = render_all(checked.diagnostics, source).replace(str(CASES), "manifest_cases")
    golden(CASES / f"{code}.expected", text + "\n")


def test_unreadable_manifest_leaves_where_to_run_time_and_columns_satisfy_group_gap():
    _, checked = _check_in_cases("ok_unreadable.audit")
    assert checked.ok, [d.message for d in checked.diagnostics]


def test_without_a_spec_file_nothing_is_read():
    checked = check_text(PRELUDE + (CASES / "E0465.audit").read_text(encoding="utf-8"))
    assert checked.ok


SPEC = PRELUDE + '''hypothesis S1 "t" {
  abs(ratio(fidelity_index(light) for pick, fidelity_index(light) for laion)) < 0.05 on real
}
hypothesis S2 "t" {
  abs(ratio(asymmetry(light) on real, asymmetry(light))) < 0.33 on elsewhere for each scorer
}
hypothesis S4 "t" {
  difference(pairwise_accuracy() for pick, pairwise_accuracy()) > 0 on wide
}
'''


def test_unqualified_slots_expand_from_the_claim():
    checked = check_text(SPEC)
    assert checked.ok, [d.message for d in checked.diagnostics]
    cells = {c.id: c for c in checked.ir.cells()}
    assert list(cells) == ["S1/pick:laion/real", "S2/laion/real:elsewhere", "S2/pick/real:elsewhere",
                           "S4/pick:laion/wide"]  # S4's `pick` vs `pick` is the same reading: not a cell
    s1 = readings_of(cells["S1/pick:laion/real"].statistic)
    assert [(r.arm, r.scorer) for r in s1] == [("real", "pick"), ("real", "laion")]
    s2 = readings_of(cells["S2/pick/real:elsewhere"].statistic)
    assert [(r.arm, r.scorer) for r in s2] == [("real", "pick"), ("elsewhere", "pick")]
    assert cells["S2/pick/real:elsewhere"].arm is None and cells["S1/pick:laion/real"].arm == "real"
    assert cells["S1/pick:laion/real"].test.kind == "equivalence"
    parts = cells["S4/pick:laion/wide"].parts()
    assert [(a, s) for a, s, _ in parts] == [("wide", "pick"), ("wide", "laion")]


def test_where_values_keep_their_text():
    checked = check_text(PRELUDE + 'hypothesis S "t" {\n  difference(curve(light) where race = "Black", '
                         'curve(light) where judge = 1) > 0 on real\n}\n')
    assert checked.ok
    r = readings_of(checked.ir.cells()[0].statistic)
    assert r[0].where == (("race", "Black"),) and r[1].where == (("judge", "1"),)


def test_plan_shows_pairing():
    from scoreaudit.compiler.plan import build_plan, render_plan

    checked = check_text(SPEC)
    out = render_plan(build_plan(checked.ir, base_dir=ROOT))
    assert "S1/pick:laion/real: paired: the same clusters of real" in out
    assert "S2/pick/real:elsewhere: independent unless real and elsewhere share cluster ids" in out


def test_json_list_manifest_is_read_at_check_time(tmp_path):
    from scoreaudit import api

    (tmp_path / "p.json").write_text('[{"id": "a", "judge": 1}, {"id": "b", "judge": 0}]', encoding="utf-8")
    spec = ('audit "t" { version: 1 }\nscorer s = precomputed(preferred: x, other: y)\n'
            'arm wide = pairs("p.json", preferred: f, other: g, images: false)\n'
            'hypothesis S "t" {\n  agreement(label: jduge, metric: auroc) > 0.6 on wide for s\n'
            '  difference(pairwise_accuracy() where judge = 1, pairwise_accuracy() where judge = 2) > 0 on wide for s\n}\n')
    checked = api.check(tmp_path / "t.audit", source=spec, tables=False)
    assert [d.code for d in checked.diagnostics] == ["E0470", "E0466"]


def test_agreement_on_an_images_arm_compiles_with_a_threshold_and_is_refused_without():
    head = (ROOT / "tests" / "compiler" / "invalid" / "E0471.audit").read_text(encoding="utf-8").split("hypothesis")[0]

    def codes(claim):
        checked = check_text(head + 'hypothesis S7 "t" {\n  ' + claim + ' on real for each scorer\n}\n')
        return checked, {d.code for d in checked.diagnostics if d.severity == "error"}

    ok, errs = codes("agreement(label: judge, metric: kappa, threshold: [0.5, 1.5], weights: quadratic) > 0.3")
    assert not errs, [d.message for d in ok.diagnostics]
    cell = next(iter(ok.ir.cells()))
    assert cell.statistic.params["threshold"] == [0.5, 1.5] and cell.statistic.params["weights"] == "quadratic"
    assert not codes("agreement(label: judge, metric: f1, threshold: 0.4) > 0.6")[1]
    assert codes("agreement(label: judge, metric: f1) > 0.6")[1] == {"E0471"}
    assert codes("agreement(label: judge, metric: kappa, threshold: [1.5, 0.5]) > 0.3")[1] == {"E0471"}
