"""Each hypothesis cell as one sentence: the wording lives in one place, `scoreaudit.stats.sentences`.

The engine stores `cell_sentence(cell)` in results.json and the report renders
the same function's output from the cell's numbers, so the two agree by
construction (and a number edited after the fact shows up in the report,
where `verify` catches it).
"""

from __future__ import annotations

from scoreaudit.stats.sentences import cell_sentence, stat_name  # noqa: F401  (re-exported)

OUTCOME_ICON = {"supported": "\u2713", "refuted": "\u2717", "inconclusive": "?"}
