"""Precomputed tables at scale: read and validate a 1,000,000-row long score table, join it to a
100,000-row manifest, before (pandas, row by row) and after (polars), side by side in one run.

The stage timed is what `scoreaudit check` and `run` do with a table: `load_tables` (read +
validate every row), the manifest's ids, `TableSet.matched` (the join: ids not in the manifest,
undeclared names, doses snapped to the operator's) and `precomputed_scores` (the arm's rows in
the bundle's scores.parquet layout). Each implementation runs in its own process, so peak memory
(max RSS, which includes the interpreter and imports) is its own. "before" is the source tree
of `--before` (default: the commit before polars came into runtime/precomputed.py), exported
from git; "after" is this checkout.

    python bench/tables.py [--rows 1000000] [--images 100000] [--format parquet|csv] [--before REV]

Target: after at least 3x faster than before, with lower peak memory (exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DOSES = (-10.0, -5.0, 0.0, 5.0, 10.0)

SPEC = """audit "tables bench" { version: 1  seed: 1 }
SCORERS
arm real = images("data", manifest: "manifest.csv", kind: real, scores: "scores.FMT")
operator light = lab_shift(channel: L) doses -10..10 step 5
hypothesis H "x" { fidelity_index(light) > 0 on real for each scorer }
"""


def make_data(folder: Path, n_rows: int, n_images: int, fmt: str) -> None:
    """A manifest of `n_images` ids and a long table of `n_rows` score rows over them."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    per_image = len(DOSES) + 1  # original + every dose of `light`, per scorer
    n_scorers = max(1, -(-n_rows // (n_images * per_image)))
    rng = np.random.default_rng(1)
    ids = np.array([f"img_{i:07d}" for i in range(n_images)])
    ops = np.array(["original"] + ["light"] * len(DOSES))
    doses = np.array([0.0, *DOSES])
    cells = n_images * per_image * n_scorers
    k = np.arange(cells)[:n_rows]
    scorer = np.array([f"s{j}" for j in range(n_scorers)])[k // (n_images * per_image)]
    within = k % (n_images * per_image)
    table = pa.table({"id": ids[within // per_image], "operator": ops[within % per_image],
                      "dose": doses[within % per_image], "scorer": scorer,
                      "score": rng.normal(size=len(k))})
    (folder / "data").mkdir(parents=True, exist_ok=True)
    if fmt == "parquet":
        pq.write_table(table, folder / "scores.parquet")
    else:
        pcsv.write_csv(table, folder / "scores.csv")
    pcsv.write_csv(pa.table({"id": ids, "file": np.char.add(ids, ".png")}), folder / "manifest.csv")
    scorers = "\n".join(f"scorer s{j} = precomputed()" for j in range(n_scorers))
    (folder / "bench.audit").write_text(SPEC.replace("SCORERS", scorers).replace("FMT", fmt), encoding="utf-8")


def child(folder: Path) -> None:
    """One implementation's stage, timed; prints a JSON line (seconds, peak RSS, rows)."""
    from scoreaudit.compiler.check import check
    from scoreaudit.grammar.parser import parse
    from scoreaudit.registry import load_plugins
    from scoreaudit.runtime.precomputed import load_tables, precomputed_scores
    from scoreaudit.runtime.tablefile import read_records

    load_plugins()
    text = (folder / "bench.audit").read_text(encoding="utf-8")
    module, diags = parse(text, "bench.audit")
    ir, diags = check(module, text, "bench.audit")
    assert ir is not None, [d.message for d in diags]
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), time.process_time()
    tables = load_tables(ir, folder)
    ids = [str(r["id"]) for _, r in read_records(folder / "manifest.csv").rows]
    tables = tables.matched(ir, {"real": ids})
    out = precomputed_scores(ir, "real", ids, tables)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert tables.ok and not tables.exclusions, (tables.diagnostics[:3], tables.exclusions[:3])
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "start_mib": rss0 / 1024, "rows_out": int(len(out)),
                      "score_sum": float(out["score"].sum())}))


def before_rev() -> str:
    """The last commit before polars came into runtime/precomputed.py (or HEAD when it never did)."""
    out = subprocess.run(["git", "log", "--format=%H", "-S", "import polars", "--",
                          "src/scoreaudit/runtime/precomputed.py"], cwd=REPO, capture_output=True, text=True)
    first = out.stdout.split()[-1] if out.stdout.split() else None
    return f"{first}^" if first else "HEAD"


def export(rev: str, into: Path) -> Path:
    """`src/` of a git revision, exported (not checked out) into `into`."""
    into.mkdir(parents=True, exist_ok=True)
    arch = into / "src.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(arch), rev, "src"], cwd=REPO, check=True)
    with tarfile.open(arch) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def run(src: Path, folder: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "XDG_CACHE_HOME": str(folder / "xdg")}
    proc = subprocess.run([sys.executable, __file__, "--child", str(folder)], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{src}: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--images", type=int, default=100_000)
    ap.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    ap.add_argument("--before", default=None, help="git revision of the pandas implementation")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    rev = args.before or before_rev()
    with tempfile.TemporaryDirectory(prefix="sa-bench-tables-") as tmp:
        tmp = Path(tmp)
        make_data(tmp / "audit", args.rows, args.images, args.format)
        old_src = export(rev, tmp / "before")
        results = {"before": run(old_src, tmp / "audit"), "after": run(REPO / "src", tmp / "audit")}
    b, a = results["before"], results["after"]
    print(f"{args.rows:,} table rows ({args.format}), {args.images:,}-row manifest; before = {rev}")
    print(f"{'':8}{'seconds':>10}{'CPU s':>10}{'peak MiB':>10}{'rows out':>12}   (CPU: all threads)")
    for name, r in results.items():
        print(f"{name:8}{r['seconds']:>10.2f}{r['cpu_seconds']:>10.2f}{r['peak_mib']:>10.0f}{r['rows_out']:>12,}")
    speed = b["seconds"] / a["seconds"]
    print(f"after is {speed:.1f}x faster, peak memory {a['peak_mib'] / b['peak_mib']:.2f}x of before "
          "(target: >= 3x faster, lower peak memory)")
    same = b["rows_out"] == a["rows_out"] and abs(b["score_sum"] - a["score_sum"]) < 1e-6 * max(1, abs(b["score_sum"]))
    if not same:
        print(f"RESULTS DIFFER: {b} vs {a}")
    return 0 if same and speed >= 3 and a["peak_mib"] < b["peak_mib"] else 1


if __name__ == "__main__":
    sys.exit(main())
