"""Character offsets ↔ LSP positions (line, character in the negotiated units).

The parser's spans count code points (1-based line and column, 0-based
offsets); LSP counts UTF-16 code units unless the client agreed on UTF-8 or
UTF-32. Line starts are found once per text, so converting every diagnostic
of a 2,000-line spec costs a bisect each.
"""

from __future__ import annotations

import bisect

from scoreaudit.diagnostics import Span


class Lines:
    def __init__(self, text: str, encoding: str = "utf-16"):
        self.text = text
        self.encoding = encoding.lower().replace("_", "-")
        self.starts = [0]
        i = text.find("\n")
        while i >= 0:
            self.starts.append(i + 1)
            i = text.find("\n", i + 1)

    def _line(self, n: int) -> str:
        start = self.starts[n]
        end = self.starts[n + 1] - 1 if n + 1 < len(self.starts) else len(self.text)
        return self.text[start:end]

    def _units(self, s: str) -> int:
        if s.isascii() or self.encoding == "utf-32":
            return len(s)
        if self.encoding == "utf-8":
            return len(s.encode("utf-8"))
        return len(s.encode("utf-16-le")) // 2

    def position(self, offset: int) -> tuple[int, int]:
        """(line, character) of a code-point offset, both 0-based."""
        offset = max(0, min(offset, len(self.text)))
        n = bisect.bisect_right(self.starts, offset) - 1
        return n, self._units(self.text[self.starts[n]:offset])

    def offset(self, line: int, character: int) -> int:
        """The code-point offset of an LSP position (clamped to its line)."""
        if line >= len(self.starts):
            return len(self.text)
        line_text = self._line(max(0, line))
        if line_text.isascii() or self.encoding == "utf-32":
            col = min(character, len(line_text))
        else:
            col, units = 0, 0
            while col < len(line_text) and units < character:
                units += self._units(line_text[col])
                col += 1
        return self.starts[max(0, line)] + col

    def span_range(self, span: Span) -> tuple[tuple[int, int], tuple[int, int]]:
        """A diagnostic span (1-based line/column in code points) as an LSP range."""
        def one(line: int, column: int) -> tuple[int, int]:
            n = min(max(line - 1, 0), len(self.starts) - 1)
            text = self._line(n)
            col = min(max(column - 1, 0), len(text))
            return n, self._units(text[:col])

        start = one(span.line, span.column)
        end = one(span.end_line, span.end_column)
        return start, max(start, end)
