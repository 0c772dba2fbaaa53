"""Every scope diagnostic, located at file:line:col with what to do."""

from __future__ import annotations

import pytest

from scopes_testutil import CLAIMS, HEAD, check, diags, position

EXTRA = "operator hue = hue_rotate(region: skin) doses -20..20 step 10\n"


def _claim(text: str) -> str:
    return HEAD + EXTRA + 'hypothesis Q "t" {\n  ' + text + "\n}\n"


def test_the_two_axis_spec_checks_clean():
    c = check(HEAD + CLAIMS)
    assert c.ok and not c.diagnostics


def test_unknown_arm_in_a_scope_suggests_the_arm():
    spec = HEAD.replace("0.8, 0.9, 1.0, 1.1, 1.2 on bodies", "0.8, 0.9, 1.0, 1.1, 1.2 on bodys") + CLAIMS
    c = check(spec)
    assert not c.ok
    [d] = [d for d in c.diagnostics if d.code == "E0203"]
    assert (d.span.line, d.span.column) == position(spec, "bodys")
    assert "unknown arm `bodys` (in the scope of operator `widen`)" in d.message
    assert d.help == "did you mean 'bodies'?"


def test_a_scope_names_arms_only():
    spec = HEAD.replace('sharpness() on bodies', 'sharpness() on light') + CLAIMS
    [(line, col, message, help)] = diags(spec, "E0204")
    assert (line, col) == position(spec, "light", "scorer sharp")
    assert message == "`light` is an operator, not an arm (in the scope of scorer `sharp`)"
    assert help == "declared arms: faces, bodies, wide"


@pytest.mark.parametrize("decl,kind", [
    ("region r = face() on faces, wide", "region `r`"),
    ("measure m = ita(region: skin) on wide", "measure `m`"),
    ("covariate c = gamut_clip() on wide", "covariate `c`"),
    ("operator o = hue_rotate(region: skin) doses -10, 0, 10 on wide", "operator `o`"),
    ("placebo p = lab_shift(channel: L, region: rest) of light on wide", "placebo `p`"),
])
def test_a_pixel_declaration_scoped_on_a_pairs_arm(decl, kind):
    spec = HEAD + decl + "\n"
    [(line, col, message, help)] = diags(spec, "E0530")
    assert (line, col) == position(spec, "wide", decl)
    assert message == f"{kind} runs on images, but `wide` is a pairs arm"
    assert help.startswith("scope it to images arms (")


def test_a_scorer_may_be_scoped_on_a_pairs_arm():
    spec = HEAD.replace("scorer laion = laion_aesthetic()", "scorer laion = laion_aesthetic() on wide") + \
        'hypothesis P1 "Pairs" {\n  pairwise_accuracy() > 0.5 on wide\n}\n'
    c = check(spec)
    assert c.ok and [x.id for x in c.ir.cells()] == ["P1/laion/wide"]


@pytest.mark.parametrize("decl,user", [
    ("measure breadth = width_ratio(region: torso)", "measure `breadth` runs on every images arm (faces, bodies)"),
    ("operator squeeze = torso_warp(region: torso) doses 0.9, 1.0, 1.1 on faces, bodies",
     "operator `squeeze` runs on faces, bodies"),
    ("region belly = not torso", "region `belly` runs on every images arm (faces, bodies)"),
    ("placebo light_torso = lab_shift(channel: L, region: torso2) of light", "placebo `light_torso` runs on faces"),
])
def test_a_region_scoped_narrower_than_its_user(decl, user):
    spec = HEAD + "region torso2 = mask(column: torso_mask) on bodies\n" + decl + "\n"
    [(line, col, message, help)] = diags(spec, "E0531")
    region = "torso2" if "torso2" in decl else "torso"
    needle = f"region: {region}" if "region:" in decl else f"not {region}"
    at_line, at_col = position(spec, needle, decl)
    assert (line, col) == (at_line, at_col + needle.index(region))
    assert message.startswith(user + f", but its region `{region}` is computed only on bodies, not on faces")
    assert help == f"scope `{decl.split()[1]}` `on bodies`, or add faces to the scope of region `{region}`" \
        if "placebo" not in decl else help == f"add faces to the scope of region `{region}`, or use another region"


def test_a_region_that_covers_its_users_is_fine():
    spec = HEAD + "measure breadth = width_ratio(region: torso) on bodies\nregion belly = not torso on bodies\n"
    assert check(spec + CLAIMS).ok


def test_validate_across_disjoint_scopes():
    spec = HEAD + "validate width under light: r2 >= 0.5\n"
    [(line, col, message, help)] = diags(spec, "E0532")
    assert (line, col) == position(spec, "validate width")
    assert message == ("`validate width under light` pairs measure `width` (on bodies) with operator `light` "
                       "(on faces): they share no arm")
    assert help.endswith("give `width` and `light` an arm in common")
    assert check(HEAD + "validate width under widen: r2 >= 0.5\n" + CLAIMS).ok


def test_select_across_disjoint_scopes():
    spec = HEAD + "select b2 = best_of 2 under light by width\n"
    [(line, col, message, _)] = diags(spec, "E0533")
    assert (line, col) == position(spec, "select b2")
    assert message == ("selection `b2` (`best_of 2 under light by width`) pairs measure `width` (on bodies) with "
                       "operator `light` (on faces): they share no arm")
    # an unscoped operator shares every arm; a selection without `under` pairs no operator
    assert check(HEAD + EXTRA + "select b3 = best_of 2 under hue by width\nselect b4 = best_of 2 by width\n").ok


