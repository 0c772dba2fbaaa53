"""What may be typed at the cursor, read from the text before it.

Completion runs while the text is being typed, so it cannot wait for a parse:
this module tokenizes the current statement up to the cursor (the last line
that starts with a declaration keyword, as the parser's error recovery does)
and follows its brackets, so it knows the statement, the innermost call (its
function, argument index and keyword), the open block and the last token.
`features.complete` turns that into items.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from scoreaudit.grammar.vocabulary import STATEMENT_KEYWORDS

_STATEMENT_LINE = re.compile(r"^[ \t]*(" + "|".join(STATEMENT_KEYWORDS) + r")(?![A-Za-z0-9_])(?![ \t]*:)",
                             re.MULTILINE)
_TOKEN = re.compile(r"""
    (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\[^\n])*("|$))
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)
  | (?P<punct>\.\.|>=|<=|[{}()\[\],:=<>*&|])
  | (?P<space>\s+)
  | (?P<other>.)
""", re.VERBOSE | re.MULTILINE)


@dataclass
class Tok:
    type: str
    text: str
    start: int
    end: int


@dataclass
class Frame:
    """An open bracket: `{` block, `(` call or group, `[` list."""

    open: str
    func: str | None = None  # the name before `(`
    index: int = 0  # argument index in a call
    keyword: str | None = None  # `name:` of the current argument
    named: list[str] = field(default_factory=list)  # keyword arguments given so far


@dataclass
class Context:
    """The cursor's situation. `tokens` are the statement's tokens before the word being typed."""

    statement: str | None
    tokens: list[Tok]
    frames: list[Frame]
    word_start: int  # where the word being typed starts (== cursor when none)
    line_start: bool  # nothing but blanks before the word on its line
    in_comment_or_string: bool = False
    statement_line: int = -1  # where the statement's line starts (its own declaration is no candidate)

    @property
    def last(self) -> str | None:
        return self.tokens[-1].text if self.tokens else None

    def last_n(self, n: int) -> list[str]:
        return [t.text for t in self.tokens[-n:]]

    @property
    def call(self) -> Frame | None:
        """The innermost frame when it is a call (not inside a list or block within it)."""
        for f in reversed(self.frames):
            if f.open == "[":
                continue
            return f if f.open == "(" and f.func else None
        return None

    @property
    def block(self) -> str | None:
        """The statement keyword of the innermost open `{`, when the cursor is directly in it."""
        if self.frames and self.frames[-1].open == "{":
            return self.statement
        return None

    @property
    def depth(self) -> int:
        return len(self.frames)


def statement_start(text: str, offset: int) -> int:
    """The start of the line of the last statement keyword at or before `offset` (0 when none)."""
    start = 0
    for m in _STATEMENT_LINE.finditer(text, 0, offset):
        start = m.start()
    return start


def context_at(text: str, offset: int) -> Context:
    offset = max(0, min(offset, len(text)))
    begin = statement_start(text, offset)
    toks: list[Tok] = []
    for m in _TOKEN.finditer(text, begin, offset):
        kind = m.lastgroup
        if kind == "space":
            continue
        toks.append(Tok(kind, m.group(), m.start(), m.end()))
    in_cs = bool(toks) and toks[-1].type in ("comment", "string") and _open_at_end(toks[-1], offset, text)
    word_start = offset
    if toks and toks[-1].type == "name" and toks[-1].end == offset:
        word_start = toks[-1].start
        toks = toks[:-1]
    line_begin = text.rfind("\n", 0, word_start) + 1
    line_start = text[line_begin:word_start].strip() == ""
    toks = [t for t in toks if t.type != "comment"]
    statement = toks[0].text if toks and toks[0].type == "name" and toks[0].text in STATEMENT_KEYWORDS else None
    return Context(statement, toks, _frames(toks), word_start, line_start, in_cs,
                   begin if statement is not None else -1)


def _open_at_end(tok: Tok, offset: int, text: str) -> bool:
    """A comment or string token the cursor is inside (not just after a closed string)."""
    if tok.end != offset:
        return False
    if tok.type == "comment":
        return True
    return len(tok.text) < 2 or not tok.text.endswith('"') or tok.text.endswith('\\"')


def _frames(toks: list[Tok]) -> list[Frame]:
    frames: list[Frame] = []
    for i, t in enumerate(toks):
        if t.type != "punct":
            if (t.type == "name" and i + 1 < len(toks) and toks[i + 1].text == ":" and frames
                    and frames[-1].open == "(" and frames[-1].func):
                frames[-1].keyword = t.text
                frames[-1].named.append(t.text)
            continue
        if t.text in "{[":
            frames.append(Frame(t.text))
        elif t.text == "(":
            prev = toks[i - 1] if i > 0 else None
            func = prev.text if prev is not None and prev.type == "name" and prev.end == t.start else None
            if func is None and prev is not None and prev.type == "name" and prev.text != "not":
                func = prev.text  # `name (` with a blank is still a call; `not (a | b)` is a group
            frames.append(Frame("(", func=func))
        elif t.text in "})]":
            want = {"}": "{", ")": "(", "]": "["}[t.text]
            while frames:
                f = frames.pop()
                if f.open == want:
                    break
        elif t.text == "," and frames and frames[-1].open == "(":
            frames[-1].index += 1
            frames[-1].keyword = None
    return frames
