"""The hardening tests' tiny project (demo images with face masks), for the containment tests."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
from hardening_helpers import MASK_SPEC, project, set_mask  # noqa: E402,F401

PLAIN_SPEC = '''audit "c" { version: 1 seed: 1 bootstrap: 100 }
scorer sharp = sharpness()
arm real = images("data/real", manifest: "data/real.csv", kind: real)
operator blur = gaussian_blur() doses 0, 1, 2
hypothesis H1 "blur: lowers sharpness" { curve(blur) < 0 on real for each scorer }
'''


def tree(folder: Path) -> list[str]:
    """Every path under `folder` (what a write through a link would have added)."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
