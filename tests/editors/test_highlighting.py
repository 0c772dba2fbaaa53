"""Syntax highlighting: the Pygments lexer and the VS Code TextMate grammar on every example.

The TextMate grammar runs on babi's engine (the TextMate rule semantics over
Oniguruma, the regex engine VS Code uses), so what passes here is what an
editor shows: every token gets a scope and nothing is `invalid.illegal`.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pygments.token import Error, Keyword, Name

from scoreaudit.grammar.highlight import AuditLexer, highlight_html
from scoreaudit.grammar.vocabulary import KEYWORDS, STATEMENT_KEYWORDS

ROOT = Path(__file__).resolve().parents[2]
VSCODE = ROOT / "editors" / "vscode"
GRAMMAR = VSCODE / "syntaxes" / "audit.tmLanguage.json"
LARK = ROOT / "src" / "scoreaudit" / "grammar" / "audit.lark"


def _design_blocks() -> list[tuple[str, str]]:
    """The code blocks of DESIGN.md, when a copy of the project's shared folder is beside the checkout."""
    for design in (ROOT / "shared" / "DESIGN.md", ROOT.parent / "shared" / "DESIGN.md"):
        if design.is_file():
            text = design.read_text(encoding="utf-8")
            blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
            spec = re.compile(r"\s*(%s)\b" % "|".join(STATEMENT_KEYWORDS))
            return [(f"DESIGN.md#{i}", b) for i, b in enumerate(blocks) if spec.match(b)]
    return []


SOURCES = [(p.name, p.read_text(encoding="utf-8")) for p in sorted((ROOT / "examples").glob("*.audit"))]
SOURCES.append(("design_second_wave.audit", (Path(__file__).parent / "design_second_wave.audit").read_text("utf-8")))
SOURCES += _design_blocks()
IDS = [name for name, _ in SOURCES]


# ---------------------------------------------------------------- Pygments


def _tokens(text: str):
    return list(AuditLexer(stripnl=False, ensurenl=False).get_tokens(text))


@pytest.mark.parametrize("name,text", SOURCES, ids=IDS)
def test_lexer_has_no_error_tokens(name, text):
    toks = _tokens(text)
    assert "".join(v for _, v in toks) == text  # nothing dropped or added
    assert [v for tok, v in toks if tok in Error] == []


def test_lexer_classifies_like_the_grammar():
    toks = [(tok, v) for tok, v in _tokens('operator hue = hue_rotate(region: skin, by: race) doses -20..20 step 10 # c\n'
                                           'select s = best_of 4 under hue by ita\n') if v.strip()]
    kinds: dict = {}
    for tok, v in toks:
        kinds.setdefault(v, tok)  # the first occurrence of each word
    assert kinds["operator"] in Keyword.Declaration and kinds["hue"] in Name.Variable
    assert kinds["hue_rotate"] in Name.Function and kinds["region"] in Name.Attribute
    assert toks[9] == (Name.Attribute, "by")  # `by:` is an argument name; `by ita` below is the keyword
    assert (Keyword, "by") in toks and (Keyword, "best_of") in toks and (Keyword, "doses") in toks
    assert ("-20", "20") == tuple(v for tok, v in toks if v in ("-20", "20"))
    bad = [v for tok, v in _tokens('arm a = images("x\n') if tok in Error]
    assert bad, "an unterminated string must show as an error"
    assert [v for tok, v in _tokens("scorer s = x() $ ") if tok in Error] == ["$"]


def test_lexer_keywords_are_the_grammars():
    text = LARK.read_text(encoding="utf-8")
    terminals = set(re.findall(r"^_[A-Z_]+\.\d+:\s*/([a-z_]+)\\b", text, re.M))
    assert terminals and terminals == set(KEYWORDS)
    lexed = {v for tok, v in _tokens(" ".join(f"{k} x" for k in KEYWORDS)) if tok in Keyword}
    assert lexed == set(KEYWORDS)


def test_highlight_html_escapes_and_keeps_text():
    src = 'audit "<script>alert(1)</script> & co" { version: 1 }  # </pre><img src=x>\n'
    out = highlight_html(src)
    assert "<script>" not in out and "<img" not in out and "</pre>" not in out
    import html

    assert html.unescape(re.sub(r"</?span[^>]*>", "", out)) == src


# ---------------------------------------------------------------- the pygments.lexers entry point


