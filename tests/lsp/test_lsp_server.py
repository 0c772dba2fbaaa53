"""The protocol contract of `scoreaudit lsp`: a real server process driven over stdio."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from lsp_client import Client, ServerError, t

from scoreaudit import api
from scoreaudit.compiler.describe import describe, describe_entry
from scoreaudit.compiler.fmt import format_module
from scoreaudit.registry import REGISTRIES, load_plugins

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SKIN = (EXAMPLES / "skin_tone.audit").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def client():
    c = Client(debounce_ms=20)
    yield c
    assert c.close() == 0


_n = 0


def _open(client: Client, text: str, tmp_path: Path | None = None) -> tuple[str, list[t.Diagnostic]]:
    """Open `text` under a fresh URI; return it and the diagnostics published on open."""
    global _n
    _n += 1
    folder = tmp_path or Path("/nonexistent-scoreaudit-lsp")
    uri = (folder / f"spec{_n}.audit").as_uri()
    client.open(uri, text)
    return uri, client.diagnostics(uri, version=1)


def _pos(text: str, needle: str, k: int = 0) -> tuple[int, int]:
    """(line, character) of the k-th character of the first `needle` (ASCII text)."""
    i = text.index(needle) + k
    line = text.count("\n", 0, i)
    return line, i - (text.rfind("\n", 0, i) + 1)


def _apply(text: str, edits: list[t.TextEdit]) -> str:
    """Apply edits (ASCII text: characters are UTF-16 units) from the last to the first."""
    starts = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]

    def off(p: t.Position) -> int:
        return starts[p.line] + p.character

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:off(e.range.start)] + e.new_text + text[off(e.range.end):]
    return text


def _hover(client, uri, pos) -> str | None:
    h = client.request("textDocument/hover", client.position_params(t.HoverParams, uri, *pos), t.Hover)
    return None if h is None else h.contents.value


def _complete(client, uri, pos) -> list[t.CompletionItem]:
    res = client.request("textDocument/completion", client.position_params(t.CompletionParams, uri, *pos),
                         t.CompletionList)
    return list(res.items)


# ---------------------------------------------------------------- diagnostics


def test_capabilities(client):
    caps = client.init.capabilities
    assert caps.hover_provider and caps.definition_provider and caps.references_provider
    assert caps.document_formatting_provider and caps.document_symbol_provider
    assert caps.rename_provider.prepare_provider is True
    assert caps.completion_provider is not None


def test_invalid_spec_publishes_checks_codes_spans_and_help(client):
    text = SKIN.replace("lab_shift(channel: L, region: skin) doses", "lab_shfit(channel: L, region: skin) doses") \
               .replace("on real, synthetic for each scorer", "on real, synthetc for each scorer")
    uri, diags = _open(client, text)
    expected = api.check("spec.audit", source=text).diagnostics
    assert [d.code for d in diags] == [d.code for d in expected] == ["E0202", "E0203"]
    for got, want in zip(diags, expected):
        assert (got.range.start.line, got.range.start.character) == (want.span.line - 1, want.span.column - 1)
        assert (got.range.end.line, got.range.end.character) == (want.span.end_line - 1, want.span.end_column - 1)
        assert got.severity == t.DiagnosticSeverity.Error and got.source == "scoreaudit"
        assert got.message.startswith(want.message) and f"help: {want.help}" in got.message
    assert _pos(text, "lab_shfit") == (diags[0].range.start.line, diags[0].range.start.character)
    assert diags[0].range.end.character - diags[0].range.start.character == len("lab_shfit")
    assert "did you mean 'lab_shift'?" in diags[0].message
    assert _pos(text, "synthetc") == (diags[1].range.start.line, diags[1].range.start.character)


def test_syntax_error_and_warning(client):
    text = SKIN.replace("scorer ir    = image_reward(", "scorer ir    = image_reward(prompt = 1, ")
    uri, diags = _open(client, text)
    expected = api.check("spec.audit", source=text).diagnostics
    assert expected and [d.code for d in diags] == [d.code for d in expected]
    assert diags[0].code.startswith("E01")
    assert diags[0].range.start.line == text[:text.index("prompt = 1")].count("\n")


def test_diagnostics_follow_typing(client):
    """Incremental edits re-check after the debounce; fixing the typo clears the diagnostics."""
    text = SKIN.replace("select best4 = best_of 4 under light by ita", "select best4 = best_of 4 under lihgt by ita")
    uri, diags = _open(client, text)
    assert [d.code for d in diags] == ["E0203"]
    line, col = _pos(text, "lihgt")
    client.edit(uri, (line, col), (line, col + 5), "light")
    assert client.diagnostics(uri, version=2) == []
    client.edit(uri, (line, col), (line, col), "x")  # `xlight`: unknown again
    again = client.diagnostics(uri, version=3)
    assert [d.code for d in again] == ["E0203"] and "xlight" in again[0].message


def test_utf16_ranges(client):
    """Columns are UTF-16 units: a character outside the BMP counts two."""
    text = SKIN.replace('scorer pick  = pickscore(prompt: "a photo of a person")',
                        'scorer pick  = pickscore(prompt: "a \U0001F600 photo", bogus: 1)')
    uri, diags = _open(client, text)
    assert [d.code for d in diags] == ["E0301"]
    line = text.splitlines()[diags[0].range.start.line]
    assert diags[0].range.start.character == len(line[:line.index("bogus")].encode("utf-16-le")) // 2
    assert diags[0].range.start.character == line.index("bogus") + 1


def test_close_clears_diagnostics(client):
    text = SKIN.replace("measure ita = ita(region: skin)", "measure ita = ita(region: skn)")
    uri, diags = _open(client, text)
    assert [d.code for d in diags] == ["E0203"]
    client.notify("textDocument/didClose", t.DidCloseTextDocumentParams(t.TextDocumentIdentifier(uri)))
    assert client.diagnostics(uri) == []


@pytest.mark.slow  # the server's debounce really sleeps (4 s measured)
def test_debounce_checks_the_last_text_once():
    """Five quick edits within the debounce window publish once, for the last version."""
    c = Client(debounce_ms=1000)
    try:
        text = SKIN
        uri = (Path("/nonexistent-scoreaudit-lsp") / "debounce.audit").as_uri()
        c.open(uri, text)
        assert c.diagnostics(uri, version=1) == []
        line, col = _pos(text, "lab_shift")
        for ch in "abcde":
            c.edit(uri, (line, col), (line, col), ch)
        sent = time.monotonic()
        published = c.diagnostics(uri)  # the first publication after the edits
        assert time.monotonic() - sent >= 0.9  # the client's debounce_ms (1000) was honoured
        assert c.versions[uri] == 6
        assert [d.code for d in published] == ["E0202"]
        assert "edcbalab_shift" in published[0].message
        time.sleep(1.5)  # longer than the debounce: no second publication follows
        assert c.notifications.empty()
    finally:
        assert c.close() == 0


# ---------------------------------------------------------------- hover


def test_hover_shows_describe_text_and_declarations(client):
    uri, _ = _open(client, SKIN)
    load_plugins()
    plugin = _hover(client, uri, _pos(SKIN, "lab_shift", 3))
    assert describe_entry(REGISTRIES["operator"].get("lab_shift")) in plugin
    stat = _hover(client, uri, _pos(SKIN, "fidelity_index", 2))
    assert describe_entry(REGISTRIES["statistic"].get("fidelity_index")) in stat
    setting = _hover(client, uri, _pos(SKIN, "correction"))
    assert describe("correction") in setting
    # a measure plugin and a measure declared with the same name: the call is the plugin
    ita_call = _hover(client, uri, _pos(SKIN, "ita(region", 1))
    assert describe_entry(REGISTRIES["measure"].get("ita")) in ita_call
    # a declared name: its declaration, wherever the name is used
    decl = _hover(client, uri, _pos(SKIN, "(light, light_rest)", 2))
    assert "operator `light`" in decl
    assert "operator light = lab_shift(channel: L, region: skin) doses -15, -10, -5, 0, 5, 10, 15" in decl
    param = _hover(client, uri, _pos(SKIN, "channel: L"))
    assert "L | a | b" in param and "lab_shift" in param
    assert _hover(client, uri, _pos(SKIN, "Skin lightness", 2)) is None  # inside a string
    assert _hover(client, uri, _pos(SKIN, "kind: real", 7)) is None  # a value spelled like the arm `real`
    assert _hover(client, uri, _pos(SKIN, "# detected face", 5)) is None  # inside a comment


# ---------------------------------------------------------------- completion


def _labels(items) -> list[str]:
    return [i.label for i in items]


def test_completion(client):
    load_plugins()
    claim = SKIN.replace("hypothesis H2", 'hypothesis H9 "new" {\n  fidelity_index(light) > 0 on \n}\nhypothesis H2')
    uri, _ = _open(client, claim)
    line, col = _pos(claim, "> 0 on ", len("> 0 on "))
    assert set(_labels(_complete(client, uri, (line, col)))) == {"real", "synthetic"}

    after_for = claim.replace("> 0 on \n", "> 0 on real for \n")
    uri, _ = _open(client, after_for)
    items = _labels(_complete(client, uri, _pos(after_for, "real for ", len("real for "))))
    assert items == ["laion", "pick", "ir", "hps", "each"]

    start = claim.replace("  fidelity_index(light) > 0 on \n", "  fid\n")
    uri, _ = _open(client, start)
    items = _complete(client, uri, _pos(start, "  fid\n", 5))
    stats = [e.name for e in REGISTRIES["statistic"] if not e.meta.get("validation")]
    assert set(stats) <= set(_labels(items)) and "abs" in _labels(items)
    fi = next(i for i in items if i.label == "fidelity_index")
    assert fi.kind == t.CompletionItemKind.Function and fi.detail.startswith("fidelity_index(")
    assert fi.text_edit.range.start.character == 2 and fi.text_edit.range.end.character == 5  # replaces `fid`
    assert fi.insert_text_format == t.InsertTextFormat.Snippet and fi.text_edit.new_text.startswith("fidelity_index(")

    # inside a statistic: the declared operators first, then its parameters
    inside = claim.replace("fidelity_index(light) > 0 on \n", "placebo_ratio(light, \n")
    uri, _ = _open(client, inside)
    items = _labels(_complete(client, uri, _pos(inside, "(light, \n", len("(light, "))))
    assert items[:4] == ["light", "light_rest", "blur", "hue"]

    # a plugin's parameters, then the values a parameter takes
    op = SKIN.replace("operator blur = gaussian_blur(region: skin) doses 0, 1, 2, 4", "operator blur = lab_shift(")
    uri, _ = _open(client, op)
    items = _complete(client, uri, _pos(op, "lab_shift(\n", len("lab_shift(")))
    assert _labels(items) == ["channel", "region"] and items[0].text_edit.new_text == "channel: "
    val = SKIN.replace("operator blur = gaussian_blur(region: skin) doses 0, 1, 2, 4",
                       "operator blur = lab_shift(channel: L, region: ")
    uri, _ = _open(client, val)
    assert _labels(_complete(client, uri, _pos(val, "L, region: ", len("L, region: ")))) == ["face", "skin", "rest"]

    # plugin names after `scorer NAME =`, with their parameters in the detail
    sc = SKIN.replace("scorer ir    = image_reward(", "scorer ir    = \nscorer ir2 = image_reward(")
    uri, _ = _open(client, sc)
    items = _complete(client, uri, _pos(sc, "scorer ir    = \n", len("scorer ir    = ")))
    assert set(_labels(items)) == set(REGISTRIES["scorer"].names())
    pick = next(i for i in items if i.label == "pickscore")
    assert "prompt" in pick.detail and describe_entry(REGISTRIES["scorer"].get("pickscore")) in pick.documentation.value

    # settings and their values
    st = SKIN.replace("  correction: bh ", "  correction: \n  ")
    uri, _ = _open(client, st)
    assert _labels(_complete(client, uri, _pos(st, "correction: \n", len("correction: ")))) == \
        ["bh", "by", "holm", "bonferroni", "none"]
    keys = _labels(_complete(client, uri, _pos(st, "bootstrap")))
    assert "family" in keys and "alpha" not in keys  # alpha is given already

    # nothing inside comments
    assert _complete(client, uri, _pos(st, "# FDR", 3)) == []


def test_completion_without_snippet_support():
    c = Client(snippets=False)
    try:
        text = SKIN.replace("  fidelity_index(light) > 0 on real, synthetic", "  fidelity_index(light) > 0 on real, synthetic\n  fid")
        uri = (Path("/nonexistent-scoreaudit-lsp") / "plain.audit").as_uri()
        c.open(uri, text)
        c.diagnostics(uri, version=1)
        res = c.request("textDocument/completion", c.position_params(
            t.CompletionParams, uri, *_pos(text, "\n  fid", 6)), t.CompletionList)
        fi = next(i for i in res.items if i.label == "fidelity_index")
        assert fi.insert_text_format == t.InsertTextFormat.PlainText and fi.text_edit.new_text == "fidelity_index"
    finally:
        assert c.close() == 0


# ---------------------------------------------------------------- navigation and rename


def test_definition_and_references(client):
    uri, _ = _open(client, SKIN)
    loc = client.request("textDocument/definition",
                         client.position_params(t.DefinitionParams, uri, *_pos(SKIN, "by ita", 4)), t.Location)
    assert (loc.range.start.line, loc.range.start.character) == _pos(SKIN, "ita = ita")
    refs = client.request("textDocument/references", client.position_params(
        t.ReferenceParams, uri, *_pos(SKIN, "region skin", 8), context=t.ReferenceContext(include_declaration=True)),
        list[t.Location])
    lines = SKIN.splitlines()
    texts = [lines[r.range.start.line][r.range.start.character:r.range.end.character] for r in refs]
    assert texts == ["skin"] * 6  # declared once, used by rest, ita, light, blur, hue
    assert all(lines[r.range.end.line][r.range.end.character] != "(" for r in refs)  # never the plugin `skin()`


def test_rename_edits_every_use_and_only_uses(client):
    uri, _ = _open(client, SKIN)
    edit = client.request("textDocument/rename", client.position_params(
        t.RenameParams, uri, *_pos(SKIN, "on real", 3), new_name="real_faces"), t.WorkspaceEdit)
    out = _apply(SKIN, edit.changes[uri])
    assert "arm real_faces" in out and "kind: real," in out  # `kind: real` is a value, not the arm
    assert out.count("real_faces") == 1 + 6  # the declaration, `on real` in H1-H3, H5, H6 and `to: real` in H4
    checked = api.check("spec.audit", source=out)
    assert checked.ok and "real_faces" in checked.ir.arms and "real" not in checked.ir.arms

    prep = client.request("textDocument/prepareRename", client.position_params(
        t.PrepareRenameParams, uri, *_pos(SKIN, "light_rest", 2)), t.PrepareRenamePlaceholder)
    assert prep.placeholder == "light_rest"
    assert client.request("textDocument/prepareRename", client.position_params(
        t.PrepareRenameParams, uri, *_pos(SKIN, "lab_shift", 2))) is None
    for bad in ("for", "2x", "hue"):
        with pytest.raises(ServerError) as e:
            client.request("textDocument/rename", client.position_params(
                t.RenameParams, uri, *_pos(SKIN, "operator light", 10), new_name=bad))
        assert e.value.code == -32602 and e.value.message


# ---------------------------------------------------------------- formatting and outline


def test_formatting_is_fmt(client):
    messy = 'audit   "t"{version:1 seed:2}\nscorer s=planted( fidelity:0.1 )  # keep\n' \
            'arm a = images("d", manifest:"m.csv",kind:real)\nreport{formats:html,pdf}\n'
    uri, _ = _open(client, messy)
    edits = client.request("textDocument/formatting", t.DocumentFormattingParams(
        text_document=t.TextDocumentIdentifier(uri), options=t.FormattingOptions(tab_size=2, insert_spaces=True)),
        list[t.TextEdit])
    module, _ = api.parse(messy)
    assert _apply(messy, edits) == format_module(module)
    assert "# keep" in _apply(messy, edits)
    done = _apply(messy, edits)
    uri2, _ = _open(client, done)
    assert client.request("textDocument/formatting", t.DocumentFormattingParams(
        text_document=t.TextDocumentIdentifier(uri2), options=t.FormattingOptions(tab_size=2, insert_spaces=True))) == []


def test_document_symbols(client):
    uri, _ = _open(client, SKIN)
    syms = client.request("textDocument/documentSymbol", t.DocumentSymbolParams(t.TextDocumentIdentifier(uri)),
                          list[t.DocumentSymbol])
    names = [(s.name, s.kind) for s in syms]
    assert ("real", t.SymbolKind.Module) in names and ("light", t.SymbolKind.Function) in names
    assert ("H1", t.SymbolKind.Event) in names and ("laion", t.SymbolKind.Class) in names
    h3 = next(s for s in syms if s.name == "H3")
    assert [c.name for c in h3.children] == ["placebo_ratio(light, light_rest) within [0.5, 2] on real for each scorer"]
    assert h3.detail == "The penalty is not specific to skin pixels"
    light = next(s for s in syms if s.name == "light")
    assert (light.selection_range.start.line, light.selection_range.start.character) == _pos(SKIN, "light = lab")


# ---------------------------------------------------------------- precomputed tables


TABLE_SPEC = '''audit "Hole in the table" { version: 1 seed: 2 scale: raw bootstrap: 1000 }
scorer ir = precomputed()
arm real = images("data/real", manifest: "data/real.csv", kind: real, cluster: group,
                  scores: "results/scores.csv")
region skin = skin()
operator light = lab_shift(channel: L, region: skin) doses -10, 0, 10
hypothesis H1 "Fidelity" {
  fidelity_index(light) > 0 on real for each scorer
}
'''


def test_table_findings_are_read_on_open_and_kept_while_typing(client, tmp_path):
    """Precomputed tables are read when the file is opened or saved; their E08xx stay while the line is unchanged."""
    from PIL import Image

    (tmp_path / "data" / "real").mkdir(parents=True)
    for k in range(6):
        Image.new("RGB", (8, 8), (200 - 20 * k, 150, 120)).save(tmp_path / "data" / "real" / f"img_{k}.png")
    (tmp_path / "data" / "real.csv").write_text(
        "id,path,group\n" + "".join(f"img_{k},img_{k}.png,g{k % 3}\n" for k in range(6)), encoding="utf-8")
    (tmp_path / "results").mkdir()
    rows = [f"img_{k},light,{d},ir,{k * 0.1 - abs(d) * 0.01:.3f}" for k in range(6) for d in (-10, 0, 10)
            if (k, d) != (2, 10)]
    (tmp_path / "results" / "scores.csv").write_text("id,operator,dose,scorer,score\n" + "\n".join(rows) + "\n")
    spec = tmp_path / "a.audit"
    spec.write_text(TABLE_SPEC, encoding="utf-8")
    expected = api.check(spec).diagnostics
    assert [d.code for d in expected] == ["E0802"]
    uri = spec.as_uri()
    client.open(uri, TABLE_SPEC)
    diags = client.diagnostics(uri, version=1)
    assert [d.code for d in diags] == ["E0802"] and expected[0].message in diags[0].message
    line, col = _pos(TABLE_SPEC, "region skin")
    client.edit(uri, (line, col), (line, col), "# a comment\n")  # typing elsewhere: the table finding stays
    assert [d.code for d in client.diagnostics(uri, version=2)] == ["E0802"]
