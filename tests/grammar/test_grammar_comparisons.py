"""Comparisons between readings (spec/language.md): the normative S1–S7 parse, print canonically, round-trip."""

from __future__ import annotations

import pytest

from scoreaudit.compiler.fmt import fmt_stat, format_module
from scoreaudit.grammar import ast
from scoreaudit.grammar.parser import parse

DESIGN = [
    'ratio(fidelity_index(light) for hps, fidelity_index(light) for laion) < 0.05 on real',
    'abs(ratio(asymmetry(light) on real, asymmetry(light) on synthetic)) < 0.33 for each scorer',
    'difference(pairwise_accuracy() on wide for hps_dp, pairwise_accuracy() on orig for hps_op) < 0',
    'difference(pairwise_accuracy() for ir, pairwise_accuracy() for clip) > 0 on rated_pairs',
    'abs(difference(fidelity_index(light) where race = "Black", fidelity_index(light) where race = "White"))'
    ' < 0.05 on real for each scorer',
    'share(decompose(group_gap(tone, "dark", "light"), via: attribute_effect(light, measure: ita)), part: confound)'
    ' > 0.5 on synthetic for each scorer',
    'agreement(label: judge, metric: auroc, missing: -1) > 0.6 on wide for each scorer',
]


def _claim(line: str) -> ast.Claim:
    module, diags = parse(f'audit "t" {{ version: 1 }}\nhypothesis S "t" {{\n  {line}\n}}\n')
    assert not diags, diags
    return module.decls[1].claims[0]


@pytest.mark.parametrize("line", DESIGN)
def test_design_examples_parse_and_print_as_written(line):
    module, diags = parse(f'audit "t" {{ version: 1 }}\nhypothesis S "t" {{\n  {line}\n}}\n')
    assert not diags
    out = format_module(module)
    assert f"  {line}\n" in out
    again, _ = parse(out)
    assert ast.strip_spans(again) == ast.strip_spans(module)


def test_reading_qualifiers_bind_to_the_reading():
    c = _claim('ratio(fidelity_index(light) on real for hps where race = "Black" where age = 3, curve(light)) '
               'within [0.5, 2] on synthetic for laion')
    comp = c.expr.left
    assert isinstance(comp, ast.Comparison) and comp.kind == "ratio"
    a, b = comp.a, comp.b
    assert [x.name for x in a.arms] == ["real"] and [x.name for x in a.scorers] == ["hps"]
    assert [w.column.name for w in a.where] == ["race", "age"]
    assert isinstance(a.where[0].value, ast.String) and a.where[0].value.value == "Black"
    assert isinstance(a.where[1].value, ast.Number) and a.where[1].value.text == "3"
    assert b.arms == () and b.scorers == () and b.where == ()
    assert [x.name for x in c.arms] == ["synthetic"] and [x.name for x in c.scorers] == ["laion"]


def test_qualifiers_print_in_canonical_order():
    c = _claim('difference(fidelity_index(light) where race = "Black" for hps on real, fidelity_index(light)) > 0')
    assert fmt_stat(c.expr.left) == ('difference(fidelity_index(light) on real for hps where race = "Black", '
                                     'fidelity_index(light))')


def test_abs_wraps_a_comparison():
    c = _claim("abs(difference(curve(light) for a, curve(light) for b)) < 0.1 on real")
    assert isinstance(c.expr.left, ast.Abs) and isinstance(c.expr.left.call, ast.Comparison)


@pytest.mark.parametrize("bad", [
    "difference(curve(light), curve(light))",            # a comparison alone is no claim
    "difference(curve(light)) > 0",                      # two readings
    "ratio(curve(light), curve(light), curve(light)) > 0",
    'difference(curve(light) where race, curve(light)) > 0',
    'difference(curve(light) where race = Black, curve(light)) > 0',  # the value is quoted
    "curve(light) on real < curve(light) on synthetic",  # what a new user tries first: E0472
])
def test_malformed_comparisons_are_syntax_errors(bad):
    module, diags = parse(f'audit "t" {{ version: 1 }}\nhypothesis S "t" {{\n  {bad}\n}}\n')
    assert module is None and diags and diags[0].code[:3] in ("E01", "E04")


def test_two_readings_compared_directly_get_the_rewrite():
    _, diags = parse('audit "t" { version: 1 }\nhypothesis S "t" {\n  curve(light) on real < curve(light) on '
                     'synthetic for each scorer\n}\n')
    assert [d.code for d in diags] == ["E0472"]
    assert diags[0].help == ("write `difference(curve(light) on real, curve(light) on synthetic) < 0 "
                             "for each scorer`")


def test_keywords_stay_names_elsewhere():
    module, diags = parse('audit "t" { version: 1 }\narm a = images("x", where: ratio, difference: 1)\n'
                          'measure ratio_x = f(where: 1)\n')
    assert not diags
    assert module.decls[1].call.args[1].value.name == "ratio"
