"""Fixtures of the precomputed-table tests (helpers live in precomputed_helpers.py: test folders share
the module name `conftest`, so tests never import from it)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The spec's folder: specs, manifests and tables are written under it."""
    return tmp_path
