"""Shared fixtures for the imaging runtime tests (images built in memory, no downloads)."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data

from scoreaudit.registry import load_plugins


@pytest.fixture(scope="session")
def plugins():
    return load_plugins()


@pytest.fixture(scope="session")
def astronaut() -> np.ndarray:
    return np.ascontiguousarray(data.astronaut())


@pytest.fixture(scope="session")
def textured() -> np.ndarray:
    """A smooth colourful 96×128 image with texture everywhere (so any moved pixel shows)."""
    y, x = np.mgrid[0:96, 0:128].astype(np.float64)
    img = np.stack([
        128 + 90 * np.sin(x / 5.0) * np.cos(y / 7.0),
        128 + 80 * np.cos(x / 9.0 + y / 11.0),
        128 + 70 * np.sin((x + y) / 6.0),
    ], axis=-1)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


@pytest.fixture(scope="session")
def centre_mask() -> np.ndarray:
    m = np.zeros((96, 128), bool)
    m[30:70, 40:90] = True
    return m
