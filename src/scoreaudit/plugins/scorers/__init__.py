"""Scorers: embedded offline ones, planted ones, model ones (the `models` extra)."""

from scoreaudit.plugins.scorers import classical, planted, models, precomputed, niqe  # noqa: F401
