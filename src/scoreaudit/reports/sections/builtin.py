"""The built-in report sections, imported so that they register."""

from __future__ import annotations

from scoreaudit.registry import sections as _registry


def load() -> list:
    """Import the built-in section modules; return every section entry in declared order."""
    from scoreaudit.reports.sections import (  # noqa: F401  (imports register)
        appendix,
        comparisons,
        cross_image,
        cross_plots,
        dose_response,
        exclusions,
        first_screen,
        populations,
        probes,
        ranked,
        robustness,
        run_warnings,
        selection,
        validity,
    )

    return sorted(_registry, key=lambda e: (e.meta.get("order", 1000), e.name))