def _pyproject_lexers() -> dict[str, str]:
    """The `[project.entry-points."pygments.lexers"]` table of pyproject.toml (`name = "module:Class"` lines)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    table = re.search(r'^\[project\.entry-points\."pygments\.lexers"\]\n(.*?)(?=^\[|\Z)', text, re.M | re.S)
    assert table, "pyproject.toml declares no pygments.lexers entry point"
    return dict(re.findall(r'^(\w+)\s*=\s*"([^"]+)"', table.group(1), re.M))


def test_entry_point_is_declared_and_found_by_pygments(tmp_path, monkeypatch):
    """pyproject's entry point loads the lexer, and Pygments finds a distribution that declares it."""
    import pygments.plugin
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename

    declared = _pyproject_lexers()
    assert declared == {"audit": "scoreaudit.grammar.highlight:AuditLexer"}
    ep = importlib.metadata.EntryPoint(name="audit", value=declared["audit"], group="pygments.lexers")
    assert ep.load() is AuditLexer
    # the metadata an install writes from that table, on the path as an installed distribution would be
    info = tmp_path / "scoreaudit_lexer_probe-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: scoreaudit-lexer-probe\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[pygments.lexers]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    monkeypatch.syspath_prepend(str(tmp_path))
    pygments.plugin.iter_entry_points.cache_clear()
    try:
        assert isinstance(get_lexer_by_name("audit"), AuditLexer)
        assert isinstance(get_lexer_for_filename("study.audit"), AuditLexer)
    finally:
        pygments.plugin.iter_entry_points.cache_clear()


def test_installed_metadata_registers_the_lexer():
    """When scoreaudit is installed from this checkout (as `make test` does), the entry point is in its metadata."""
    dist = importlib.metadata.distribution("scoreaudit")
    direct = dist.read_text("direct_url.json")
    location = json.loads(direct).get("url", "") if direct else ""
    if not location.startswith("file://") or Path(location[7:]).resolve() != ROOT:
        return  # installed from another checkout (a shared development venv): its metadata is that tree's
    names = {ep.name: ep.value for ep in dist.entry_points if ep.group == "pygments.lexers"}
    assert names == _pyproject_lexers()


# ---------------------------------------------------------------- TextMate


@pytest.fixture(scope="module")
def textmate(tmp_path_factory):
    from babi.highlight import Grammars

    folder = tmp_path_factory.mktemp("grammars")
    shutil.copy(GRAMMAR, folder / "source.audit.json")
    return Grammars(str(folder)).compiler_for_scope("source.audit")


def _scopes(compiler, text: str):
    """(line number, text, scopes) of every region babi's engine finds."""
    from babi.highlight import highlight_line

    state = compiler.root_state
    for n, line in enumerate(text.splitlines(True), 1):
        state, regions = highlight_line(compiler, state, line, n == 1)
        for start, end, scope in regions:
            yield n, line[start:end], scope


@pytest.mark.parametrize("name,text", SOURCES, ids=IDS)
def test_textmate_scopes_every_token(textmate, name, text):
    unscoped, illegal = [], []
    for n, part, scope in _scopes(textmate, text):
        if not part.strip():
            continue
        if scope == ("source.audit",):
            unscoped.append((n, part))
        if any(s.startswith("invalid") for s in scope):
            illegal.append((n, part))
    assert unscoped == [] and illegal == []


def test_textmate_scopes_mean_what_the_lexer_says(textmate):
    line = 'operator hue = hue_rotate(region: skin, by: race) doses -20..20 step 10  # c\n'
    got = [(part, scope[-1]) for _, part, scope in _scopes(textmate, line) if part.strip()]
    assert got[:4] == [("operator", "storage.type.declaration.audit"), ("hue", "entity.name.declaration.audit"),
                       ("=", "keyword.operator.assignment.audit"), ("hue_rotate", "entity.name.function.call.audit")]
    assert ("by", "variable.parameter.key.audit") in got and ("doses", "keyword.other.audit") in got
    assert ("-20", "constant.numeric.audit") in got and ("..", "keyword.operator.range.audit") in got
    assert got[-1] == (" c", "comment.line.number-sign.audit")
    # the check can fail: characters the language has no use for are invalid
    bad = [part for _, part, scope in _scopes(textmate, "scorer s = x() $ ;\n") if "invalid.illegal.audit" in scope]
    assert bad == ["$", ";"]
    unterminated = [p for _, p, s in _scopes(textmate, 'arm a = images("x\n') if "invalid.illegal.audit" in s]
    assert unterminated == ['"']


