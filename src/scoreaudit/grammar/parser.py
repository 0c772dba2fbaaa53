"""Text → AST (`scoreaudit.grammar.ast`) plus syntax diagnostics (E01xx).

`parse` never raises: every problem in the input, including binary junk and
absurd nesting, comes back as a `Diagnostic`. One Lark LALR parser does all
the work: its inline transformer (`build.py`) builds the AST while it parses,
and its errors carry the parser state the diagnostics below are made from.
After a syntax error the parser restarts at the next line that begins a
declaration, so one run reports the errors of several declarations; the
module is returned only when there is no syntax error at all.

Building the parser (grammar analysis) is cached per user by Lark's own
`cache` option (`_cache_file`), so a fresh process only loads the tables.

Codes (catalogued in `spec/diagnostics.md`):
E0100 internal parser failure, E0101 unexpected token, E0102 operator without
`doses`, E0103 block without `}`, E0104 `=` instead of `:` in a settings block,
E0105 unquoted text, E0106 unterminated string, E0107 unexpected character,
E0108 no `audit` block, E0109 nesting too deep, E0110 positional argument after
a keyword argument; E0472 two readings compared with `<`/`>` (write `difference(a, b)`).
"""

from __future__ import annotations

import bisect
import difflib
import hashlib
import os
import re
import stat
import sys
import threading
from functools import lru_cache
from pathlib import Path

import lark
from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lexer import BasicLexer, ContextualLexer, Lexer

from scoreaudit.diagnostics import Diagnostic, Span
from scoreaudit.gcpause import paused_gc
from scoreaudit.grammar import ast
from scoreaudit.grammar.build import MAX_DEPTH, Builder
from scoreaudit.grammar.literals import escape, unescape  # noqa: F401  (part of this module's interface)

GRAMMAR_PATH = Path(__file__).with_name("audit.lark")

#: Declaration keywords: a line starting with one of these is a restart point.
DECL_KEYWORDS = (
    "audit", "scorer", "arm", "region", "measure", "covariate", "operator",
    "placebo", "validate", "select", "hypothesis", "report", "probe",
)
MAX_ERRORS = 20  # syntax errors reported per file before giving up

_DECL_LINE = re.compile(
    r"^[ \t]*(" + "|".join(DECL_KEYWORDS) + r")(?![A-Za-z0-9_])(?![ \t]*:)", re.MULTILINE
)

_OPTIONS = dict(parser="lalr", lexer="contextual", keep_all_tokens=True, maybe_placeholders=False)
_BUILDER = Builder()
_LOCK = threading.RLock()  # the builder's per-parse findings belong to one parse at a time


def _cache_file(grammar: str) -> str | bool:
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
def _lark() -> Lark:
    """The parser (built once per process; its grammar analysis cached per user)."""
    grammar = GRAMMAR_PATH.read_text(encoding="utf-8")
    parser = Lark(grammar, transformer=_BUILDER, cache=_cache_file(grammar), **_OPTIONS)
    frontend = parser.parser
    if isinstance(frontend.lexer, ContextualLexer):
        frontend.lexer = _QuickLexer(frontend.lexer)
    return parser


