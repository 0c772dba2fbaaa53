"""Shared helpers for the grammar tests (a plain module; the folder has no __init__.py)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.audit"))
NORMATIVE = [ROOT / "examples" / f"{n}.audit" for n in ("skin_tone", "body_warp", "cross_image")]
GOLDEN = Path(__file__).resolve().parent / "golden"

#: Set SCOREAUDIT_REGEN_GOLDEN=1 to rewrite the golden files instead of comparing.
REGEN = os.environ.get("SCOREAUDIT_REGEN_GOLDEN") == "1"


def to_jsonable(node):
    """AST → plain JSON data (type names kept, spans dropped)."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        out = {"_type": type(node).__name__}
        for f in dataclasses.fields(node):
            if f.name in ("span", "comments"):
                continue
            out[f.name] = to_jsonable(getattr(node, f.name))
        return out
    if isinstance(node, tuple):
        return [to_jsonable(x) for x in node]
    return node


def check_golden(path: Path, actual: str) -> None:
    if REGEN or not path.exists():
        if not REGEN:
            raise AssertionError(f"missing golden {path}; run with SCOREAUDIT_REGEN_GOLDEN=1 to create it")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{path.name} differs from its golden:\n--- got\n{actual}\n--- want\n{expected}"


def dump_ast(module) -> str:
    return json.dumps(to_jsonable(module), indent=1) + "\n"
