"""A comparison sentence names each reading's statistic with the registry's words (issue 29: one definition).

Before, stats/comparison_sentences.py kept its own STAT_WORDS for seven statistics; any other (e.g.
`trend`, whose registry words are "dose trend") was printed as its bare name ("trend of light").
"""

from __future__ import annotations

import pytest

from scoreaudit import registry
from scoreaudit.stats.comparison_sentences import comparison_sentence


def _cell(statistic: str) -> dict:
    reading = {"arm": "real", "scorer": "hps", "statistic": statistic, "params": {"operator": "light"}}
    return {"statistic": "difference", "outcome": "supported", "estimate": 0.5, "ci_low": 0.1, "ci_high": 0.9,
            "ci_level": 0.9, "p": 0.01, "q": 0.02,
            "detail": {"readings": [reading, {**reading, "scorer": "laion"}]}}


@pytest.mark.parametrize("statistic", ["trend", "fidelity_index", "curve", "asymmetry"])
def test_comparison_sentence_uses_the_registry_words(statistic):
    registry.load_plugins(entry_points=False)
    words = registry.statistics.get(statistic).meta["words"]
    text = comparison_sentence(_cell(statistic))
    assert text.startswith(f"On real, hps's {words} of light minus laion's is ")


def test_trend_is_not_printed_by_its_bare_name():
    text = comparison_sentence(_cell("trend"))
    assert "dose trend of light" in text and "'s trend of" not in text
