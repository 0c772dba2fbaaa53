"""Diagnostics as data: every problem the tool reports about a user's input.

Stages never raise at the first problem: they append `Diagnostic`s to a list
and carry on where they can, so a file with several errors reports all of
them. Codes are stable and documented in `spec/diagnostics.md`:

- E01xx syntax (grammar), E02xx names and declarations, E03xx types and
  arguments, E04xx doses and operators, E05xx arms and data requirements,
  E06xx hypotheses, E07xx run-time input (manifests, images), E08xx
  precomputed score/measure tables,
  W.... warnings with the same grouping.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

from scoreaudit.termsafe import safe_text  # the one escaping function; re-exported for callers

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True)
class Span:
    """A region of the source: 1-based line/column, 0-based character offsets."""

    line: int
    column: int
    end_line: int
    end_column: int
    start: int = 0
    end: int = 0

    @classmethod
    def point(cls, line: int, column: int, offset: int = 0) -> Span:
        return cls(line, column, line, column + 1, offset, offset + 1)


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    span: Span | None = None
    help: str | None = None
    path: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def to_dict(self) -> dict:
        d = asdict(self)
        d["notes"] = list(self.notes)
        return d


class DiagnosticError(Exception):
    """Raised by facade functions when a stage ends with errors."""

    def __init__(self, diagnostics: Sequence[Diagnostic], source: str | None = None):
        self.diagnostics = list(diagnostics)
        self.source = source
        super().__init__(render_all(self.diagnostics, source))


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to a misspelled name, or None."""
    matches = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def source_lines(source: str) -> list[str]:
    """The source's lines as the parser counts them: split at '\\n' only (a trailing '\\r' dropped).

    str.splitlines would also split at U+2028, U+2029, U+0085, VT, FF, FS, GS
    and RS, which the parser treats as ordinary characters: the caret would
    land on the wrong line.
    """
    return [line[:-1] if line.endswith("\r") else line for line in source.split("\n")]


def render(d: Diagnostic, source: str | None = None, lines: Sequence[str] | None = None) -> str:
    """`path:line:col: error[E0201]: message`, the source line, carets, help.

    `lines` (from `source_lines`) saves splitting the source again for each
    diagnostic; every user-derived piece of text is passed through `safe_text`.
    """
    loc = safe_text(d.path or "<input>")
    if d.span is not None:
        loc = f"{loc}:{d.span.line}:{d.span.column}"
    out = [f"{loc}: {d.severity}[{d.code}]: {safe_text(d.message)}"]
    if d.span is not None and (lines is not None or source is not None):
        if lines is None:
            lines = source_lines(source or "")
        if 1 <= d.span.line <= len(lines):
            text = lines[d.span.line - 1]
            gutter = f"{d.span.line:>4} | "
            out.append(gutter + safe_text(text))
            col = max(1, d.span.column)
            end_col = d.span.end_column if d.span.end_line == d.span.line else len(text) + 1
            prefix = safe_text(text[:col - 1])
            width = max(1, len(safe_text(text[col - 1:max(col - 1, end_col - 1)])))
            pad = "".join("\t" if ch == "\t" else " " for ch in prefix)
            out.append(" " * len(gutter) + pad + "^" * width)
    for note in d.notes:
        out.append(f"  = note: {safe_text(note)}")
    if d.help:
        out.append(f"  = help: {safe_text(d.help)}")
    return "\n".join(out)


def render_all(diags: Sequence[Diagnostic], source: str | None = None) -> str:
    """Every diagnostic, the source split once (linear in the number of diagnostics)."""
    lines = source_lines(source) if source is not None else None
    return "\n\n".join(render(d, source, lines) for d in diags)


def to_json(diags: Sequence[Diagnostic]) -> str:
    return json.dumps([d.to_dict() for d in diags], indent=2)


def has_errors(diags: Iterable[Diagnostic]) -> bool:
    return any(d.is_error for d in diags)
