"""Register a Python callable as a scorer and run an audit with it, through `scoreaudit.api`.

    python examples/custom_scorer/run.py [--out DIR]

Writes a few generated images next to this file (data/tiles), runs
custom.audit and prints each cell's sentence and the report's path.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from PIL import Image

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import redness_plugin  # noqa: E402,F401  (registers the `redness` scorer)

from scoreaudit import api  # noqa: E402


def make_tiles(folder: Path, n: int = 12) -> None:
    """Warm-coloured textured tiles: a hue rotation either way makes them less red."""
    rng = np.random.default_rng(0)
    (folder / "tiles").mkdir(parents=True, exist_ok=True)
    rows = ["id,path"]
    for i in range(n):
        base = np.array([200 + rng.integers(-20, 20), 80 + rng.integers(-20, 20), 60 + rng.integers(-20, 20)])
        img = np.clip(base + rng.normal(0, 12, (48, 48, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(folder / "tiles" / f"t{i:02d}.png")
        rows.append(f"t{i:02d},t{i:02d}.png")
    (folder / "tiles.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(HERE / "out"), help="results folder")
    args = ap.parse_args(argv)
    make_tiles(HERE / "data")
    checked = api.check(HERE / "custom.audit")
    if not checked.ok:
        print("\n".join(d.message for d in checked.diagnostics), file=sys.stderr)
        return 1
    results = api.run(HERE / "custom.audit", out=args.out, progress=False)
    for cell in results["cells"]:
        print(cell["sentence"])
    print(f"HTML report: {Path(args.out) / 'report.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
