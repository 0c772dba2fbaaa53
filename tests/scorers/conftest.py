"""Shared fixtures for the scorer tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def astronaut() -> np.ndarray:
    """A real colour photo that ships in the scikit-image wheel (public domain)."""
    from skimage import data

    return data.astronaut()
