"""spec/architecture.md says how statistics find their estimators; this holds the code to it (issue 29).

The document used to say estimators register with an `@estimator(name)` decorator; they are
"module:function" strings in each statistic's declaration, imported by stats/estimate.py.
"""

from __future__ import annotations

from pathlib import Path

from scoreaudit import registry
from scoreaudit.stats.estimate import FORMS, estimator_for

ROOT = Path(__file__).resolve().parents[1]


def test_every_statistic_names_an_importable_estimator_string():
    registry.load_plugins(entry_points=False)
    names = registry.statistics.names()
    assert names
    for name in names:
        target = registry.statistics.get(name).fact("estimator")
        assert isinstance(target, str) and target.count(":") == 1 and target.startswith("scoreaudit.stats."), name
        assert callable(estimator_for(name)), name
    assert all(callable(estimator_for(f)) for f in FORMS)


def test_the_document_describes_the_mechanism_the_code_uses():
    text = (ROOT / "spec" / "architecture.md").read_text(encoding="utf-8")
    assert "@estimator" not in text and '"module:function"' in text
    src = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src" / "scoreaudit").rglob("*.py"))
    assert "def estimator(" not in src  # no decorator exists that the document could mean
