"""Syntax highlighting of `.audit` text: a Pygments lexer and an HTML helper.

The lexer is registered under the `pygments.lexers` entry point (`pygmentize
-l audit`, Sphinx, mkdocs) and highlights the spec in the report's appendix.
Its keywords are read from `audit.lark` itself, so a keyword added to the
grammar highlights without touching this file; any word written like a call
(`name(`) is a function, so new statistics (`ratio(`, `share(`) highlight as
calls too. Like the grammar, a word followed by `:` is a key, never a keyword
(`by: race`). Anything the language cannot contain is an Error token (the
tests hold every example free of them).
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import (Comment, Error, Keyword, Name, Number, Operator, Punctuation, String,
                            Whitespace)

GRAMMAR_PATH = Path(__file__).with_name("audit.lark")

#: Keywords that open a declaration (their next word is the declared name).
DECLARATION_KEYWORDS = ("scorer", "arm", "region", "measure", "covariate", "operator", "placebo",
                        "select", "hypothesis", "probe")
#: Keywords that open a settings block or a statement that declares no name.
BLOCK_KEYWORDS = ("audit", "report", "validate")


@lru_cache(maxsize=1)
def grammar_keywords() -> tuple[str, ...]:
    """Every keyword terminal of audit.lark (`_SCORER.2: /scorer\\b.../` → `scorer`)."""
    text = GRAMMAR_PATH.read_text(encoding="utf-8")
    found = re.findall(r"^_[A-Z_]+\.\d+:\s*/([a-z_]+)\\b", text, flags=re.MULTILINE)
    # Words planned next to the grammar in this release wave; harmless before they land.
    return tuple(sorted(set(found) | {"where"}))


_WORD = r"[A-Za-z_][A-Za-z0-9_]*"
_NOT_KEY = r"(?![ \t]*:)"  # a word followed by `:` is a key (grammar: never a keyword)


class AuditLexer(RegexLexer):
    """Lexer for scoreaudit `.audit` specs."""

    name = "scoreaudit audit"
    aliases = ["audit", "scoreaudit"]
    filenames = ["*.audit"]
    mimetypes = ["text/x-scoreaudit"]
    url = "https://pypi.org/project/scoreaudit/"

    _other_keywords = tuple(k for k in grammar_keywords()
                            if k not in DECLARATION_KEYWORDS and k not in BLOCK_KEYWORDS)

    tokens = {
        "root": [
            (r"[ \t]+", Whitespace),
            (r"\r?\n", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (r'"', String.Double, "string"),
            # `scorer laion =`, `hypothesis H1 "..."`: the keyword and the name it declares
            (r"(%s)\b%s([ \t]+)(%s)\b%s" % ("|".join(DECLARATION_KEYWORDS), _NOT_KEY, _WORD, _NOT_KEY),
             bygroups(Keyword.Declaration, Whitespace, Name.Variable)),
            (words(BLOCK_KEYWORDS + DECLARATION_KEYWORDS, suffix=r"\b" + _NOT_KEY), Keyword.Declaration),
            # `name(`: a plugin, statistic or `column(...)` call (also `abs(`, `ratio(`)
            (r"(%s)([ \t]*)(?=\()" % _WORD, bygroups(Name.Function, Whitespace)),
            # `name:`: a setting or argument name
            (r"(%s)([ \t]*)(?=:)" % _WORD, bygroups(Name.Attribute, Whitespace)),
            (words(_other_keywords, suffix=r"\b" + _NOT_KEY), Keyword),
            (_WORD, Name),
            (r"-?[0-9]+(\.[0-9]+)?[eE][+-]?[0-9]+", Number.Float),
            (r"-?[0-9]+\.[0-9]+", Number.Float),
            (r"-?[0-9]+", Number.Integer),
            (r"\.\.", Operator),
            (r">=|<=|>|<|=|\*|&|\|", Operator),
            (r"[{}()\[\],:]", Punctuation),
            (r".", Error),
        ],
        "string": [
            (r'\\[^\n\r]', String.Escape),
            (r'[^"\\\n\r]+', String.Double),
            (r'"', String.Double, "#pop"),
            (r"\r?\n", Error, "#pop"),  # strings end on their line (E0106)
            (r"\\", Error),
        ],
    }


def highlight_html(source: str) -> str:
    """`source` as escaped HTML spans with Pygments' short CSS classes (`kd`, `nf`, `c1`, ...),
    without a wrapper; the page's own stylesheet colours them (nothing inline, nothing fetched)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    html = highlight(source, AuditLexer(stripnl=False, ensurenl=False), HtmlFormatter(nowrap=True))
    return html
