"""Draw the VS Code extension's icon: editors/vscode/icon.png, 128x128 (the Marketplace's size).

A rounded square with three score bars of different heights and a lens over
the tallest: scores under audit. Drawn at 4x and downsampled (smooth edges);
the output is deterministic, so tests/editors/test_vscode_package.py can redraw
it and compare bytes with the committed file.

Run: `python scripts/make_vscode_icon.py [OUT.png]`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image, ImageDraw

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "editors" / "vscode" / "icon.png"
SIZE = 128
SCALE = 4

BACKGROUND = (28, 52, 84, 255)
BARS = ((94, 184, 160, 255), (240, 196, 92, 255), (232, 114, 92, 255))
LENS = (245, 245, 240, 255)


def draw() -> Image.Image:
    s = SIZE * SCALE
    img = Image.new("RGBA", (s, s), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    d.rounded_rectangle((0, 0, s - 1, s - 1), radius=26 * SCALE, fill=BACKGROUND)
    base = 100 * SCALE
    for i, (height, colour) in enumerate(zip((34, 58, 46), BARS)):
        x0 = (22 + i * 28) * SCALE
        d.rounded_rectangle((x0, base - height * SCALE, x0 + 20 * SCALE, base), radius=4 * SCALE, fill=colour)
    d.rounded_rectangle((16 * SCALE, base + 4 * SCALE, 112 * SCALE, base + 9 * SCALE), radius=2 * SCALE, fill=LENS)
    cx, cy, r = 78 * SCALE, 40 * SCALE, 19 * SCALE  # the lens, over the tallest bar
    d.ellipse((cx - r, cy - r, cx + r, cy + r), outline=LENS, width=6 * SCALE)
    d.line((cx + 13 * SCALE, cy + 13 * SCALE, cx + 30 * SCALE, cy + 30 * SCALE), fill=LENS, width=8 * SCALE)
    return img.resize((SIZE, SIZE), Image.LANCZOS)


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else OUT
    draw().save(out, format="PNG", optimize=True)
    print(f"wrote {out} ({SIZE}x{SIZE})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
