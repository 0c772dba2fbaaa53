"""How a sentence names a statistic and whether it prints a sign: read from its registry entry (`words`, `sign`).

The one place both the cell sentences (stats/sentences.py) and the comparison
sentences (stats/comparison_sentences.py) read them, so a statistic's wording is
defined once, in its `register(...)` call (plugins/statistics.py).
"""

from __future__ import annotations


def _entry_meta(statistic: str) -> dict:
    from scoreaudit import registry

    registry.load_plugins()
    return dict(registry.statistics.get(statistic).meta) if statistic in registry.statistics else {}


def stat_name(statistic: str) -> str:
    """The statistic's words ("fidelity index"); a statistic without any: its name with spaces."""
    return _entry_meta(statistic).get("words") or statistic.replace("_", " ")


def signed(statistic: str) -> bool:
    return _entry_meta(statistic).get("sign", "signed") == "signed"
