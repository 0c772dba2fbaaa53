"""The server's features in-process: the same diagnostics as `check`, positions, the name index, completion contexts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoreaudit import api
from scoreaudit.diagnostics import Span
from scoreaudit.lsp import features
from scoreaudit.lsp.index import Index, scan_declarations
from scoreaudit.lsp.positions import Lines

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted((ROOT / "examples").glob("*.audit")) + sorted((ROOT / "tests" / "compiler" / "invalid").glob("*.audit"))


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_diagnostics_are_checks(path):
    """Every example and every golden invalid spec: the server's diagnostics are `api.check`'s, item for item."""
    text = path.read_text(encoding="utf-8")
    doc = features.Document(text, str(path))
    assert doc.diagnostics(tables=False) == api.check(path, source=text, tables=False).diagnostics
    assert doc.diagnostics(tables=True) == api.check(path, source=text, tables=True).diagnostics


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_features_never_fail_on_the_corpus(path):
    """Hover, completion, definition and the outline answer at every word of valid and invalid specs."""
    text = path.read_text(encoding="utf-8")
    doc = features.Document(text, str(path))
    features.symbols(doc)
    for offset in range(0, len(text), 7):
        features.hover(doc, offset)
        features.definition(doc, offset)
        features.complete(text, offset)


def test_positions_in_every_encoding():
    text = "ab\n\U0001F600x = é\n"
    for enc, col_x in (("utf-16", 2), ("utf-8", 4), ("utf-32", 1)):
        lines = Lines(text, enc)
        x = text.index("x")
        assert lines.position(x) == (1, col_x)
        assert lines.offset(1, col_x) == x
        assert lines.offset(1, 999) == text.index("\n", x)  # clamped to the line
    lines = Lines(text, "utf-16")
    assert lines.span_range(Span(2, 2, 2, 3)) == ((1, 2), (1, 3))  # 1-based code-point columns → UTF-16
    assert lines.offset(7, 0) == len(text)


def test_references_follow_parameter_models_not_spelling():
    text = ('audit "t" { version: 1 }\nscorer s = planted()\n'
            'arm real = images("d", manifest: "m.csv", kind: real, cluster: c)\n'
            'region face = face()\nregion skin = skin(within: face)\n'
            'operator light = lab_shift(channel: L, region: skin) doses -5, 0, 5\n'
            'hypothesis H "h" {\n  fidelity_index(light) > 0 on real for s\n}\n')
    module, _ = api.parse(text)
    ix = Index(module)
    refs = {(text[o.start:o.end], o.role) for o in ix.occurrences}
    assert ("face", "plugin") in refs and ("face", "definition") in refs and ("face", "reference") in refs
    real = [o for o in ix.of_name("real")]
    assert [o.role for o in real] == ["definition", "reference"]  # `kind: real` is a value, `on real` a use
    assert text[real[1].start - 3:real[1].end] == "on real"
    assert [text[o.start:o.end] for o in ix.of_name("s")] == ["s", "s"]


def test_unknown_syntax_is_indexed_generically():
    """A node type the index does not know (new claim syntax) still yields its references."""
    import dataclasses

    from scoreaudit.grammar import ast

    @dataclasses.dataclass(frozen=True)
    class Reading:  # stands in for syntax added to the grammar later
        call: ast.Call
        on: ast.Ident
        span: Span = ast._NO_SPAN

    text = 'audit "t" { version: 1 }\narm real = images("d", manifest: "m.csv")\n'
    module, _ = api.parse(text)
    start = text.index("real")
    ident = ast.Ident("real", Span(2, 5, 2, 9, start, start + 4))
    claim_like = Reading(ast.Call(ast.Ident("asymmetry"), ()), ident)
    hyp = ast.HypothesisDecl(ast.Ident("H"), ast.String("x"), (claim_like,))
    ix = Index(dataclasses.replace(module, decls=module.decls + (hyp,)))
    assert [o.role for o in ix.of_name("real")] == ["definition", "reference"]


def test_declarations_are_found_while_the_text_does_not_parse():
    text = 'audit "t" { version: 1 }\nscorer s = planted(\narm a = images("d")\nhypothesis H "x" {\n  fidelity_index(\n'
    doc = features.Document(text)
    assert doc.module is None
    assert [(d.name, d.kind) for d in scan_declarations(text)] == [("s", "scorer"), ("a", "arm"), ("H", "hypothesis")]
    assert features.definition(doc, text.index("images") - 4) is not None
    assert [s.name for s in features.symbols(doc)] == ["s", "a", "H"]
    with pytest.raises(features.RenameError, match="syntax errors"):
        features.rename(doc, text.index("arm a") + 4, "b")


@pytest.mark.parametrize("before,expected", [
    ("hypothesis H \"x\" {\n  asymmetry(light) < 0.1 on ", {"real", "syn"}),
    ("hypothesis H \"x\" {\n  asymmetry(light) < 0.1 on real, ", {"real", "syn"}),
    ("hypothesis H \"x\" {\n  asymmetry(light) < 0.1 for ", {"s", "each"}),
    ("hypothesis H \"x\" {\n  asymmetry(", {"light", "operator", "test"}),
    ("hypothesis H \"x\" {\n  transfers(asymmetry(light), from: ", {"real", "syn"}),
    ("hypothesis H \"x\" {\n  difference(asymmetry(light) on ", {"real", "syn"}),  # readings
    ("placebo p = lab_shift(region: skin) of ", {"light"}),
    ("region r = skin(within: ", {"skin"}),
    ("select b = best_of 2 under light by ", {"ita"}),
    ("validate ita under light: ", {"r2", "monotonic"}),
    ("arm z = images(\"d\", kind: ", {"real", "synthetic"}),
    ("report {\n  formats: html, ", {"html", "pdf"}),
])
def test_completion_contexts(before, expected):
    head = ('audit "t" { version: 1 }\nscorer s = planted()\n'
            'arm real = images("d", manifest: "m.csv", kind: real)\narm syn = images("e", manifest: "n.csv")\n'
            'region skin = skin()\nmeasure ita = ita(region: skin)\n'
            'operator light = lab_shift(channel: L, region: skin) doses -5, 0, 5\n')
    text = head + before
    start, items = features.complete(text, len(text))
    assert start == len(text)
    assert {c.label for c in items} == expected


def test_completion_replaces_the_word_being_typed():
    text = 'audit "t" { version: 1 }\nscorer s = pick'
    start, items = features.complete(text, len(text))
    assert text[start:] == "pick" and "pickscore" in {c.label for c in items}
    assert features.complete('audit "t" { version: 1 }  # com', 30)[1] == []
    assert features.complete('audit "t hello', 12)[1] == []


def test_lsp_without_the_extra_says_how_to_install_it():
    code = ("import sys; sys.modules['pygls'] = None; sys.modules['lsprotocol'] = None\n"
            "from scoreaudit.cli import main; sys.exit(main(['lsp']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert out.returncode == 3, out.stderr
    assert "pip install 'scoreaudit[lsp]'" in out.stderr and out.stdout == ""


def test_keywords_have_hover_text():
    from scoreaudit.grammar.vocabulary import DOCS, KEYWORDS

    text = (ROOT / "examples" / "skin_tone.audit").read_text(encoding="utf-8")
    doc = features.Document(text)
    for word in KEYWORDS:  # every keyword of the language (the grammar's, by test_grammar_vocabulary)
        assert features.hover(features.Document(f"{word} "), 0) == f"**{word}** (keyword): {DOCS[word]}"
    assert "(keyword)" in features.hover(doc, text.index(" doses ") + 2)
    assert "equivalence" in features.hover(doc, text.index("within [") + 1)
    assert features.hover(doc, text.index("by: race") + 1).startswith("**`by`**")  # an argument, not the keyword
