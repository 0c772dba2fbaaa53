"""Fixtures: the normative example IRs, compiled by the project's compiler."""

from __future__ import annotations

import pytest
from stats_helpers import compile_example, with_settings


@pytest.fixture(scope="session")
def skin_ir():
    return with_settings(compile_example("skin_tone.audit"), bootstrap=1000)


@pytest.fixture(scope="session")
def body_ir():
    return with_settings(compile_example("body_warp.audit"), bootstrap=1000)
