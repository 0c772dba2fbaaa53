"""Offsets ↔ (line, column), and where a text's strings, comments and open braces are.

Shared by the parser (spans, comments kept on the module) and its error
wording (a block never closed); positions count lines as Lark does ('\\n' only).
"""

from __future__ import annotations

import bisect
import re

from scoreaudit.diagnostics import Span


def line_starts(text: str) -> list[int]:
    starts = [0]
    for m in re.finditer("\n", text):
        starts.append(m.end())
    return starts


class Source:
    """Offsets ↔ (line, column) for one text, both as Lark counts them ('\\n' only)."""

    def __init__(self, text: str):
        self.text = text
        self.starts = line_starts(text)

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


def open_braces(text: str, upto: int) -> list[int]:
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



def blank_before(text: str, upto: int) -> str:
    """`text` with everything before `upto` replaced by spaces (newlines kept)."""
    head = re.sub(r"[^\n]", " ", text[:upto])
    return head + text[upto:]
