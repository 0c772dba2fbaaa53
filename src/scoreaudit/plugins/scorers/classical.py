"""Embedded no-reference scorers: no weights, no download."""

from __future__ import annotations

from scoreaudit.registry import NoParams, scorers


@scorers.register("sharpness", params=NoParams, version="1", needs_prompt=False, requires=())
class Sharpness:
    """Variance of the Laplacian of the grey image (higher = sharper)."""


@scorers.register("colourfulness", params=NoParams, version="1", needs_prompt=False, requires=())
class Colourfulness:
    """Hasler–Süsstrunk colourfulness (higher = more colourful)."""


@scorers.register("incompressibility", params=NoParams, version="1", needs_prompt=False, requires=())
class Incompressibility:
    """Share of DCT energy in high frequencies (higher = more fine detail / noise)."""
