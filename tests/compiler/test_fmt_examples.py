"""`scoreaudit fmt --check` passes on every shipped example, and aligned `=` is canonical and stable."""

from __future__ import annotations

from pathlib import Path

import pytest

from scoreaudit import api, cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.audit"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_examples_are_formatted(path, capsys):
    assert cli.main(["fmt", "--check", str(path)]) == 0, capsys.readouterr().err


def test_adjacent_declarations_align_their_equals_and_fmt_is_idempotent():
    src = ('audit "t" { seed: 1 }\nscorer a = sharpness()\nscorer longer_name = colourfulness()  # c\n\n'
           'scorer b = sharpness()\narm x = images("d", kind: real)\n')
    out, diags = api.format_source(src)
    assert out is not None
    lines = out.splitlines()
    assert "scorer a           = sharpness()" in lines
    assert "scorer longer_name = colourfulness()  # c" in lines
    assert "scorer b = sharpness()" in lines  # a blank line ends the run
    assert "arm x = images(\"d\", kind: real)" in lines  # another kind is its own run
    again, _ = api.format_source(out)
    assert again == out
