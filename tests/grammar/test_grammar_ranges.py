"""`a..b` as a value (`seeds: 0..4`): parse, spans, fmt round trip, lowering, highlighting."""

from __future__ import annotations

from scoreaudit.compiler.fmt import format_module
from scoreaudit.grammar import ast
from scoreaudit.grammar.highlight import AuditLexer
from scoreaudit.grammar.parser import parse

SRC = ('audit "t" { seed: 1 }\n'
       'arm gen = generate("pipe", prompts: "p.txt", seeds: 0..4)\n'
       'arm big = generate("pipe", prompts: "p.txt", seeds: [0..2, 7])\n')


def _arg(module, decl: int, name: str):
    return next(a for a in module.decls[decl].call.args if a.name and a.name.name == name)


def test_range_parses_with_its_span():
    module, diags = parse(SRC)
    assert not diags
    v = _arg(module, 1, "seeds").value
    assert isinstance(v, ast.Range) and (v.start.text, v.stop.text) == ("0", "4")
    assert SRC[v.span.start:v.span.end] == "0..4"
    assert (v.span.line, v.span.column) == (2, 53)


def test_range_formats_back_and_round_trips():
    module, _ = parse(SRC)
    out = format_module(module)
    assert "seeds: 0..4)" in out and "seeds: [0..2, 7])" in out
    again, diags = parse(out)
    assert not diags and ast.strip_spans(again) == ast.strip_spans(module)
    assert format_module(again) == out


def test_negative_and_dose_ranges_still_lex():
    module, diags = parse('audit "t" { seed: 1 }\narm g = generate("p", prompts: "p.txt", seeds: -2..2)\n'
                          "operator o = lab_shift(channel: L) doses -20..20 step 10\n")
    assert not diags
    v = _arg(module, 1, "seeds").value
    assert (v.start.value, v.stop.value) == (-2, 2)
    assert isinstance(module.decls[2].doses, ast.DoseRange)


def test_range_lowers_to_its_whole_numbers():
    from scoreaudit import api

    checked = api.check("t.audit", source=SRC.replace("[0..2, 7]", "0..2"), tables=False)
    assert checked.ok, [d.message for d in checked.diagnostics]
    assert checked.ir.arms["gen"].call.params["seeds"] == [0, 1, 2, 3, 4]
    assert checked.ir.arms["big"].call.params["seeds"] == [0, 1, 2]


def test_a_range_inside_a_list_is_not_a_number():
    from scoreaudit import api

    checked = api.check("t.audit", source=SRC, tables=False)
    assert not checked.ok and {d.code for d in checked.diagnostics} == {"E0303"}


def test_highlighter_marks_the_dots_as_an_operator():
    from pygments.token import Error, Number, Operator

    toks = [(t, v) for t, v in AuditLexer().get_tokens("seeds: 0..4") if v.strip()]
    assert (Number.Integer, "0") in toks and (Operator, "..") in toks and (Number.Integer, "4") in toks
    assert not [v for t, v in toks if t in Error]
