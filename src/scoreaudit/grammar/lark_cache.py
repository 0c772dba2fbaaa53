"""The one Lark parser of `audit.lark`: built once per process, its grammar analysis cached per user.

Building the parser (grammar analysis) is cached by Lark's own `cache` option
(`cache_file`), so a fresh process only loads the tables. The parser's inline
transformer (`build.py`) builds the AST while it parses; its lexer is
`lexer.QuickLexer`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import threading
from functools import lru_cache
from pathlib import Path

import lark
from lark import Lark
from lark.lexer import ContextualLexer

from scoreaudit.grammar.build import Builder
from scoreaudit.grammar.lexer import QuickLexer

GRAMMAR_PATH = Path(__file__).with_name("audit.lark")

_OPTIONS = dict(parser="lalr", lexer="contextual", keep_all_tokens=True, maybe_placeholders=False)
_BUILDER = Builder()
_LOCK = threading.RLock()  # the builder's per-parse findings belong to one parse at a time


def cache_file(grammar: str) -> str | bool:
    """Where Lark caches its analysis of the grammar, or False when there is no safe place.

    Lark's cache is a pickle, so it lives only in a folder of this user's
    that nobody else can write to (`$XDG_CACHE_HOME/scoreaudit`, mode 0700);
    the name carries the grammar's and Lark's identity, so worktrees or
    versions with different grammars never share a file.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "scoreaudit"
    key = hashlib.sha256(f"{grammar}\0{_OPTIONS}\0{lark.__version__}\0{sys.version_info[:2]}".encode()).hexdigest()
    path = folder / f"grammar-{key[:24]}.lark-cache"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            return False
        if os.path.lexists(path):
            st = path.lstat()
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                return False
    except OSError:
        return False
    return str(path)


@lru_cache(maxsize=1)
def parser() -> Lark:
    """The parser (built once per process; its grammar analysis cached per user)."""
    grammar = GRAMMAR_PATH.read_text(encoding="utf-8")
    built = Lark(grammar, transformer=_BUILDER, cache=cache_file(grammar), **_OPTIONS)
    frontend = built.parser
    if isinstance(frontend.lexer, ContextualLexer):
        frontend.lexer = QuickLexer(frontend.lexer)
    return built


def lark_parse(text: str):
    """Lark's parse of `text` and the builder's findings on it (raises Lark's syntax errors)."""
    with _LOCK:
        _BUILDER.begin()
        decls = parser().parse(text)
        return decls, _BUILDER.positional_after_keyword, _BUILDER.too_deep
