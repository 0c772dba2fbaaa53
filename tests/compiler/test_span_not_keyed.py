"""Declaration spans travel in the IR (the runtime locates its diagnostics by them) but never enter a key.

Moving a declaration by a line, or re-indenting it, changes where it is written and nothing the run
computes: the IR JSON (but for the hash of the spec's text), every plan step key and the plan fingerprint
stay the same.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scoreaudit import api
from scoreaudit.compiler.plan import build_plan

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["skin_tone.audit", "comparisons.audit", "generated.audit"]


def _moved(text: str) -> str:
    """Every line that opens a scorer, arm or probe gets a comment line above it and two spaces before it."""
    return re.sub(r"^(scorer|arm|probe) ", r"# moved down a line\n  \1 ", text, flags=re.M)


def _compiled(path: Path, source: str):
    checked = api.check(path, source=source, tables=False)
    assert checked.ok, checked.diagnostics
    return checked.ir, build_plan(checked.ir, path.parent)


@pytest.mark.parametrize("name", EXAMPLES)
def test_moving_declarations_keeps_every_key(name):
    path = ROOT / "examples" / name
    text = path.read_text(encoding="utf-8")
    ir_a, plan_a = _compiled(path, text)
    ir_b, plan_b = _compiled(path, _moved(text))
    moved = list(ir_a.scorers.values()) + list(ir_a.arms.values()) + list(ir_a.probes.values())
    assert moved
    for decl in moved:  # the spans did move ...
        other = (ir_b.scorers.get(decl.name) or ir_b.arms.get(decl.name) or ir_b.probes.get(decl.name))
        assert decl.span is not None and other.span is not None
        assert other.span.line > decl.span.line and other.span.column == decl.span.column + 2
    # ... and nothing keyed did (the IR's hash of the spec's text is provenance: it changes with any edit)
    assert ir_a.source_hash != ir_b.source_hash
    assert ir_a.model_dump(mode="json", exclude={"source_hash"}) == ir_b.model_dump(mode="json", exclude={"source_hash"})
    assert [s.key for s in plan_a.steps] == [s.key for s in plan_b.steps] and plan_a.steps
    assert plan_a.fingerprint == plan_b.fingerprint


def test_spans_locate_the_runtime_diagnostics(tmp_path):
    """W0620 (a manifest without an id column) points at the arm's name, read from the IR's span."""
    (tmp_path / "imgs").mkdir()
    (tmp_path / "m.csv").write_text("path\nimgs/a.png\n", encoding="utf-8")
    spec = ('audit "t" { version: 1 }\nscorer s = sharpness()\n\n\n'
            '   arm a = images("imgs", manifest: "m.csv", kind: real)\n')
    (tmp_path / "t.audit").write_text(spec, encoding="utf-8")
    checked = api.check(tmp_path / "t.audit")
    [w] = [d for d in checked.diagnostics if d.code == "W0620"]
    assert (w.span.line, w.span.column, w.span.end_column) == (5, 8, 9)
    assert spec[w.span.start:w.span.end] == "a"


def test_the_runtime_imports_no_syntax():
    """No runtime module imports the grammar (its AST or parser): what it locates, it locates by IR spans."""
    import ast as pyast

    found = []
    for path in sorted((ROOT / "src" / "scoreaudit" / "runtime").rglob("*.py")):
        for node in pyast.walk(pyast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, pyast.Import)
                     else [node.module or ""] if isinstance(node, pyast.ImportFrom) else [])
            found += [(path.name, n) for n in names if n.startswith("scoreaudit.grammar")]
    assert found == []


def test_a_model_path_outside_the_roots_points_at_its_string_not_a_comment(tmp_path):
    """E0707 locates the `weights:` string from the IR's literal spans; a regex over the text found the
    first occurrence, here a comment above the declaration."""
    outside = tmp_path / "elsewhere" / "head.pth"
    outside.parent.mkdir()
    outside.write_bytes(b"")
    (tmp_path / "spec").mkdir()
    spec = (f'audit "t" {{ version: 1 }}\n# was "{outside}" before\n'
            f'scorer laion = laion_aesthetic(weights: "{outside}")\n')
    (tmp_path / "spec" / "t.audit").write_text(spec, encoding="utf-8")
    checked = api.check(tmp_path / "spec" / "t.audit", tables=False)
    [e] = [d for d in checked.diagnostics if d.code == "E0707"]
    assert e.span.line == 3 and spec[e.span.start:e.span.end] == f'"{outside}"'
