"""Recovery of planted truths (the planted formula of stats/planted.py) through the whole cell pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from stats_helpers import only_hypotheses, with_settings

from scoreaudit.stats.engine import compute
from scoreaudit.stats.planted import ArmShape, planted_tables

SHAPES = {"real": ArmShape(150, 1, {"race": ("A", "B", "C")}), "synthetic": ArmShape(30, 4)}


def _cells(ir, truth, seed=11, shapes=SHAPES, **settings):
    ir = with_settings(ir, **settings) if settings else ir
    res, _, _ = compute(ir, planted_tables(ir, shapes, truth, seed=seed), with_sections=False)
    return {c["id"]: c for c in res["cells"]}


def test_inverted_u_fidelity_supported_asymmetry_not_refuted(skin_ir):
    cells = _cells(only_hypotheses(skin_ir, "H1", "H2"), {"*": {"fidelity": 0.5, "noise": 0.5}})
    for s in ("laion", "pick", "ir", "hps"):
        for arm in ("real", "synthetic"):
            assert cells[f"H1/{s}/{arm}"]["outcome"] == "supported"
        assert cells[f"H2/{s}/real"]["outcome"] in ("inconclusive", "supported")


def test_directional_preference_has_the_right_sign(skin_ir):
    truth = {"laion": {"asymmetry": 0.4, "noise": 0.5}, "pick": {"asymmetry": -0.4, "noise": 0.5},
             "*": {"noise": 0.5}}
    cells = _cells(only_hypotheses(skin_ir, "H2"), truth)
    assert cells["H2/laion/real"]["estimate"] > 0.1 and cells["H2/laion/real"]["outcome"] == "refuted"
    assert cells["H2/pick/real"]["estimate"] < -0.1 and cells["H2/pick/real"]["outcome"] == "refuted"


def test_placebo_ratio_skin_specific_vs_not(skin_ir):
    ir = only_hypotheses(skin_ir, "H3")
    specific = _cells(ir, {"*": {"fidelity": 1.0, "placebo": 0.25, "noise": 0.5}})
    flat = _cells(ir, {"*": {"fidelity": 1.0, "placebo": 1.0, "noise": 0.5}})
    for s in ("laion", "pick", "ir", "hps"):
        c = specific[f"H3/{s}/real"]
        lo, hi = c["_est"].interval(0.95)
        assert lo > 1.0, (s, lo, hi)
        assert c["outcome"] == "refuted"  # 4 is outside [0.5, 2]
        lo, hi = flat[f"H3/{s}/real"]["_est"].interval(0.95)
        assert lo < 1.0 < hi
        assert flat[f"H3/{s}/real"]["outcome"] == "supported"


def test_placebo_ratio_needs_two_penalties(skin_ir):
    ir = only_hypotheses(skin_ir, "H3")
    # the scorer rewards the shift on both regions: FI(o) < 0 and FI(p) < 0 — a ratio near 1 would say
    # "not specific to skin", so it must be undefined rather than supported
    both = _cells(ir, {"*": {"fidelity": -1.0, "placebo": 1.0, "noise": 0.5}})
    for c in both.values():
        assert c["undefined"] and "rewards light" in c["undefined"] and "rewards light_rest" in c["undefined"]
        assert c["outcome"] == "inconclusive" and c["estimate"] != c["estimate"]  # NaN
    flat = _cells(ir, {"*": {"fidelity": 1.0, "placebo": -0.5, "noise": 0.5}})
    assert all("rewards light_rest" in c["undefined"] and c["outcome"] == "inconclusive" for c in flat.values())


def test_selection_preference_drifts_the_right_way_and_no_random_draw(skin_ir):
    ir = only_hypotheses(skin_ir, "H5")
    truth = {"laion": {"slope_by": "ita", "slope": 0.5, "noise": 0.5},
             "pick": {"slope_by": "ita", "slope": -0.5, "noise": 0.5}, "*": {"noise": 0.5}}
    pref = _cells(ir, truth)
    lo, _ = pref["H5/laion/real"]["_est"].interval(0.95)
    _, hi = pref["H5/pick/real"]["_est"].interval(0.95)
    assert lo > 0 and hi < 0
    null = pref["H5/ir/real"]
    assert null["detail"]["random_drift"] == 0.0  # the random pick enters in expectation
    assert null["_est"].interval(0.95)[0] < 0 < null["_est"].interval(0.95)[1]
    # the directional part has the preference's sign; net − directional is the fidelity part
    d = pref["H5/laion/real"]["detail"]
    assert d["directional_drift"] > 0
    assert d["fidelity_part"] == pytest.approx(pref["H5/laion/real"]["estimate"] - d["directional_drift"])
    assert "fidelity part" in d["note"]
    # Rao–Blackwellised: with every n-subset used, the verdict does not depend on any seed
    other = _cells(with_settings(ir, seed=ir.settings.seed + 1), truth)
    for k in pref:
        assert other[k]["estimate"] == pref[k]["estimate"]


def test_ties_share_the_pick():
    from scoreaudit.stats.selection import _drifts

    S = np.array([[1.0, 1.0, 0.0]])
    M = np.array([[10.0, 20.0, 30.0]])
    a, d = _drifts(S, M, np.array([[[0, 1, 2]]]), mirror=np.array([2, 1, 0]))
    assert a[0, 0] == pytest.approx(15.0 - 20.0)  # the two tied candidates share the pick
    assert d[0, 0] == pytest.approx(((10 - 30) / 2 + (20 - 20) / 2) / 2)


def test_opposite_signs_across_arms_is_a_reversal(skin_ir):
    truth = {"*": {"noise": 0.5, "asymmetry": 0.5, "arms": {"real": {"asymmetry": -0.5}}}}
    cells = _cells(only_hypotheses(skin_ir, "H4"), truth)
    for s in ("laion", "pick", "ir", "hps"):
        c = cells[f"H4/{s}/synthetic->real"]
        assert c["detail"]["class"] == "reversal" and c["outcome"] == "refuted"
    same = _cells(only_hypotheses(skin_ir, "H4"), {"*": {"noise": 0.5, "asymmetry": 0.5}})
    assert {c["detail"]["class"] for c in same.values()} <= {"consistent", "attenuation", "amplification"}
    assert {c["outcome"] for c in same.values()} == {"supported"}
    for c in same.values():
        d = c["detail"]
        assert d["ratio"] == pytest.approx(d["theta_target"] / d["theta_source"])
        assert 0.5 < d["ratio_ci_low"] < d["ratio"] < d["ratio_ci_high"] < 2
    gone = _cells(only_hypotheses(skin_ir, "H4"),
                  {"*": {"noise": 0.5, "asymmetry": 0.5, "arms": {"real": {"asymmetry": 0.0}}}})
    assert {c["detail"]["class"] for c in gone.values()} <= {"collapse", "attenuation"}
    # transfer is an equivalence claim: a reading that is merely not significant is never a refutation
    assert all(c["outcome"] != "refuted" or c["detail"]["ratio_ci_high"] < 0.5 for c in gone.values())


def test_heterogeneous_strata_refute_homogeneity(skin_ir):
    ir = only_hypotheses(skin_ir, "H6")
    het = _cells(ir, {"*": {"noise": 0.5, "fidelity": 0.5, "strata": {"race=C": {"fidelity": 2.0}}}})
    hom = _cells(ir, {"*": {"noise": 0.5, "fidelity": 0.5}})
    assert {c["outcome"] for c in het.values()} == {"refuted"}
    assert all(c["detail"]["largest_contrast"]["label"].startswith("selected after the fact") for c in het.values())
    assert "refuted" not in {c["outcome"] for c in hom.values()}


def test_results_are_reproducible_bit_for_bit(skin_ir):
    ir = only_hypotheses(skin_ir, "H1", "H3", "H5")
    a = _cells(ir, {"*": {"fidelity": 0.3, "noise": 1.0}})
    b = _cells(ir, {"*": {"fidelity": 0.3, "noise": 1.0}})
    for k in a:
        np.testing.assert_array_equal(a[k]["_est"].boot, b[k]["_est"].boot)