class _QuickLexer(Lexer):
    """Lark's contextual lexer without its per-token Python layers (same tokens, same errors).

    At each token the contextual lexer matches the regex of the terminals the parser state
    accepts; this does the same match with the same compiled regex (Lark's own scanner of that
    state) inline, and makes the token with the same type, text and positions. Anything unusual
    (no terminal matches, a terminal with a callback, a state split over several regexes) is one
    step of Lark's own lexer, so errors and their parser states are exactly Lark's. Lexing was
    about half of a long file's parse (20,000 declarations: bench/diagnostics.py).
    """

    def __init__(self, inner: ContextualLexer):
        self.inner = inner
        root = inner.root_lexer
        self.ignore = frozenset(root.ignore_types)
        self.newline_types = frozenset(root.newline_types)
        self._match: dict[int, object] = {}  # parser state -> its scanner's match (None: Lark's path)

    def make_lexer_state(self, text):
        return self.inner.make_lexer_state(text)

    def _state_match(self, state: int):
        lexer = self.inner.lexers[state]
        scanner = lexer.scanner  # builds lexer.callback too
        ok = len(scanner._mres) == 1 and not lexer.callback and type(lexer) is BasicLexer
        self._match[state] = found = scanner._mres[0].match if ok else None
        return found

    def _lark_step(self, lexer_state, parser_state):
        """One token by Lark's contextual lexer (None at the end), errors as it raises them."""
        inner = self.inner
        lexer = inner.lexers[parser_state.position]
        try:
            return lexer.next_token(lexer_state, parser_state)
        except EOFError:
            return None
        except UnexpectedCharacters as e:  # the same report as ContextualLexer.lex
            try:
                last_token = lexer_state.last_token
                token = inner.root_lexer.next_token(lexer_state, parser_state)
                raise UnexpectedToken(token, e.allowed, state=parser_state, token_history=[last_token],
                                      terminals_by_name=inner.root_lexer.terminals_by_name)
            except UnexpectedCharacters:
                raise e from None

    def lex(self, lexer_state, parser_state):
        text_slice = lexer_state.text
        text, end = text_slice.text, text_slice.end
        ctr = lexer_state.line_ctr
        ignore, newline_types, matchers = self.ignore, self.newline_types, self._match
        stack = parser_state.state_stack
        make = getattr(Token, "_future_new", Token)  # Token(...) without its keyword-compatibility layer
        while ctr.char_pos < end:
            pos = ctr.char_pos
            state = stack[-1]
            match = matchers[state] if state in matchers else self._state_match(state)
            m = match(text, pos, end) if match is not None else None
            if m is None:
                t = self._lark_step(lexer_state, parser_state)
                if t is None:
                    return
                yield t
                continue
            type_ = m.lastgroup
            value = m.group(0)
            if type_ in ignore:
                ctr.feed(value, type_ in newline_types)
                continue
            line, column = ctr.line, ctr.column
            if type_ in newline_types:
                ctr.feed(value)
            else:
                ctr.char_pos = pos + len(value)
                ctr.column = ctr.char_pos - ctr.line_start_pos + 1
            t = make(type_, value, pos, line, column, ctr.line, ctr.column, ctr.char_pos)
            lexer_state.last_token = t
            yield t


def _lark_parse(text: str):
    """Lark's parse of `text` and the builder's findings on it (raises Lark's syntax errors)."""
    with _LOCK:
        _BUILDER.begin()
        decls = _lark().parse(text)
        return decls, _BUILDER.positional_after_keyword, _BUILDER.too_deep


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
    except Exception as exc:  # a bug here must not become a traceback for the user
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


# ---------------------------------------------------------------- source helpers


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


class _Source:
    """Offsets ↔ (line, column) for one text, both as Lark counts them ('\\n' only)."""

    def __init__(self, text: str):
        self.text = text
        self.starts = _line_starts(text)

    def pos(self, offset: int) -> tuple[int, int]:
        offset = max(0, min(offset, len(self.text)))
        i = bisect.bisect_right(self.starts, offset) - 1
        return i + 1, offset - self.starts[i] + 1

    def span(self, start: int, end: int) -> Span:
        end = max(end, start)
        line, col = self.pos(start)
        end_line, end_col = self.pos(end)
        return Span(line, col, end_line, end_col, start, end)

    def point(self, offset: int) -> Span:
        return self.span(offset, min(offset + 1, len(self.text)) if offset < len(self.text) else offset)

    def eof(self) -> Span:
        """The position just after the last non-blank character (or 1:1 for a blank file)."""
        stripped = len(self.text.rstrip())
        return self.span(stripped, stripped)

    def line_text(self, line: int) -> str:
        start = self.starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]


