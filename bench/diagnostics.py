"""Checking and rendering many diagnostics stays linear: 20,000 duplicate declarations, against 2,000.

    PYTHONPATH=src python bench/diagnostics.py

Prints the seconds for n = 2,000 and 20,000 duplicate `scorer` declarations
(check + render) and their ratio: linear is about 10, quadratic about 100.
The issue's target: 20,000 in under 2 s on a laptop-class core.
"""

from __future__ import annotations

import time

from scoreaudit import api
from scoreaudit.diagnostics import render_all


def seconds(n: int) -> tuple[float, int]:
    source = 'audit "x" { version: 1 seed: 1 }\n' + "scorer s = sharpness()\n" * n
    t = time.perf_counter()
    checked = api.check("x.audit", source=source, tables=False)
    text = render_all(checked.diagnostics, source)
    return time.perf_counter() - t, len(text)


def main() -> None:
    seconds(200)
    small, _ = min(seconds(2000) for _ in range(3))
    big, size = seconds(20000)
    print(f"2,000 duplicates: {small:.3f} s; 20,000 duplicates: {big:.3f} s ({size:,} characters); "
          f"ratio {big / small:.1f} (linear ≈ 10)")


if __name__ == "__main__":
    main()
