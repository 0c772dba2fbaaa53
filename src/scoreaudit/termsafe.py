"""The one escaping function for text bound for a terminal: `safe_text`.

Strings from a spec (titles, levels, claim sentences), from data (manifest values, file names) or from
the command line (`--out`) can hold bytes a terminal interprets: ESC starts ANSI/OSC sequences (colours,
window titles, cursor moves, hyperlinks), BEL rings, C1 controls (U+0080-U+009F) act as ESC sequences on
some terminals, CR/VT/FF and the line and paragraph separators move the cursor or start a new line, and
the bidi overrides reorder what is shown. Every printer of user text (cli.py, runtime/progress.py,
plainprogress.py, diagnostics rendering) passes it through here, so such text is shown, never obeyed.
"""

from __future__ import annotations

import re

# C0 controls (tab and newline aside), DEL, C1 controls, line/paragraph separators, bidi marks, embeddings,
# overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(m: re.Match[str]) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe_text(text: object, keep_newlines: bool = False) -> str:
    """`text` with control characters made visible (`\\x1b`), so data cannot drive the terminal.

    Newlines become `\\n` too unless `keep_newlines` (for text the tool itself laid out). Idempotent:
    escaped text holds no control character, so escaping it again changes nothing.
    """
    text = str(text)
    if text.isprintable():  # the common case, in C: no control, separator or bidi character at all
        return text
    text = _CONTROL.sub(_visible, text)
    return text if keep_newlines else text.replace("\n", "\\n")
