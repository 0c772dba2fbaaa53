"""The forward passes `scoreaudit plan` predicts equal those the run makes (issue 26).

Shared by the tests that run the shipped examples: on an empty cache and data
without exclusions, each scorer's plan total (its score steps: images × the
non-identity doses of the operators it scores, plus the originals) must equal
the score steps the run computed (run.json counts.forward_passes, from run.log).
"""

from __future__ import annotations

import json
from pathlib import Path


def assert_forward_passes_match(spec: Path, out: Path) -> dict:
    from scoreaudit.api import compile as compile_spec

    _, plan = compile_spec(spec)  # what `scoreaudit plan` prints, counted from the manifests
    made = json.loads((Path(out) / "run.json").read_text())["counts"]["forward_passes"]
    planned = {s: n for s, n in plan.forward_passes.items()}
    assert all(n is not None for n in planned.values()), planned  # the manifests exist: every count is known
    assert made == planned, (made, planned)
    return made
