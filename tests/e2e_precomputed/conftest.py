"""Fixtures of the end-to-end precomputed tests (builders live in e2e_helpers.py: test folders share
the module name `conftest`, so tests never import from it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from e2e_helpers import COMPUTED, face_images, run, write_spec  # noqa: E402


@pytest.fixture(scope="session")
def computed(tmp_path_factory):
    """The within-image audit run through the runtime: (project folder, results)."""
    folder = tmp_path_factory.mktemp("computed")
    face_images(folder)
    results = run(write_spec(folder, COMPUTED), folder / "out")
    assert results["exclusions"] == [], results["exclusions"]
    return folder, results
