"""Shared helpers for the compiler tests (goldens regenerate with SCOREAUDIT_REGEN=1)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.audit"))
REGEN = os.environ.get("SCOREAUDIT_REGEN") == "1"


def golden(path: Path, actual: str) -> None:
    """Compare with a golden file; write it instead when SCOREAUDIT_REGEN=1."""
    if REGEN or not path.exists():
        if not REGEN:
            pytest.fail(f"missing golden {path}; run with SCOREAUDIT_REGEN=1 to create it")
        path.write_text(actual, encoding="utf-8")
        return
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{path.name} differs from its golden (SCOREAUDIT_REGEN=1 regenerates)"


def check_text(source: str, path: str = "<test>"):
    from scoreaudit import api

    return api.check(path, source=source)
