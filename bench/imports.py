"""Start-up cost of the light path: `check`, `fmt`, `describe` and the language server (target: < 1 s wall).

Each command runs in a fresh interpreter under `python -X importtime`, as a
user runs it; printed per command: the wall time (best of --reps), the
cumulative import time of the whole process, and which heavy modules it
imported (the dataframe and array stacks, the image libraries, torch). The
language server is timed from its start to the first diagnostics published
for examples/skin_tone.audit after `didOpen` (the editor's first wait).

None of these needs pandas, polars or pyarrow (they read tables and write
bundles); tests/cli/test_light_imports.py holds `check` and the server to that.
The machine may be shared: wall times vary with its load, so the load average
is printed beside them, and the CPU time (user + system) of the child process,
which is close to what the wall time is on an idle machine.

Run: `python bench/imports.py [--reps N]` (exit 1 when a best wall time is over the target).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 1.0
HEAVY = ("pandas", "polars", "pyarrow", "numpy", "scipy", "statsmodels", "PIL", "cv2", "skvideo", "torch",
         "matplotlib", "jinja2")
COMMANDS = {
    "check examples/skin_tone.audit": ["check", "examples/skin_tone.audit"],
    "fmt --check examples/skin_tone.audit": ["fmt", "--check", "examples/skin_tone.audit"],
    "describe lab_shift": ["describe", "lab_shift"],
}
_LINE = re.compile(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)")


def imported(stderr: str) -> tuple[float, list[str]]:
    """(cumulative import seconds of the top-level imports, the HEAVY packages imported) from -X importtime."""
    total, heavy = 0, set()
    for m in _LINE.finditer(stderr):
        cumulative, indent, name = int(m.group(1)), len(m.group(2)), m.group(3)
        if indent == 1:  # a top-level import: its cumulative time holds its children's
            total += cumulative
        if name.split(".")[0] in HEAVY:
            heavy.add(name.split(".")[0])
    return total / 1e6, sorted(heavy)


def _child_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_cli(args: list[str]) -> tuple[float, float, float, list[str], int]:
    t0, c0 = time.perf_counter(), _child_cpu()
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "scoreaudit", *args], cwd=ROOT,
                       capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    wall, cpu = time.perf_counter() - t0, _child_cpu() - c0
    total, heavy = imported(p.stderr)
    return wall, cpu, total, heavy, p.returncode


LSP_WORK = ("import sys; from pathlib import Path; from scoreaudit.lsp import server; "
            "from scoreaudit.lsp.features import Document; p = Path(sys.argv[1]); "
            "Document(p.read_text(encoding='utf-8'), str(p)).diagnostics()")


def run_lsp() -> tuple[float, float, float, list[str], int]:
    """Server start → first publishDiagnostics for skin_tone.audit (the editor's wait).

    The imports are those of the server module plus its diagnostics of the same file, in a fresh
    interpreter under -X importtime (the server's own stderr is a pipe the client does not drain)."""
    sys.path.insert(0, str(ROOT / "tests" / "lsp"))
    from lsp_client import Client

    spec = ROOT / "examples" / "skin_tone.audit"
    t0, c0 = time.perf_counter(), _child_cpu()
    client = Client(debounce_ms=0)
    client.open(spec.as_uri(), spec.read_text(encoding="utf-8"))
    client.diagnostics(spec.as_uri(), version=1, timeout=120)
    wall = time.perf_counter() - t0
    rc = client.close()
    cpu = _child_cpu() - c0  # the whole server process, shutdown included (an upper bound)
    p = subprocess.run([sys.executable, "-X", "importtime", "-c", LSP_WORK, str(spec)], cwd=ROOT,
                       capture_output=True, text=True)
    total, heavy = imported(p.stderr)
    return wall, cpu, total, heavy, rc or p.returncode


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    reps = ap.parse_args(argv).reps
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load average (1 min): {load:.1f} on {os.cpu_count()} CPUs; best of {reps}; target < {TARGET_S:g} s wall")
    over = False
    runs = {name: (lambda a=a: run_cli(a)) for name, a in COMMANDS.items()}
    runs["lsp: start to first diagnostics"] = run_lsp
    for name, fn in runs.items():
        results = [fn() for _ in range(reps)]
        best = min(results, key=lambda r: r[0])
        wall, cpu, total, heavy, rc = best
        over |= wall > TARGET_S
        print(f"{name:38s} wall {wall:6.3f} s  cpu {cpu:6.3f} s  imports {total:6.3f} s  rc {rc}  "
              f"heavy: {', '.join(heavy) or 'none'}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
