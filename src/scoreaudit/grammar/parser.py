"""Text → AST (`scoreaudit.grammar.ast`) plus syntax diagnostics (E01xx).

`parse` never raises: every problem in the input, including binary junk and
absurd nesting, comes back as a `Diagnostic`. One Lark LALR parser does all
the work: its inline transformer (`build.py`) builds the AST while it parses,
and its errors carry the parser state the diagnostics below are made from.
After a syntax error the parser restarts at the next line that begins a
declaration, so one run reports the errors of several declarations; the
module is returned only when there is no syntax error at all.

The work is split by job: `lark_cache` builds (and caches) the Lark parser,
`lexer` drives its contextual lexer faster, `syntax_errors` words the errors
and finds restart points, `source_text` maps offsets to lines and columns,
and the keywords come from `vocabulary`. This module is the entry point the
rest of the project imports.

Codes (catalogued in `spec/diagnostics.md`):
E0100 internal parser failure, E0101 unexpected token, E0102 operator without
`doses`, E0103 block without `}`, E0104 `=` instead of `:` in a settings block,
E0105 unquoted text, E0106 unterminated string, E0107 unexpected character,
E0108 no `audit` block, E0109 nesting too deep, E0110 positional argument after
a keyword argument; E0472 two readings compared with `<`/`>` (write `difference(a, b)`).
"""

from __future__ import annotations

import re

from lark.exceptions import UnexpectedInput

from scoreaudit.diagnostics import Diagnostic, Span
from scoreaudit.gcpause import paused_gc
from scoreaudit.grammar import ast
from scoreaudit.grammar.build import MAX_DEPTH
from scoreaudit.grammar.lark_cache import GRAMMAR_PATH, lark_parse
from scoreaudit.grammar.literals import escape, unescape
from scoreaudit.grammar.source_text import Source, blank_before, scan_comments
from scoreaudit.grammar.syntax_errors import ERROR_EXAMPLES, SyntaxErrors
from scoreaudit.grammar.vocabulary import STATEMENT_KEYWORDS as DECL_KEYWORDS

# The names other modules, tests and benchmarks import from here.
__all__ = [
    "DECL_KEYWORDS",
    "ERROR_EXAMPLES",
    "GRAMMAR_PATH",
    "MAX_ERRORS",
    "escape",
    "parse",
    "scan_comments",
    "unescape",
]

MAX_ERRORS = 20  # syntax errors reported per file before giving up


# ---------------------------------------------------------------- public entry


def parse(text: str, path: str = "<input>") -> tuple[ast.Module | None, list[Diagnostic]]:
    """Parse `.audit` source. Returns (module, diagnostics); module is None on any error."""
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", errors="replace")
        elif not isinstance(text, str):
            text = str(text)
        with paused_gc():
            module, diags = _Parse(text, path).run()
        if module is not None and _MAYBE_HUGE.search(text):
            big = _numbers_out_of_range(module, path)
            if big:
                return None, list(diags) + big
        return module, diags
    except Exception as exc:  # noqa: BLE001 - a bug here must not become a traceback for the user
        return None, [
            Diagnostic(
                code="E0100",
                severity="error",
                message=f"internal parser error ({type(exc).__name__}: {str(exc)[:200]})",
                span=Span(1, 1, 1, 2, 0, 1),
                help="this is a bug in scoreaudit; please report it with the file that caused it",
                path=path,
            )
        ]


# only a run of 309+ digits or a 3-digit exponent can overflow a float: the AST walk runs only then
_MAYBE_HUGE = re.compile(r"\d{309}|[eE][+-]?\d{3}")


def _numbers_out_of_range(module: ast.Module, path: str) -> list[Diagnostic]:
    """E0120 for every number literal a 64-bit float cannot hold (more than ~308 digits, 1e400)."""
    import dataclasses
    import math

    out: list[Diagnostic] = []
    stack: list = [module]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Number):
            if not math.isfinite(node.value):
                out.append(Diagnostic("E0120", "error", f"the number {node.text[:40]}{'…' if len(node.text) > 40 else ''} "
                                      "is too large (beyond ±1.8e308)", span=node.span, path=path,
                                      help="write a number a 64-bit float can hold"))
        elif dataclasses.is_dataclass(node) and not isinstance(node, type):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
        elif isinstance(node, dict):
            stack.extend(node.values())
    return sorted(out, key=lambda d: (d.span.start if d.span else 0))



# ---------------------------------------------------------------- the parse


class _Parse(SyntaxErrors):
    def __init__(self, text: str, path: str):
        self.path = path
        # A byte-order mark is not part of the program; keep offsets unchanged.
        self.text = " " + text[1:] if text.startswith("\ufeff") else text
        self.src = Source(self.text)
        self.diags: list[Diagnostic] = []

    def diag(self, code: str, message: str, span: Span, help: str | None = None, notes=()) -> None:
        self.diags.append(
            Diagnostic(code=code, severity="error", message=message, span=span, help=help,
                       path=self.path, notes=tuple(notes))
        )

    # ------------------------------------------------------------ driver

    def run(self) -> tuple[ast.Module | None, list[Diagnostic]]:
        offset = 0
        module = None
        while True:  # after each syntax error, again from the next declaration
            masked = self.text if offset == 0 else blank_before(self.text, offset)
            try:
                decls, positional, too_deep = lark_parse(masked)
            except UnexpectedInput as err:
                restart = self.syntax_error(err, masked, offset)
                if restart is None or restart <= offset or len(self.diags) >= MAX_ERRORS:
                    break
                offset = restart
                continue
            if offset == 0:
                module = self.build(decls, positional, too_deep)
            break
        if self.diags:
            return None, self.diags
        if module is not None and not any(isinstance(d, ast.AuditBlock) for d in module.decls):
            blank = not self.text.strip() or not module.decls
            self.diag(
                "E0108",
                "the file is empty" if blank else "the file has no `audit` block",
                self.src.span(0, 0) if blank else module.decls[0].span,
                help='start the file with a settings block: audit "Title of the audit" { version: 1 }',
            )
            return None, self.diags
        return module, self.diags

    def build(self, decls: tuple, positional: list, too_deep) -> ast.Module | None:
        """The module, or None after reporting what the builder found (E0110, E0109).

        Both are reported in source order up to the first declaration nested
        too deeply, which ends the file's report.
        """
        limit = too_deep[0].span.start if too_deep else len(self.text) + 1
        # each argument after its own nested ones (the order of a walk down the tree)
        for arg, first_kw in sorted(positional, key=lambda p: (p[0].span.end, -p[0].span.start)):
            if arg.span.start < limit:
                self.diag(
                    "E0110",
                    "a positional argument cannot follow a keyword argument",
                    arg.span,
                    help=f"move it before `{first_kw.name.name}:` or give it a name (`name: value`)",
                )
        if too_deep:
            self.diag(
                "E0109",
                f"expression nested too deeply (more than {MAX_DEPTH} levels)",
                self.src.point(too_deep[1].span.start),
                help="split the expression into several declarations",
            )
            return None
        return self.module(decls)

    def module(self, decls: tuple) -> ast.Module:
        comments = tuple(ast.Comment(self.text[s:e].rstrip(), self.src.span(s, e))
                         for s, e in scan_comments(self.text))
        end = len(self.text)
        return ast.Module(decls=decls, span=self.src.span(0, end), comments=comments)

