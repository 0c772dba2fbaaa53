"""Scorers: embedded offline ones, planted ones, model ones (the `models` extra)."""

from scoreaudit.plugins.scorers import classical, models, niqe, planted, precomputed  # noqa: F401