def test_textmate_keywords_follow_the_grammar():
    """Every keyword of audit.lark is a keyword in the TextMate grammar, or written as a call (`abs(`)."""
    g = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    rules = json.dumps(g["repository"]["declaration"]) + json.dumps(g["repository"]["keyword"])
    lark = LARK.read_text(encoding="utf-8")
    for term, word in re.findall(r"^(_[A-Z_]+)\.\d+:\s*/([a-z_]+)\\b", lark, re.M):
        as_call = re.search(rf"{term}\s+\"\(\"", lark) is not None
        assert as_call or re.search(rf"[|(]{word}[|)]", rules), f"keyword `{word}` missing from {GRAMMAR.name}"


# ---------------------------------------------------------------- the VS Code extension folder


def test_vscode_extension_manifest():
    pkg = json.loads((VSCODE / "package.json").read_text(encoding="utf-8"))
    g = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    (lang,) = pkg["contributes"]["languages"]
    (grammar,) = pkg["contributes"]["grammars"]
    assert lang["id"] == grammar["language"] == "audit" and ".audit" in lang["extensions"]
    assert grammar["scopeName"] == g["scopeName"] == "source.audit"
    assert (VSCODE / grammar["path"]).resolve() == GRAMMAR.resolve()
    assert (VSCODE / lang["configuration"]).is_file()
    conf = json.loads((VSCODE / lang["configuration"]).read_text(encoding="utf-8"))
    assert conf["comments"]["lineComment"] == "#"
    # the client is bundled into dist/extension.js at packaging (bundle.js; test_vscode_package.py)
    assert pkg["main"] == "./dist/extension.js" and "vscode-languageclient" in pkg["devDependencies"]
    assert "onLanguage:audit" in pkg["activationEvents"]
    source = (VSCODE / "extension.js").read_text(encoding="utf-8")
    assert "'lsp'" in source and "vscode-languageclient/node" in source


def test_vscode_extension_is_valid_javascript():
    node = shutil.which("node")
    if node is None:
        return  # the manifest test above still holds; a machine without Node.js cannot parse the file
    for script in (VSCODE / "extension.js", VSCODE / "test" / "tokenize.js"):
        out = subprocess.run([node, "--check", str(script)], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr


def _class_per_char(out: str) -> list[str]:
    """The span class each character of the source is shown in ('' outside any span)."""
    import html

    shown: list[str] = []
    for m in re.finditer(r'<span class="([^"]*)">(.*?)</span>|([^<]+)', out, re.S):
        cls, text = (m.group(1), m.group(2)) if m.group(2) is not None else ("", m.group(3))
        shown += [cls] * len(html.unescape(text))
    return shown


@pytest.mark.parametrize("name", ["demo.audit", "skin_tone.audit", "seed001_probe.audit"])
def test_the_reports_listing_looks_the_same_from_fewer_spans(name):
    """The report passes the classes its stylesheet colours: every character keeps the colour it had
    (its class if styled, none otherwise), the text is unchanged, and far fewer spans are laid out."""
    from scoreaudit.reports.sections.appendix import spec_classes

    src = (ROOT / "examples" / name).read_text(encoding="utf-8")
    styled = spec_classes()
    assert {"kd", "nf", "c1", "s2"} <= styled
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    # the reference: Pygments' own formatter, a span for every token
    full = highlight(src, AuditLexer(stripnl=False, ensurenl=False), HtmlFormatter(nowrap=True))
    lean = highlight_html(src, styled)
    import html

    assert html.unescape(re.sub(r"</?span[^>]*>", "", lean)) == src
    assert [c if c in styled else "" for c in _class_per_char(full)] == _class_per_char(lean)
    assert lean.count("<span") < full.count("<span") / 2


def test_the_lean_listing_escapes_too():
    src = 'audit "<script>alert(1)</script> & co" { version: 1 }  # </pre><img src=x>\n'
    out = highlight_html(src, {"kd", "s2", "c1"})
    assert "<script>" not in out and "<img" not in out and "</pre>" not in out
    import html

    assert html.unescape(re.sub(r"</?span[^>]*>", "", out)) == src
