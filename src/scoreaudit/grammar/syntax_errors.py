"""The wording of syntax errors (E0101-E0107, E0472): what went wrong, where, and how to fix it.

Lark reports an unexpected token with its parser state; this module turns that
into a located diagnostic in the user's words: the common mistakes recognised
by example (`ERROR_EXAMPLES`, matched on the parser state) or by the text
around the token (a `}` never written, a declaration keyword swallowed by the
unfinished declaration above it, unquoted text, `=` in a settings block), and
anything else as "unexpected X; expected Y" with the expected terminals in words.
It also says where the parse restarts: the next line that opens a statement
(`vocabulary.STATEMENT_KEYWORDS`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from functools import lru_cache

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from scoreaudit.diagnostics import Span
from scoreaudit.grammar.lark_cache import lark_parse
from scoreaudit.grammar.source_text import Source, open_braces
from scoreaudit.grammar.vocabulary import STATEMENT_KEYWORDS, terminal

#: A line starting with a statement keyword: a restart point after a syntax error.
_DECL_LINE = re.compile(
    r"^[ \t]*(" + "|".join(STATEMENT_KEYWORDS) + r")(?![A-Za-z0-9_])(?![ \t]*:)", re.MULTILINE
)
_DECL_TERMS = frozenset(terminal(k) for k in STATEMENT_KEYWORDS)


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
    if terms >= _DECL_TERMS:
        terms -= _DECL_TERMS
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
                lark_parse(snippet)
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



# ---------------------------------------------------------------- the reporter


class SyntaxErrors:
    """The error half of a parse: needs `text`, `src` (a `Source`) and `diag(code, message, span, help)`."""

    text: str
    src: Source
    diag: Callable[..., None]

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
            opened = open_braces(masked, pos)
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
                    lark_parse(masked[:kw])
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
        if expected >= _DECL_TERMS and tok.type == "NAME":
            guess = difflib.get_close_matches(str(tok), STATEMENT_KEYWORDS, n=1, cutoff=0.6)
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
        kind = words[0] if words and words[0] in STATEMENT_KEYWORDS else "block"
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


def _first_decl_line(text: str, start: int, end: int) -> int | None:
    """Offset of a declaration keyword that starts a line in text[start:end], else None."""
    m = _DECL_LINE.search(text, start)
    # the keyword line may hold the error token itself, so allow it up to `end`
    # ... and must be on a later line than the opening brace
    if m is not None and m.start(1) <= end and "\n" in text[start : m.start(1)]:
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
    except Exception:  # noqa: BLE001 - Lark computes `accepts` lazily from the parser state; fall back to `expected`
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
