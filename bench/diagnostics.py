"""Checking and rendering many diagnostics stays linear and fast: 20,000 duplicate declarations.

    PYTHONPATH=src python bench/diagnostics.py [--n 20000]

Prints, for n/10 and n duplicate `scorer` declarations (`check` + rendering every diagnostic, as
`scoreaudit check` does), the best wall and CPU seconds and their ratio (linear is about 10,
quadratic about 100), and the parse alone with the parser's quick lexer against Lark's own
contextual lexer in the same process (the baseline the quick lexer replaces).
The issue's target: 20,000 in under 2 s (wall); on a shared machine compare the CPU column.
"""

from __future__ import annotations

import argparse
import time

from scoreaudit import api
from scoreaudit.diagnostics import render_all
from scoreaudit.grammar import lark_cache
from scoreaudit.grammar import parser as P


def _source(n: int) -> str:
    return 'audit "x" { version: 1 seed: 1 }\n' + "scorer s = sharpness()\n" * n


def _best(fn, repeat: int) -> tuple[float, float]:
    wall = cpu = float("inf")
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - w), min(cpu, time.process_time() - c)
    return wall, cpu


def check_and_render(n: int, repeat: int) -> tuple[float, float, int]:
    source = _source(n)
    out = {}

    def run():
        checked = api.check("x.audit", source=source, tables=False)
        out["text"] = render_all(checked.diagnostics, source)
        out["n"] = len(checked.diagnostics)
    wall, cpu = _best(run, repeat)
    assert out["n"] == n - 1, out["n"]  # one E02xx duplicate per repeated declaration
    return wall, cpu, len(out["text"])


def parse_lexers(n: int, repeat: int) -> tuple[float, float]:
    """CPU seconds of the parse alone: quick lexer, Lark's contextual lexer."""
    source = _source(n)
    frontend = lark_cache.parser().parser
    quick = frontend.lexer
    try:
        q = _best(lambda: P.parse(source), repeat)[1]
        frontend.lexer = quick.inner
        lark = _best(lambda: P.parse(source), repeat)[1]
    finally:
        frontend.lexer = quick
    return q, lark


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20000)
    args = ap.parse_args(argv)
    check_and_render(200, 1)  # imports, grammar tables, plugin registry
    small = check_and_render(args.n // 10, 3)
    big = check_and_render(args.n, 2)
    print(f"{args.n // 10:,} duplicates: {small[0]:.3f} s wall, {small[1]:.3f} s CPU")
    print(f"{args.n:,} duplicates: {big[0]:.3f} s wall, {big[1]:.3f} s CPU ({big[2]:,} characters rendered)")
    print(f"ratio {big[0] / small[0]:.1f} wall, {big[1] / small[1]:.1f} CPU (linear ≈ 10, quadratic ≈ 100)")
    q, lark = parse_lexers(args.n, 2)
    print(f"parse alone, {args.n:,} declarations: quick lexer {q:.3f} s CPU, Lark's contextual lexer "
          f"{lark:.3f} s CPU (ratio {q / lark:.2f})")
    verdict = "PASS" if big[0] < 2.0 else ("PASS on CPU (machine loaded)" if big[1] < 2.0 else "FAIL")
    print(f"target: {args.n:,} duplicates checked and rendered in under 2 s: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
