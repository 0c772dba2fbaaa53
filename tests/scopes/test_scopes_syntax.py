"""`on ARM, ARM` after a declaration: parsed in either order with `label:`, printed canonically by fmt."""

from __future__ import annotations

import pytest

from scoreaudit import api
from scoreaudit.compiler.fmt import format_module
from scoreaudit.grammar import ast
from scoreaudit.grammar.ast import strip_spans

from scopes_testutil import CLAIMS, HEAD

AUDIT = 'audit "t" { version: 1 }\n'


def _module(text):
    module, problems = api.parse(text)
    assert module is not None and not problems, problems
    return module


def test_every_scoped_declaration_parses_with_its_arms():
    module = _module(HEAD + CLAIMS)
    scopes = {d.name.name: tuple(a.name for a in d.on) for d in module.decls if hasattr(d, "on")}
    assert scopes == {"pick": ("faces",), "laion": (), "sharp": ("bodies",), "face": (), "skin": (), "rest": (),
                      "torso": ("bodies",), "ita": ("faces",), "width": ("bodies",), "deformation": ("bodies",),
                      "light": ("faces",), "light_rest": (), "widen": ("bodies",)}
    sharp = next(d for d in module.decls if getattr(d, "name", None) and d.name.name == "sharp")
    assert sharp.label.value == "Sharpness"
    # the declaration's span runs to its last token, and each arm keeps its own position
    text = HEAD
    line = text.splitlines()[1]
    pick = module.decls[1]
    assert (pick.span.line, pick.span.end_column) == (2, len(line) + 1)
    assert (pick.on[0].span.line, pick.on[0].span.column) == (2, line.index("faces") + 1)


@pytest.mark.parametrize("decl", [
    'scorer ir = image_reward(prompt: "x") {tail}',
    "operator light = lab_shift(channel: L, region: skin) doses -5, 0, 5 {tail}",
    "placebo light_rest = lab_shift(channel: L, region: rest) of light {tail}",
])
def test_scope_and_label_in_either_order_mean_the_same(decl):
    first = _module(AUDIT + decl.format(tail='on faces, bodies label: "IR"'))
    second = _module(AUDIT + decl.format(tail='label: "IR" on faces, bodies'))
    assert strip_spans(first) == strip_spans(second)
    d = first.decls[1]
    assert [a.name for a in d.on] == ["faces", "bodies"] and d.label.value == "IR"
    # fmt prints the scope first, whatever the order written
    assert format_module(second).strip().splitlines()[-1] == decl.format(tail='on faces, bodies label: "IR"')


def test_fmt_round_trips_scopes():
    source = HEAD + CLAIMS
    once = format_module(_module(source))
    assert format_module(_module(once)) == once
    assert strip_spans(_module(once)) == strip_spans(_module(source))
    for line in ("region torso = mask(column: torso_mask) on bodies",
                 "covariate deformation = warp_deformation() on bodies",
                 "operator widen = torso_warp(region: torso) doses 0.8, 0.9, 1.0, 1.1, 1.2 on bodies",
                 'scorer sharp = sharpness() on bodies label: "Sharpness"'):
        assert line in once.replace("  =", " =").replace("  ", " "), line


def test_a_region_expression_ending_in_a_name_takes_a_scope():
    module = _module(AUDIT + "region rest = not skin on bodies\nregion both = face & (skin | rest) on faces, bodies\n")
    _, rest, both = module.decls
    assert isinstance(rest.expr, ast.Not) and [a.name for a in rest.on] == ["bodies"]
    assert isinstance(both.expr, ast.BinaryRegion) and [a.name for a in both.on] == ["faces", "bodies"]


@pytest.mark.parametrize("text,at", [
    ("arm a = images(\"d\") on faces", "on"),  # arms have no scope
    ("validate ita under light: r2 >= 0.5 on faces", "on"),
    ("scorer s = planted() on\n", None),  # an arm must follow `on`: the end of the file
    ('scorer s = planted() on faces label: "a" on bodies', "on bodies"),  # one scope
])
def test_scope_where_the_grammar_has_none_is_a_syntax_error(text, at):
    module, problems = api.parse(AUDIT + text)
    assert module is None and problems[0].code == "E0101", problems
    if at is not None:
        assert (problems[0].span.line, problems[0].span.column) == (2, text.index(at) + 1)


def test_on_is_still_a_name_where_no_scope_can_follow():
    # where no scope can follow (an argument value), `on` is a name
    module, problems = api.parse('audit "t" { version: 1 }\nregion r = mask(column: on)\n')
    assert module is not None and not problems
    assert module.decls[1].expr.args[0].value.name == "on" and module.decls[1].on == ()


def test_highlighter_marks_a_scope_keyword():
    from pygments.token import Error, Keyword

    from scoreaudit.grammar.highlight import AuditLexer

    tokens = list(AuditLexer().get_tokens(HEAD))
    assert not [t for t in tokens if t[0] is Error]
    ons = [ttype for ttype, value in tokens if value == "on"]
    assert ons and all(t in Keyword for t in ons)


@pytest.mark.parametrize("decl,code,message", [
    ("operator light = lab_shift(channel: L, region: skin) on faces doses -5, 0, 5", "E0102",
     "an operator's scope `on ...` comes after its doses"),
    ("placebo p = lab_shift(channel: L, region: rest) on faces of light", "E0101",
     "a placebo's scope `on ...` comes after `of OPERATOR`"),
])
def test_a_scope_written_too_early_says_where_it_goes(decl, code, message):
    module, problems = api.parse(AUDIT + decl + "\n")
    assert module is None
    [d] = problems
    assert (d.code, d.message) == (code, message)
    assert (d.span.line, d.span.column) == (2, decl.index(" on ") + 2)
    assert d.help.startswith("move `on ARM, ...` to the end")
    # without a later `doses`, the operator still just lacks its doses
    module, problems = api.parse(AUDIT + "operator light = lab_shift(channel: L, region: skin) on faces\n")
    assert problems[0].message == "an operator needs its doses"


def test_textmate_grammar_marks_a_scope_keyword(tmp_path):
    import shutil
    from pathlib import Path

    babi = pytest.importorskip("babi.highlight")
    grammar = Path(__file__).resolve().parents[2] / "editors" / "vscode" / "syntaxes" / "audit.tmLanguage.json"
    shutil.copy(grammar, tmp_path / "source.audit.json")
    compiler = babi.Grammars(str(tmp_path)).compiler_for_scope("source.audit")
    line = "operator widen = torso_warp(region: torso) doses 0.8..1.2 step 0.1 on bodies, faces\n"
    _, regions = babi.highlight_line(compiler, compiler.root_state, line, True)
    scopes = {line[a:b]: scope[-1] for a, b, scope in regions if line[a:b].strip()}
    assert scopes["on"] == "keyword.other.audit" and scopes["doses"] == "keyword.other.audit"
