"""String literals of the `.audit` language: their value and their canonical spelling."""

from __future__ import annotations

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


def unescape(body: str) -> str:
    """The value of a string literal's body; unknown escapes keep their backslash."""
    if "\\" not in body:
        return body
    out = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def escape(value: str) -> str:
    """A string literal (with quotes) whose value is `value`; inverse of `unescape`."""
    body = (value.replace("\\", "\\\\").replace('"', '\\"')
            .replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t"))
    return f'"{body}"'
