"""Helpers for tests, benchmarks and the example data scripts (never imported by the tool itself)."""