def test_for_each_scorer_with_no_scorer_on_an_arm_names_the_scopes():
    spec = HEAD.replace("scorer laion = laion_aesthetic()", "scorer laion = laion_aesthetic() on faces") + \
        'hypothesis P1 "Pairs" {\n  pairwise_accuracy() > 0.5 on wide for each scorer\n}\n'
    [(line, col, message, help)] = diags(spec, "E0534")
    assert (line, col) == position(spec, "wide", "pairwise_accuracy")
    assert message == ("`for each scorer` finds no scorer in scope on arm `wide`: `pick` on faces, `laion` on "
                       "faces, `sharp` on bodies")
    assert help == "add wide to a scorer's scope, or remove wide from this claim"


def test_a_claim_without_for_with_no_scorer_on_an_arm():
    spec = HEAD + 'hypothesis P1 "Pairs" {\n  pairwise_accuracy() > 0.5 on wide\n}\n'
    spec = spec.replace("scorer laion = laion_aesthetic()", "scorer laion = laion_aesthetic() on faces")
    [(line, col, message, _)] = diags(spec, "E0534")
    assert (line, col) == position(spec, "wide", "pairwise_accuracy")
    assert message.startswith("this claim (no `for`: every scorer in scope) finds no scorer in scope on arm `wide`")


def test_a_comparison_with_no_scorer_on_its_arms():
    spec = _claim("difference(fidelity_index(hue) on faces, fidelity_index(hue) on bodies) > 0 for each scorer")
    spec = spec.replace("scorer laion = laion_aesthetic()", "scorer laion = laion_aesthetic() on faces")
    [(line, col, message, _)] = diags(spec, "E0534")
    assert (line, col) == position(spec, "difference(")
    assert message.startswith("`for each scorer` finds no scorer in scope on arms faces, bodies together:")


@pytest.mark.parametrize("claim,scorer", [
    ("fidelity_index(light) > 0 on faces for sharp", "sharp"),
    ("fidelity_index(hue) > 0 on faces, bodies for laion, pick", "pick"),
    ("difference(fidelity_index(widen) for pick, fidelity_index(widen) for laion) > 0 on bodies", "pick"),
])
def test_a_scorer_named_outside_its_scope(claim, scorer):
    spec = _claim(claim)
    [(line, col, message, help)] = diags(spec, "E0535")
    at = claim.index(f"for {scorer}") + 4 if f"for {scorer}" in claim else claim.index(f", {scorer}") + 2
    assert (line, col) == (spec.count("\n", 0, spec.index(claim)) + 1, 3 + at)
    scope = "bodies" if scorer == "sharp" else "faces"
    arm = "faces" if scorer == "sharp" else "bodies"
    assert message == f"scorer `{scorer}` is scoped on {scope}, so it scores nothing on `{arm}`"
    assert help == (f"claim it on {scope}, or add `{arm}` to the scope of `{scorer}`: "
                    f"`scorer {scorer} = ... on {scope}, {arm}`")


@pytest.mark.parametrize("claim,what", [
    ("fidelity_index(widen) > 0 on faces for laion", "operator `widen`, which runs only on bodies"),
    ("abs(attribute_effect(widen, measure: ita)) < 0.05 on bodies for laion", "measure `ita`, which runs only on faces"),
    ("abs(attribute_effect(hue, measure: ita, controlling: deformation)) < 0.05 on faces for laion",
     "covariate `deformation`, which runs only on bodies"),
    ("placebo_ratio(hue, hue_rest) within [0.5, 2] on bodies for laion", "placebo `hue_rest`, which runs only on faces"),
    ("abs(net_drift(best2)) < 1 on faces for laion", "operator `widen`, which runs only on bodies"),
    ("transfers(fidelity_index(light), from: bodies, to: faces) for laion", "operator `light`, which runs only on faces"),
])
def test_a_statistic_reading_outside_a_scope(claim, what):
    spec = _claim(claim).replace("hypothesis Q", "placebo hue_rest = hue_rotate(region: rest) of hue on faces\n"
                                 "select best2 = best_of 2 under widen by width\nhypothesis Q")
    found = diags(spec, "E0536")
    assert found, [(d.code, d.message) for d in check(spec).diagnostics]
    line, col, message, help = next(x for x in found if what in x[2])
    arm = "bodies" if "on bodies" in claim or "from: bodies" in claim else "faces"
    assert (line, col) == position(spec, arm, claim)
    assert message.endswith(f"on `{arm}` reads {what}")
    assert help.startswith("claim it on ") and f"or add `{arm}` to the scope of" in help


def test_errors_stop_the_ir():
    c = check(_claim("fidelity_index(widen) > 0 on faces for laion"))
    assert not c.ok and c.ir is None


def test_a_repeated_arm_in_a_scope_warns_once():
    spec = HEAD.replace("sharpness() on bodies", "sharpness() on bodies, bodies") + CLAIMS
    c = check(spec)
    assert c.ok and c.ir.scorers["sharp"].on == ("bodies",)
    [(line, col, message, help)] = diags(spec, "W0530")
    line_, col_ = position(spec, ", bodies label", "scorer sharp")
    assert (line, col) == (line_, col_ + 2)
    assert message == "arm `bodies` is listed twice in the scope of scorer `sharp`" and help == "list it once"
