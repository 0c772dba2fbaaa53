"""Peak memory of a whole `scoreaudit run` as the images grow: does anything accumulate?

Data: the demo audit (examples/demo.audit, bootstrap 200) on generated demo data (scripts/make_demo_data.py)
at each size of --sizes, each in its own folder with its own empty cache. Each run is the whole command
(`scoreaudit run SPEC --out OUT --device cpu`, a fresh process: pipeline, statistics, HTML and PDF report,
manifest); its peak RSS is the child's own ru_maxrss (os.wait4), not the bench's. A run that writes a PDF
starts WeasyPrint in a process of its own (reports/pdf_process.py); its peak is sampled from /proc (VmHWM)
and printed beside the run's: the two coexist. The streamed image stage
is flat (bench/operators.py); what a run keeps per image (rows, the run log, memos) is small, so the peak of
the largest run should stay within ~10% of the smallest's. The ratio largest / smallest is printed.

    python bench/run_memory.py [--sizes 200,2000] [--src DIR] [--keep]

`--src DIR`: the tool's src/ to run (e.g. an older tree from `git archive`), for a before/after comparison.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _demo_builder():
    spec = importlib.util.spec_from_file_location("make_demo_data", ROOT / "scripts" / "make_demo_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build


def _project(folder: Path, n: int) -> Path:
    n_real = max(1, n // 5)
    _demo_builder()(folder / "data" / "demo", n_real=n_real, n_prompts=max(1, (n - n_real) // 3), per_prompt=3)
    source = (ROOT / "examples" / "demo.audit").read_text(encoding="utf-8").replace("bootstrap: 2000", "bootstrap: 200")
    spec = folder / "demo.audit"
    spec.write_text(source, encoding="utf-8")
    return spec


def peak_run(spec: Path, src: Path | None) -> tuple[float, float, float]:
    """(wall seconds, peak RSS in MiB, the PDF process's peak in MiB) of one `scoreaudit run` in a fresh process."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    cmd = [str(Path(sys.executable).with_name("scoreaudit")), "run", str(spec), "--out", str(spec.parent / "out"),
           "--device", "cpu", "--quiet"]
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    child_peak = 0.0
    while True:  # the PDF process (reports/pdf_process.py) lives beside the run: its own peak, sampled
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        child_peak = max(child_peak, _children_peak(proc.pid))
        time.sleep(0.05)
    took = time.perf_counter() - t
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 4):  # 4: claims refuted, still a finished run
        raise SystemExit(f"scoreaudit run exited {proc.returncode}: {err[-2000:]}")
    # Linux: a waited process's ru_maxrss is the larger of its own peak and its reaped children's, so it is
    # the run's own wherever that exceeds the PDF process's sampled peak
    return took, usage.ru_maxrss / 1024, child_peak  # KiB on Linux


def _children_peak(pid: int) -> float:
    """The peak RSS (VmHWM, MiB) of `pid`'s PDF process; 0 where there is none or /proc cannot tell.

    Only that child counts: another one caught between its fork and its exec (git, for provenance)
    reports the parent's pages as its own."""
    peak = 0.0
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return peak
    for kid in kids:
        try:
            if b"scoreaudit.reports.pdf_process" not in Path(f"/proc/{kid}/cmdline").read_bytes():
                continue
            for line in Path(f"/proc/{kid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]) / 1024)
        except (OSError, ValueError):
            continue
    return peak


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="200,2000", help="image counts (default 200,2000)")
    ap.add_argument("--src", type=Path, default=None, help="the tool's src/ to run (default: this checkout's)")
    ap.add_argument("--keep", action="store_true", help="keep the generated projects and print where")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    work = Path(tempfile.mkdtemp(prefix="scoreaudit-runmem-"))
    src = work / "src"  # a copy outside the checkout: another commit mid-bench does not change the tool
    shutil.copytree(args.src or ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
    try:
        rows = []
        for n in sizes:
            spec = _project(work / f"n{n}", n)
            n_images = sum(1 for _ in (spec.parent / "data" / "demo").glob("*/*.png"))
            load = f"{os.getloadavg()[0]:.1f}"
            took, peak, pdf_peak = peak_run(spec, src)
            rows.append((n_images, took, peak, load))
            print(f"{n_images:6d} images: {took:6.1f} s, peak RSS {peak:6.1f} MiB; the PDF process beside it "
                  f"{pdf_peak:6.1f} MiB (sampled; load {load})", flush=True)
        base = rows[0][2]
        print(f"\n{'images':>8}{'peak MiB':>10}{'/ smallest':>12}")
        for n_images, _, peak, _ in rows:
            print(f"{n_images:8d}{peak:10.1f}{peak / base:11.2f}x")
        growth = rows[-1][2] / base - 1
        print(f"peak growth at {rows[-1][0] / rows[0][0]:.0f}x the images: {growth:+.0%} (target within +10%): "
              f"{'met' if growth <= 0.10 else 'NOT met'}")
        return 0
    finally:
        if args.keep:
            print(f"kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