#: A string (closed or not: it ends at its line's end) or a comment; strings are matched
#: only so that a `#` inside one is not taken for a comment.
_STRING_OR_COMMENT = re.compile(r'"(?:[^"\\\n\r]|\\[^\n\r]|\\)*"?|#[^\n]*')


def scan_comments(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of every `#` comment, skipping `#` inside strings."""
    return [m.span() for m in _STRING_OR_COMMENT.finditer(text) if m.group().startswith("#")]


def _open_braces(text: str, upto: int) -> list[int]:
    """Offsets of the `{` still open at `upto` (strings and comments skipped)."""
    stack: list[int] = []
    i, n = 0, min(upto, len(text))
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] not in '"\n\r':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            stack.pop()
        i += 1
    return stack


# ---------------------------------------------------------------- words for errors

_PUNCT = {
    "LPAR": "(", "RPAR": ")", "LBRACE": "{", "RBRACE": "}", "LSQB": "[", "RSQB": "]",
    "COMMA": ",", "COLON": ":", "EQUAL": "=", "STAR": "*", "VBAR": "|", "AMPERSAND": "&",
    "DOTS": "..",
}
_CLASSES = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a string in double quotes",
    "CMP": "a comparison (`<`, `>`, `<=`, `>=`)",
    "$END": "the end of the file",
}


def _term_words(term: str) -> str:
    if term in _CLASSES:
        return _CLASSES[term]
    if term in _PUNCT:
        return f"`{_PUNCT[term]}`"
    return f"`{term.lstrip('_').lower()}`"


def _expected_words(terms) -> str:
    terms = set(terms)
    words = []
    decls = {"_" + k.upper() for k in DECL_KEYWORDS}
    if decls <= terms:
        terms -= decls
        words.append("a declaration (`audit`, `scorer`, `arm`, `region`, ...)")
    if len(terms) > 1:
        terms.discard("STAR")  # `a * b` is rare; listing `*` after every value only distracts
    if terms & {"RPAR", "RSQB", "RBRACE"}:
        terms.discard("DOTS")  # likewise a value range `0..4` after every number (doses keep their `..`)
    order = ["NAME", "NUMBER", "STRING", "CMP"]
    for t in order:
        if t in terms:
            words.append(_term_words(t))
    rest = sorted(t for t in terms if t not in order and t != "$END")
    words += [_term_words(t) for t in rest]
    if "$END" in terms:
        words.append(_term_words("$END"))
    if not words:
        return "nothing more here"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _show(s: str, limit: int = 30) -> str:
    """A token or character as it may be printed in a message."""
    s = s if len(s) <= limit else s[: limit - 3] + "..."
    if all(c.isprintable() for c in s):
        return f"`{s}`"
    return " ".join(f"U+{ord(c):04X}" if not c.isprintable() else c for c in s)


def _token_words(tok: Token) -> str:
    if tok.type == "$END":
        return "end of file"
    if tok.type == "NAME":
        return f"name {_show(str(tok))}"
    if tok.type == "NUMBER":
        return f"number {_show(str(tok))}"
    if tok.type == "STRING":
        return f"string {_show(str(tok))}"
    if tok.type.startswith("_") and str(tok).isidentifier():
        return f"keyword {_show(str(tok))}"
    return _show(str(tok))


# ---------------------------------------------------------------- example-based labels

#: Malformed snippets per code, matched against an error's parser state with
#: Lark's `UnexpectedInput.match_examples` (the common mistakes get their own code).
ERROR_EXAMPLES: dict[str, list[str]] = {
    "E0102": [
        "operator a = f() 1, 2",
        "operator a = f() -1, 2",
        "operator a = f()\nscorer s = g()",
        "operator a = f()",
        "operator a = f() dose 1, 2",
        "operator a = f() [1, 2]",
        "operator a = f() , 1",
    ],
    "E0104": [
        'audit "t" { version = 1 }',
        'report { title = "x" }',
    ],
    "E0472": [
        'hypothesis H "t" { f() on a < g() }',
        'hypothesis H "t" { f() for a < g() }',
        'hypothesis H "t" { f() on a for b < g() }',
        'hypothesis H "t" { f() < g() }',
    ],
    "E0105": [
        "scorer s = f(prompt: a photo of a person)",
        "scorer s = f(a photo)",
        "scorer s = f(a 1)",
        'audit "t" { title: Skin lightness audit }',
        "arm a = f(x: [a b])",
        "hypothesis H \"t\" { f(a b) }",
        "region r = f(a: b c)",
    ],
}



def _state_id(err: UnexpectedInput):
    """The LALR state an error happened in, without the stack depth.

    Lark's own `match_examples` compares `ParserState` objects, whose equality
    includes the stack depth, so an example written at top level would not
    match the same mistake after a few declarations. We keep its algorithm
    (same state, then same token type, examples in order) on the bare state.
    """
    state = err.state
    return getattr(state, "position", state)


@lru_cache(maxsize=1)
def _example_table() -> tuple[dict, dict]:
    by_token: dict[tuple, str] = {}
    by_state: dict[object, str] = {}
    for label, snippets in ERROR_EXAMPLES.items():
        for snippet in snippets:
            try:
                _lark_parse(snippet)
            except UnexpectedToken as ut:
                sid = _state_id(ut)
                by_token.setdefault((sid, ut.token.type), label)
                by_state.setdefault(sid, label)
            except UnexpectedInput:  # pragma: no cover - examples are token errors
                continue
            else:  # pragma: no cover - guarded by a test
                raise AssertionError(f"error example parses: {snippet!r}")
    return by_token, by_state


def _scope_too_early(text: str, tok: Token, keyword: str) -> bool:
    """`on ARM ... KEYWORD` on one line: a declaration's scope written before the `doses` / `of` it must follow."""
    if str(tok) != "on" or tok.start_pos is None:
        return False
    end = text.find("\n", tok.start_pos)
    rest = text[tok.start_pos:len(text) if end < 0 else end].split("#")[0]
    return re.search(rf"\b{keyword}\b(?![ \t]*:)", rest) is not None


def _label(err: UnexpectedToken) -> str | None:
    """The code of the example mistake made in the same parser state, if any."""
    by_token, by_state = _example_table()
    sid = _state_id(err)
    return by_token.get((sid, err.token.type)) or by_state.get(sid)


# ---------------------------------------------------------------- the parse


class _Parse:
    def __init__(self, text: str, path: str):
        self.path = path
        # A byte-order mark is not part of the program; keep offsets unchanged.
        self.text = " " + text[1:] if text.startswith("\ufeff") else text
        self.src = _Source(self.text)
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
            masked = self.text if offset == 0 else _blank(self.text, offset)
            try:
                decls, positional, too_deep = _lark_parse(masked)
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

    # ------------------------------------------------------------ errors

    def syntax_error(self, err: UnexpectedInput, masked: str, offset: int,
                     cut: int | None = None) -> int | None:
        """Record a diagnostic for `err`; return where to restart parsing (or None).

        `cut` is set when `err` came from re-parsing `masked[:cut]`: the
        declaration before offset `cut` ended too early.
        """
        if isinstance(err, UnexpectedCharacters):
            pos = err.pos_in_stream
            self.bad_character(pos)
            return self.next_decl_line(pos)
        if not isinstance(err, UnexpectedToken):  # pragma: no cover - LALR raises only these two
            self.diag("E0101", "syntax error", self.src.eof())
            return None
        tok = err.token
        at_end = tok.type == "$END"
        pos = (len(self.text) if cut is None else cut) if at_end else (tok.start_pos or 0)
        if cut is None:
            # 1. a block that is never closed (its `}` is missing)
            opened = _open_braces(masked, pos)
            if opened:
                brace = opened[-1]
                m = None if at_end else _first_decl_line(self.text, brace + 1, pos)
                if at_end or m is not None:
                    self.missing_brace(brace, m)
                    return m
            # 2. a declaration keyword swallowed as a name by an unfinished declaration
            kw = None if at_end else _keyword_before(self.text, tok, offset)
            if kw is not None:
                try:
                    _lark_parse(masked[:kw])
                except UnexpectedToken as inner:
                    if inner.token.type == "$END":
                        self.syntax_error(inner, masked[:kw], offset, cut=kw)
                        return kw
                except UnexpectedInput:
                    pass
        if at_end:
            end = len(masked[:pos].rstrip())
            tok_span = self.src.span(end, end)
        else:
            tok_span = self.token_span(tok)
        expected = _expected(err)
        # 3. the common mistakes, labelled by example
        label = _label(err)
        if (label == "E0102" or "_DOSES" in expected) and _current_decl(self.text, pos) == "operator":
            if _scope_too_early(self.text, tok, "doses"):
                self.diag("E0102", "an operator's scope `on ...` comes after its doses", tok_span,
                          help="move `on ARM, ...` to the end: `operator NAME = ... doses -10, 0, 10 on ARM`")
                return self.next_decl_line(pos)
            self.diag(
                "E0102",
                "an operator needs its doses",
                tok_span,
                help="add the doses after the call: `doses -10, 0, 10` or `doses -20..20 step 10`",
            )
            return None if at_end and cut is None else self.next_decl_line(pos)
        if "_OF" in expected and _current_decl(self.text, pos) == "placebo" and _scope_too_early(self.text, tok, "of"):
            self.diag("E0101", "a placebo's scope `on ...` comes after `of OPERATOR`", tok_span,
                      help="move `on ARM, ...` to the end: `placebo NAME = ... of OPERATOR on ARM`")
            return self.next_decl_line(pos)
        if tok.type == "EQUAL" and (label == "E0104" or expected == {"COLON"}):
            self.diag(
                "E0104",
                "settings are written `key: value`, not `key = value`",
                tok_span,
                help="replace `=` with `:`",
            )
            return self.next_decl_line(pos)
        wordy = tok.type in ("NAME", "NUMBER") or (tok.type.startswith("_") and str(tok).isidentifier())
        if (label == "E0105" or expected == {"COLON"}) and wordy and not _followed_by_colon(self.text, tok):
            quoted = _unquoted_run(self.text, tok)
            if quoted is not None:
                start, end, words = quoted
                key = _key_before(self.text, start)
                fix = f'{key}: "{words}"' if key else f'"{words}"'
                self.diag(
                    "E0105",
                    f"text must be quoted: {_show(words, 60)} is not a single name",
                    self.src.span(start, end),
                    help=f"put text in double quotes: `{fix}`",
                )
                return self.next_decl_line(pos)
        if label == "E0472" and self.two_readings(tok, tok_span):
            return self.next_decl_line(pos)
        # 4. anything else
        if cut is not None:
            message = f"this declaration is incomplete: expected {_expected_words(expected - {'$END'})}"
        else:
            message = f"unexpected {_token_words(tok)}; expected {_expected_words(expected)}"
        self.diag("E0101", message, tok_span, help=self.generic_help(tok, expected, cut is not None))
        return None if at_end and cut is None else self.next_decl_line(pos)

    def two_readings(self, tok: Token, tok_span: Span) -> bool:
        """`θ on a < θ on b`: a claim compares one reading with a number; say how to compare two."""
        start = tok.start_pos or 0
        line_start = self.text.rfind("\n", 0, start) + 1
        line_end = self.text.find("\n", start)
        line = self.text[line_start:len(self.text) if line_end < 0 else line_end].split("#")[0].strip()
        m = re.fullmatch(r"(.+?)\s*(<=|>=|<|>)\s*([A-Za-z_][A-Za-z0-9_]*\s*\(.*)", line)
        if m is None:
            return False
        left, op, right = m.group(1), m.group(2), m.group(3).rstrip(" }")
        tail = ""
        cut = re.search(r"\s+for\s+(each\s+scorer|[A-Za-z_].*)$", right)
        if cut is not None:  # a trailing `for ...` most likely meant the whole claim
            right, tail = right[:cut.start()], " " + cut.group(0).strip()
        self.diag(
            "E0472",
            "a claim compares a statistic with a number; two readings are compared with "
            "`difference(a, b)` or `ratio(a, b)`",
            tok_span,
            help=f"write `difference({left}, {right}) {op} 0{tail}`",
        )
        return True

    def generic_help(self, tok: Token, expected: set[str], cut: bool = False) -> str:
        decl_terms = {"_" + k.upper() for k in DECL_KEYWORDS}
        if decl_terms <= expected and tok.type == "NAME":
            guess = difflib.get_close_matches(str(tok), DECL_KEYWORDS, n=1, cutoff=0.6)
            if guess:
                return f"did you mean `{guess[0]}`?"
            return "each declaration starts with a keyword, e.g. `scorer NAME = laion_aesthetic()`"
        if expected == {"COLON"}:
            m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*$", self.text[max(0, (tok.start_pos or 0) - 100):tok.start_pos or 0])
            after = f" after `{m.group(1)}`" if m else ""
            return f"settings are written `key: value`: add `:`{after}"
        if expected == {"EQUAL"}:
            return "declarations are written `KIND NAME = ...`, e.g. `measure ita = ita(region: skin)`"
        if "COMMA" in expected and tok.type in ("NAME", "NUMBER", "STRING", "LSQB"):
            return "separate items with `,`"
        if "RPAR" in expected and tok.type in ("$END", "RBRACE"):
            return "add the missing `)`"
        if "RSQB" in expected and tok.type in ("$END", "RBRACE", "RPAR"):
            return "add the missing `]`"
        if tok.type == "$END":
            if cut:
                return "complete the declaration before the next one begins"
            return "the file ends in the middle of a declaration; complete it"
        return f"write {_expected_words(expected)} here"

    def bad_character(self, pos: int) -> None:
        c = self.text[pos] if pos < len(self.text) else ""
        if c == '"':
            nl = self.text.find("\n", pos)
            end = len(self.text) if nl < 0 else nl
            end = end - 1 if end > pos + 1 and self.text[end - 1] == "\r" else end
            self.diag(
                "E0106",
                "unterminated string",
                self.src.span(pos, max(end, pos + 1)),
                help='close the string with `"` on the same line (write a quote inside a string as `\\"`)',
            )
            return
        help = {
            "'": 'strings use double quotes: "text"',
            ";": "remove the `;`: declarations need no separator",
            "/": "put paths and text in double quotes",
            ".": "a decimal point must be followed by a digit (`1.0`, not `1.`); put paths in double quotes",
            "-": "a negative number is written without a space: `-5`",
            "=": "settings and arguments use `:` (`key: value`); comparisons are `<`, `>`, `<=`, `>=`",
            "!": "comparisons are `<`, `>`, `<=`, `>=`",
        }.get(c)
        if c in "<>" and help is None:
            help = "comparisons are `<`, `>`, `<=`, `>=`"
        if help is None:
            help = "remove this character"
            if c and not c.isascii() and c.isprintable():
                help = "names use ASCII letters, digits and `_`; put other text in double quotes"
        self.diag("E0107", f"unexpected character {_show(c) if c else 'at end of file'}",
                  self.src.point(pos), help=help)

    def missing_brace(self, brace: int, next_decl: int | None) -> None:
        line = self.src.pos(brace)[0]
        words = self.src.line_text(line).split()
        kind = words[0] if words and words[0] in DECL_KEYWORDS else "block"
        if next_decl is None:
            help = "add `}` at the end of the block"
        else:
            nl = self.src.pos(next_decl)[0]
            help = f"add `}}` before line {nl}"
        self.diag(
            "E0103",
            f"the `{kind}` block opened here is never closed",
            self.src.point(brace),
            help=help,
        )

    def token_span(self, tok: Token) -> Span:
        start = tok.start_pos or 0
        end = tok.end_pos if tok.end_pos is not None else start + len(tok)
        return self.src.span(start, max(end, start + 1) if start < len(self.text) else start)

    def next_decl_line(self, pos: int) -> int | None:
        """Start of the first declaration line after the line holding `pos`."""
        nl = self.text.find("\n", pos)
        if nl < 0:
            return None
        m = _DECL_LINE.search(self.text, nl + 1)
        return m.start(1) if m else None


def _blank(text: str, upto: int) -> str:
    """`text` with everything before `upto` replaced by spaces (newlines kept)."""
    head = re.sub(r"[^\n]", " ", text[:upto])
    return head + text[upto:]


def _first_decl_line(text: str, start: int, end: int) -> int | None:
    """Offset of a declaration keyword that starts a line in text[start:end], else None."""
    m = _DECL_LINE.search(text, start)
    # the keyword line may hold the error token itself, so allow it up to `end`
    if m is not None and m.start(1) <= end:
        # must be on a later line than the opening brace
        if "\n" in text[start : m.start(1)]:
            return m.start(1)
    return None


def _keyword_before(text: str, tok: Token, floor: int) -> int | None:
    """Offset of a line-leading declaration keyword at or right before `tok`, if any.

    When the parser stops at (or just after) such a keyword, the real mistake
    is in the declaration above it; a keyword read as a name (`region r = not` + `measure m = ...`
    reads `not measure`): the real mistake is in the declaration above it.
    """
    start = tok.start_pos or 0
    line_start = text.rfind("\n", 0, start) + 1
    m = _DECL_LINE.match(text, line_start)
    if m is None or m.start(1) < floor or (m.start(1) == start and text[:start].strip() == ""):
        return None
    if text[m.end(1):start].strip(" \t"):
        return None
    return m.start(1)


def _current_decl(text: str, pos: int) -> str | None:
    """The keyword of the declaration that holds offset `pos`."""
    last = None
    for m in _DECL_LINE.finditer(text, 0, pos):
        last = m
    if last is None:
        m = re.match(r"\s*([a-z_]+)", text)
        return m.group(1) if m else None
    return last.group(1)


def _expected(err: UnexpectedToken) -> set[str]:
    try:
        acc = set(err.accepts)
    except Exception:
        acc = set()
    return acc or set(err.expected or ())


def _followed_by_colon(text: str, tok: Token) -> bool:
    end = tok.end_pos or 0
    return re.match(r"[ \t]*:", text[end : end + 200]) is not None


_WORD = re.compile(r"[^\s,()\[\]{}:#\"]+")


def _unquoted_run(text: str, tok: Token) -> tuple[int, int, str] | None:
    """The run of bare words around `tok` on its line (the text that wants quotes)."""
    start = tok.start_pos or 0
    line_start = text.rfind("\n", 0, start) + 1
    # walk back over words and spaces to the `:` / `(` / `,` / `{` that began the value
    i = start
    while i > line_start and text[i - 1] not in ":(,[{":
        i -= 1
    while i < start and text[i] in " \t":
        i += 1
    j = start
    n = len(text)
    while j < n and text[j] not in ",)]}#\n:\"":
        j += 1
    while j > start and text[j - 1] in " \t\r":
        j -= 1
    words = text[i:j]
    parts = words.split()
    # numbers in the run suggest a missing `,` or `:` rather than text
    if len(parts) < 2 or not all(_WORD.fullmatch(w) and not w[0].isdigit() and w[0] != "-" for w in parts):
        return None
    return i, j, words


def _key_before(text: str, value_start: int) -> str | None:
    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*:[ \t]*$", text[max(0, value_start - 200) : value_start])
    return m.group(1) if m else None
