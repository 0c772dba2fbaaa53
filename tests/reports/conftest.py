"""Fixtures for the report tests: fixture bundles of the three normative examples, rendered once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fixture_bundle import BUILDERS  # noqa: E402

EXAMPLES = tuple(BUILDERS)


@pytest.fixture(scope="session")
def bundles(tmp_path_factory) -> dict[str, Path]:
    """One fixture bundle per normative example, with report.html rendered."""
    from scoreaudit.reports.render import render

    out = {}
    for name, build in BUILDERS.items():
        d = build(tmp_path_factory.mktemp(name))
        render(d, formats=["html"])
        out[name] = d
    return out


@pytest.fixture(scope="session")
def skin_pdf(tmp_path_factory) -> Path:
    pytest.importorskip("weasyprint")
    from scoreaudit.reports.render import render

    d = BUILDERS["skin_tone"](tmp_path_factory.mktemp("skin_pdf"))
    paths = render(d, formats=["html", "pdf"])
    assert d / "report.pdf" in paths
    return d
