"""The normative examples parse to the expected AST; spans, keywords-as-names, timing."""

from __future__ import annotations

import pytest
from grammar_testutil import GOLDEN, NORMATIVE, ROOT, check_golden, dump_ast

from scoreaudit.grammar import ast
from scoreaudit.grammar.lark_cache import parser as _lark
from scoreaudit.grammar.parser import ERROR_EXAMPLES, parse


@pytest.mark.parametrize("path", NORMATIVE, ids=lambda p: p.stem)
def test_examples_parse_to_golden_ast(path):
    src = path.read_text(encoding="utf-8")
    module, diags = parse(src, str(path))
    assert diags == []
    assert module is not None
    check_golden(GOLDEN / "ast" / f"{path.stem}.json", dump_ast(ast.strip_spans(module)))


def _walk(node):
    import dataclasses

    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        yield node
        for f in dataclasses.fields(node):
            yield from _walk(getattr(node, f.name))
    elif isinstance(node, tuple):
        for x in node:
            yield from _walk(x)


@pytest.mark.parametrize("path", NORMATIVE, ids=lambda p: p.stem)
def test_every_node_has_a_span_matching_its_text(path):
    src = path.read_text(encoding="utf-8")
    module, _ = parse(src)
    lines = src.split("\n")
    for node in _walk(module):
        if not hasattr(node, "span") or isinstance(node, ast.Module):
            continue
        s = node.span
        assert s.line >= 1 and s.end > s.start, node
        # line/column and offsets agree
        assert sum(len(x) + 1 for x in lines[: s.line - 1]) + s.column - 1 == s.start
        text = src[s.start : s.end]
        if isinstance(node, (ast.Ident, ast.Name)):
            name = node.name
            assert text == name
        if isinstance(node, ast.Number):
            assert text == node.text
        if isinstance(node, ast.EachScorer):
            assert text == "for each scorer"
        if isinstance(node, ast.Comment):
            assert text.rstrip() == node.text


def test_specific_nodes():
    src = (ROOT / "examples" / "skin_tone.audit").read_text()
    m, _ = parse(src)
    by_name = {getattr(d, "name", None) and d.name.name: d for d in m.decls}
    rest = by_name["rest"]
    assert rest.expr == ast.Not(ast.Name("skin", rest.expr.operand.span), rest.expr.span)
    hue = by_name["hue"]
    assert isinstance(hue.doses, ast.DoseRange)
    assert (hue.doses.start.value, hue.doses.stop.value, hue.doses.step.value) == (-20, 20, 10)
    light = by_name["light"]
    assert [n.text for n in light.doses.values] == ["-15", "-10", "-5", "0", "5", "10", "15"]
    placebo = by_name["light_rest"]
    assert isinstance(placebo, ast.PlaceboDecl) and placebo.of.name == "light"
    h2 = by_name["H2"].claims[0]
    assert isinstance(h2.expr, ast.Compare) and isinstance(h2.expr.left, ast.Abs)
    assert h2.expr.op == "<" and h2.expr.right.text == "0.05"
    assert isinstance(h2.scorers, ast.EachScorer) and [a.name for a in h2.arms] == ["real"]
    h4 = by_name["H4"].claims[0]
    assert isinstance(h4.expr, ast.Bare) and h4.arms == ()
    assert [a.name.name for a in h4.expr.call.args if a.name] == ["from", "to"]
    h6 = by_name["H6"].claims[0]
    assert h6.expr.call.args[1].name.name == "by"  # `by` is a keyword of `select` only
    sel = by_name["best4"]
    assert sel.operator.name == "light" and sel.measure.name == "ita" and sel.n.text == "4"
    report = m.decls[-1]
    formats = report.settings[1].value
    assert isinstance(formats, ast.ListValue) and not formats.bracketed
    assert [i.name for i in formats.items] == ["html", "pdf"]
    assert len(m.comments) == 11 and m.comments[0].text == "# FDR level for every hypothesis cell"


def test_cross_image_values():
    m, _ = parse((ROOT / "examples" / "cross_image.audit").read_text())
    pick = m.decls[1].call.args[0].value
    assert isinstance(pick, ast.Column) and pick.name.name == "prompt"
    c1 = m.decls[6].claims[0].expr.left
    model = c1.args[1].value
    assert isinstance(model, ast.Product)
    assert (model.left.name, model.right.name) == ("race", "gender")
    factors = m.decls[3].call.args[-1].value
    assert isinstance(factors, ast.ListValue) and factors.bracketed


@pytest.mark.parametrize(
    "src",
    [
        'audit "t" { v: 1 }\nscorer select = f(by: on, for: not, under: abs, scorer: 1, of: doses)',
        'audit "t" { title: report  audit: 1  by: by }',
        'audit "t" { v: 1 }\nregion r = not (a | b) & not c | f(x: 1)',
        'audit "t" { v: 1 }\nregion notes = onion & (for_x)',
        'audit "t" { v: 1 }\noperator o = f() doses -20..20 step 10',
        'audit "t" { v: 1 }\noperator o = f() doses 0.5..1.5 step 0.25',
        'audit "t" { v: 1 }\noperator o = f() doses 1e-3, -2.5E+2, 7',
        'audit "t" { v: 1 }\nselect s = best_of 8 by m',
        'audit "t" { v: 1 }\nhypothesis H "t" { f() > 0 g() h(x) within [-1, 1] for a, b abs(k()) <= 2 on x }',
        'audit "t" { v: 1 }\nhypothesis H "t" { }',
        'audit "t" { s: "a \\"quoted\\" \\\\ word\\n" }',
        'audit "t" {}\nreport {}',
        'audit "t" { v: [1, [2, x], f(y)]  w: a * b * c }',
        'audit "t" { v: 1 }\narm a = images("x", f: [], g: [a,],)',
    ],
)
def test_valid_snippets(src):
    module, diags = parse(src)
    assert diags == [], diags
    assert module is not None


def test_keyword_prefix_is_a_name():
    m, d = parse('audit "t" { v: 1 }\nregion notskin = not_skin | onto\nscorer scorers = f()')
    assert d == []
    assert m.decls[1].expr.left.name == "not_skin" and m.decls[2].name.name == "scorers"


def test_string_escapes():
    m, _ = parse('audit "a \\"b\\" \\\\ \\n \\t \\q" { v: 1 }')
    assert m.decls[0].title.value == 'a "b" \\ \n \t \\q'


def test_error_examples_really_fail():
    for snippets in ERROR_EXAMPLES.values():
        for s in snippets:
            module, diags = parse(s)
            assert module is None and diags


def test_parser_object_is_cached():
    assert _lark() is _lark()
