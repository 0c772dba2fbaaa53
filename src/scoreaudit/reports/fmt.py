"""Number formatting for reports: the one rule of `scoreaudit.numfmt` (results.json sentences use it too)."""

from __future__ import annotations

from scoreaudit.numfmt import MINUS, UNDEFINED, _finite, _superscript, ci, count, num, pct, peq, plain, pval, signed  # noqa: F401

FILTERS = {"plain": plain, "num": num, "signed": signed, "pval": pval, "peq": peq, "ci": ci, "pct": pct, "count": count}
