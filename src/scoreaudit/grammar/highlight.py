"""Syntax highlighting of `.audit` text: a Pygments lexer and an HTML helper.

The lexer is registered under the `pygments.lexers` entry point (`pygmentize
-l audit`, Sphinx, mkdocs) and highlights the spec in the report's appendix.
Its keywords are the language's vocabulary (`grammar/vocabulary.py`), so a
keyword added there highlights without touching this file; any word written like a call
(`name(`) is a function, so new statistics (`ratio(`, `share(`) highlight as
calls too. Like the grammar, a word followed by `:` is a key, never a keyword
(`by: race`). Anything the language cannot contain is an Error token (the
tests hold every example free of them).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import ClassVar

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from scoreaudit.grammar import vocabulary

#: Keywords that open a declaration (their next word is the declared name), and those that open a
#: settings block or a statement that declares no name: both from the language's vocabulary.
DECLARATION_KEYWORDS = vocabulary.NAMING_KEYWORDS
BLOCK_KEYWORDS = vocabulary.BLOCK_KEYWORDS


_WORD = r"[A-Za-z_][A-Za-z0-9_]*"
_NOT_KEY = r"(?![ \t]*:)"  # a word followed by `:` is a key (grammar: never a keyword)


class AuditLexer(RegexLexer):
    """Lexer for scoreaudit `.audit` specs."""

    name = "scoreaudit audit"
    aliases: ClassVar[list[str]] = ["audit", "scoreaudit"]
    filenames: ClassVar[list[str]] = ["*.audit"]
    mimetypes: ClassVar[list[str]] = ["text/x-scoreaudit"]
    url = "https://pypi.org/project/scoreaudit/"

    tokens: ClassVar[dict[str, list]] = {
        "root": [
            (r"[ \t]+", Whitespace),
            (r"\r?\n", Whitespace),
            (r"#[^\n]*", Comment.Single),
            (r'"', String.Double, "string"),
            # `scorer laion =`, `hypothesis H1 "..."`: the keyword and the name it declares
            (rf"({'|'.join(DECLARATION_KEYWORDS)})\b{_NOT_KEY}([ \t]+)({_WORD})\b{_NOT_KEY}",
             bygroups(Keyword.Declaration, Whitespace, Name.Variable)),
            (words(BLOCK_KEYWORDS + DECLARATION_KEYWORDS, suffix=r"\b" + _NOT_KEY), Keyword.Declaration),
            # `name(`: a plugin, statistic or `column(...)` call (also `abs(`, `ratio(`)
            (rf"({_WORD})([ \t]*)(?=\()", bygroups(Name.Function, Whitespace)),
            # `name:`: a setting or argument name
            (rf"({_WORD})([ \t]*)(?=:)", bygroups(Name.Attribute, Whitespace)),
            (words(vocabulary.OTHER_KEYWORDS, suffix=r"\b" + _NOT_KEY), Keyword),
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


def highlight_html(source: str, styled: Collection[str] | None = None) -> str:
    """`source` as escaped HTML spans with Pygments' short CSS classes (`kd`, `nf`, `c1`, ...),
    without a wrapper; the page's own stylesheet colours them (nothing inline, nothing fetched).

    Neighbouring tokens of one class share a span, and with `styled` (the classes the page's stylesheet
    colours) only those classes get one: the same look from about a third of the spans (the report's
    spec listing was 550 spans, a fifth of a second of the PDF's layout, each a text box of its own).
    """
    from html import escape
    from itertools import groupby

    from pygments.token import STANDARD_TYPES

    def css_class(ttype) -> str:
        while ttype not in STANDARD_TYPES and ttype.parent is not None:  # a subtype: its parent's class
            ttype = ttype.parent
        cls = STANDARD_TYPES.get(ttype, "")
        return cls if styled is None or cls in styled else ""

    tokens = AuditLexer(stripnl=False, ensurenl=False).get_tokens(source)
    runs = ((cls, escape("".join(v for _, v in group))) for cls, group in groupby(tokens, lambda t: css_class(t[0])))
    return "".join(f'<span class="{cls}">{text}</span>' if cls else text for cls, text in runs)
