"""A tiny project on disk for the hardening tests: demo images with face masks and a spec that reads them."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import make_demo_data  # noqa: E402

MASK_SPEC = '''audit "m" { version: 1 seed: 1 bootstrap: 100 }
scorer sharp = sharpness()
arm real = images("data/real", manifest: "data/real.csv", kind: real)
region face = mask(column: face_mask)
operator light = lab_shift(channel: L, region: face) doses -5, 0, 5
hypothesis H1 "h" { curve(light) > 0 on real for each scorer }
'''


def project(d: Path, spec: str = MASK_SPEC, n_real: int = 4) -> Path:
    """data/real (n_real images, masks/), data/real.csv and m.audit under `d`; returns the spec path."""
    make_demo_data.build(d / "data", n_real=n_real, n_prompts=1)
    (d / "m.audit").write_text(spec, encoding="utf-8")
    return d / "m.audit"


def set_mask(d: Path, row: int, value: str) -> None:
    """Point row `row` (0-based) of data/real.csv's face_mask column at `value`."""
    path = d / "data" / "real.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    rows[row]["face_mask"] = value
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
