"""Where the official packages' venvs are (scripts/official_venvs.sh builds them; make test runs it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

OFFICIAL_VENVS = Path(__file__).resolve().parents[2] / ".venv-official"


def official_python(package: str) -> str:
    """The interpreter of the venv scripts/official_venvs.sh builds for `package` (make test builds it)."""
    import os

    # next to the checkout, or next to the venv running the tests (scripts/official_venvs.sh puts
    # .venv-official beside .venv: the same place in a fresh clone, a shared one in a worktree)
    roots = [Path(os.environ["SCOREAUDIT_OFFICIAL_VENVS"])] if os.environ.get("SCOREAUDIT_OFFICIAL_VENVS") else [
        OFFICIAL_VENVS, Path(sys.prefix).parent / ".venv-official"]
    python = next((r / package / "bin" / "python" for r in roots if (r / package / "bin" / "python").is_file()),
                  roots[0] / package / "bin" / "python")
    if not python.is_file():
        pytest.fail(f"{python} is missing: run `scripts/official_venvs.sh` (make test does) to install the "
                    f"official {package} package in its own environment")
    return str(python)
