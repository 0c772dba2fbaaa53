"""Tables at scale: read and validate a 100,000-row manifest and a 1,000,000-row long score
table and join them, before (pandas, row by row) and after (polars), side by side in one run.

Two stages, timed apart, in the order `scoreaudit run` does them:
- manifest: `load_manifest` of a 100,000-row CSV manifest whose files exist (empty files; no
  header probe, as `scoreaudit check` reads it): columns, ids, paths, containment, files;
- tables: `load_tables` (read + validate every row of the long table), `TableSet.matched` (the
  join with the manifest's ids: ids not in the manifest, undeclared names, doses snapped to the
  operator's) and `precomputed_scores` (the arm's rows in the bundle's scores.parquet layout).
Each implementation runs in its own process, so peak memory (max RSS, which includes the
interpreter and imports) is its own. "before" is the source tree of `--before` (default: the
commit before polars came into runtime/precomputed.py; its manifests are read row by row too),
exported from git; "after" is this checkout. On a shared machine, absolute seconds move with
the load; the ratios (before / after, measured in the same run) are the figures to compare.

    python bench/tables.py [--size full|medium|small] [--rows N] [--images N]
                           [--format parquet|csv] [--before REV] [--only after]

Sizes: full = 1,000,000 rows / 100,000 images (the issue's figure), medium = 100,000 / 10,000,
small = 10,000 / 1,000. Target: after at least 3x faster than before, with lower peak memory
(exit 1 otherwise).

`--bundle` measures the other table stage, writing the bundle's runtime tables (scores, measures,
regions, images, exclusions) from the rows a run adds (`Tables.add_*`, as the executor calls them,
then `write_tables`), against a direct polars build of the same tables in the same process
(rows appended to plain column lists, `pl.DataFrame`, one sort by the key columns,
`write_parquet` with zstd): interleaved rounds, best time each, and the tables read back equal.
Target: scoreaudit ≥ 1x the direct polars build (issue 33).

    python bench/tables.py --bundle [--images 2000] [--repeat 3]
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
SIZES = {"full": (1_000_000, 100_000), "medium": (100_000, 10_000), "small": (10_000, 1_000)}

SPEC = """audit "tables bench" { version: 1  seed: 1 }
SCORERS
arm real = images("data", manifest: "manifest.csv", kind: real, scores: "scores.FMT", strata: group)
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
    for i in ids:  # the manifest's files exist (empty: the manifest stage does not read headers)
        (folder / "data" / f"{i}.png").touch()
    if fmt == "parquet":
        pq.write_table(table, folder / "scores.parquet")
    else:
        pcsv.write_csv(table, folder / "scores.csv")
    pcsv.write_csv(pa.table({"id": ids, "path": np.char.add(ids, ".png"),
                             "group": np.char.add("g", (np.arange(n_images) % 97).astype(str))}),
                   folder / "manifest.csv")
    scorers = "\n".join(f"scorer s{j} = precomputed()" for j in range(n_scorers))
    (folder / "bench.audit").write_text(SPEC.replace("SCORERS", scorers).replace("FMT", fmt), encoding="utf-8")


def child(folder: Path) -> None:
    """One implementation's stage, timed; prints a JSON line (seconds, peak RSS, rows)."""
    from scoreaudit.compiler.check import check
    from scoreaudit.grammar.parser import parse
    from scoreaudit.registry import load_plugins
    from scoreaudit.runtime.manifests import load_manifest
    from scoreaudit.runtime.precomputed import load_tables, precomputed_scores

    load_plugins()
    text = (folder / "bench.audit").read_text(encoding="utf-8")
    module, diags = parse(text, "bench.audit")
    ir, diags = check(module, text, "bench.audit")
    assert ir is not None, [d.message for d in diags]
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), time.process_time()
    manifest = load_manifest(ir.arms["real"], folder, columns=["group"], root=folder, probe=False)
    ids = [r.image_id for r in manifest.records]
    t1, c1 = time.perf_counter(), time.process_time()
    assert manifest.ok and not manifest.exclusions and len(ids) == manifest_rows(folder), manifest.diagnostics[:3]
    tables = load_tables(ir, folder)
    tables = tables.matched(ir, {"real": ids})
    out = precomputed_scores(ir, "real", ids, tables)
    t2, c2 = time.perf_counter(), time.process_time()
    assert tables.ok and not tables.exclusions, (tables.diagnostics[:3], tables.exclusions[:3])
    print(json.dumps({"manifest_s": t1 - t0, "manifest_cpu": c1 - c0, "tables_s": t2 - t1, "tables_cpu": c2 - c1,
                      "seconds": t2 - t0, "cpu_seconds": c2 - c0,
                      "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "start_mib": rss0 / 1024, "rows_out": int(len(out)), "images": len(ids),
                      "records_sum": sum(r.row for r in manifest.records),
                      "score_sum": float(out["score"].sum())}))


def manifest_rows(folder: Path) -> int:
    with (folder / "manifest.csv").open(encoding="utf-8") as fh:
        return sum(1 for _ in fh) - 1


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
    env = {**os.environ, "PYTHONPATH": str(src), "XDG_CACHE_HOME": str(folder / "xdg"), "POLARS_MAX_THREADS": "2"}
    proc = subprocess.run([sys.executable, __file__, "--child", str(folder)], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{src}: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bundle_rows(n_images: int) -> tuple[list[tuple], list[tuple], list[tuple], list[dict]]:
    """The rows a run adds at `n_images`: 4 scorers and 2 measures on the original and 4 operators × 7
    doses; 3 regions per image; one manifest column. Arrival order is per image, as a run's."""
    import random

    rnd = random.Random(1)
    ops = [("original", 0.0)] + [(f"op{k}", float(d)) for k in range(4) for d in range(-15, 20, 5)]
    scores, measures, regions, images = [], [], [], []
    for i in range(n_images):
        iid = f"img_{i:06d}"
        images.append({"arm": "real", "image_id": iid, "row": i, "cluster": iid, "content_hash": f"{i:064x}",
                       "width": 512, "height": 512, "manifest": {"group": f"g{i % 7}"}})
        for op, d in ops:
            for s in ("laion", "pick", "ir", "hps"):
                scores.append(("real", iid, op, d, s, rnd.random()))
            for m, role in (("ita", "measure"), ("clipping", "covariate")):
                measures.append(("real", iid, op, d, m, role, rnd.random()))
        for r in ("face", "skin", "rest"):
            regions.append(("real", iid, r, rnd.random()))
    return scores, measures, regions, images


def _scoreaudit_fill(rows):
    """The rows as a run adds them (`Tables.add_*`, one call per row, as the executor's steps do)."""
    from scoreaudit.runtime.tables import Tables

    scores, measures, regions, images = rows
    t = Tables()
    for r in images:
        t.add_image(**r)
    for r in scores:
        t.add_score(*r)
    for r in measures:
        t.add_measure(*r)
    for r in regions:
        t.add_region(*r)
    t.add_exclusion("real", "img_000003", 3, "score", "a reason")
    return t


def _scoreaudit_build(filled, out: Path) -> None:
    from scoreaudit.runtime.tables import write_tables

    write_tables(filled, out)


def _polars_build(rows, out: Path) -> None:
    """The same five tables, straight from the row tuples: `pl.DataFrame(orient="row")`, one sort by the
    key columns, polars' own parquet writer (zstd 3)."""
    import polars as pl

    from scoreaudit.bundletables import SCHEMAS
    from scoreaudit.runtime.tables import SORT_KEYS

    scores, measures, regions, images = rows
    out.mkdir(parents=True, exist_ok=True)
    for name, data in (("scores", scores), ("measures", measures), ("regions", regions)):
        schema = {f.name: (pl.Float64 if f.type == "double" else pl.Utf8) for f in SCHEMAS[name]}
        frame = pl.DataFrame(data, schema=schema, orient="row")
        frame.sort(list(SORT_KEYS[name]), nulls_last=False, maintain_order=True).write_parquet(
            out / f"{name}.parquet", compression="zstd", compression_level=3)
    img = pl.DataFrame([{k: v for k, v in r.items() if k != "manifest"} | r["manifest"] for r in images])
    img.sort(["arm", "image_id"]).write_parquet(out / "images.parquet", compression="zstd", compression_level=3)
    pl.DataFrame([{"arm": "real", "image_id": "img_000003", "row": 3, "stage": "score", "reason": "a reason"}]
                 ).write_parquet(out / "exclusions.parquet", compression="zstd", compression_level=3)


def bundle_bench(n_images: int, repeat: int) -> int:
    """The table stage (rows already added → five parquet files), scoreaudit's against polars' direct build;
    the per-row `add_*` calls of the run are timed apart (pipeline cost, not the table stage)."""
    import gc

    import polars as pl

    import scoreaudit.runtime.tables  # noqa: F401  (imports are not the table stage)

    rows = bundle_rows(n_images)
    n = sum(len(x) for x in rows)
    best = {"fill": float("inf"), "scoreaudit": float("inf"), "polars": float("inf")}
    with tempfile.TemporaryDirectory(prefix="sa-bench-bundle-") as tmp:
        for k in range(repeat):
            gc.collect()
            t0 = time.perf_counter()
            filled = _scoreaudit_fill(rows)
            best["fill"] = min(best["fill"], time.perf_counter() - t0)
            for name, fn, data in (("scoreaudit", _scoreaudit_build, filled), ("polars", _polars_build, rows)):
                gc.collect()
                t0 = time.perf_counter()
                fn(data, Path(tmp) / f"{name}{k}")
                best[name] = min(best[name], time.perf_counter() - t0)
            del filled
        same = all(pl.read_parquet(Path(tmp) / f"scoreaudit0/{t}.parquet").equals(
            pl.read_parquet(Path(tmp) / f"polars0/{t}.parquet")) for t in ("scores", "measures", "regions"))
    ratio = best["polars"] / best["scoreaudit"]
    print(f"load average {os.getloadavg()[0]:.2f}; {n_images:,} images, {n:,} rows; best of {repeat} interleaved")
    print(f"table stage: scoreaudit write_tables {best['scoreaudit']:.2f} s, direct polars build "
          f"{best['polars']:.2f} s: scoreaudit at {ratio:.2f}x polars (target >= 1x); long tables equal: {same}")
    print(f"(the run's per-row Tables.add_* calls, pipeline side: {best['fill']:.2f} s)")
    return 0 if same and ratio >= 1 else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bundle", action="store_true", help="the bundle's runtime tables against a direct polars build")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds for --bundle")
    ap.add_argument("--size", choices=tuple(SIZES), default="full")
    ap.add_argument("--rows", type=int, default=None, help="long-table rows (default: from --size)")
    ap.add_argument("--images", type=int, default=None, help="manifest rows (default: from --size)")
    ap.add_argument("--only", choices=("before", "after"), default=None,
                    help="run one implementation (no ratio; for profiling)")
    ap.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    ap.add_argument("--before", default=None, help="git revision of the pandas implementation")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child)
        return 0
    if args.bundle:
        return bundle_bench(args.images or 2000, args.repeat)
    rows = args.rows or SIZES[args.size][0]
    n_images = args.images or SIZES[args.size][1]
    rev = args.before or before_rev()
    with tempfile.TemporaryDirectory(prefix="sa-bench-tables-") as tmp:
        tmp = Path(tmp)
        t = time.perf_counter()
        make_data(tmp / "audit", rows, n_images, args.format)
        print(f"{rows:,} table rows ({args.format}), {n_images:,}-row manifest "
              f"({time.perf_counter() - t:.1f} s to write); before = {rev}", flush=True)
        results = {}
        if args.only != "after":
            results["before"] = run(export(rev, tmp / "before"), tmp / "audit")
        if args.only != "before":
            results["after"] = run(REPO / "src", tmp / "audit")
    print(f"{'':8}{'manifest s':>11}{'tables s':>10}{'total s':>9}{'CPU s':>8}{'peak MiB':>10}{'rows out':>11}"
          "   (CPU: all threads)")
    for name, r in results.items():
        print(f"{name:8}{r['manifest_s']:>11.2f}{r['tables_s']:>10.2f}{r['seconds']:>9.2f}{r['cpu_seconds']:>8.2f}"
              f"{r['peak_mib']:>10.0f}{r['rows_out']:>11,}")
    if len(results) < 2:
        return 0
    b, a = results["before"], results["after"]
    speed = b["seconds"] / a["seconds"]
    print(f"ratios before/after: manifest {b['manifest_s'] / a['manifest_s']:.1f}x, tables "
          f"{b['tables_s'] / a['tables_s']:.1f}x, total {speed:.1f}x faster; CPU {b['cpu_seconds'] / a['cpu_seconds']:.1f}x; "
          f"peak memory {a['peak_mib'] / b['peak_mib']:.2f}x of before (target: >= 3x faster, lower peak memory)")
    same = (b["rows_out"] == a["rows_out"] and b["images"] == a["images"] and b["records_sum"] == a["records_sum"]
            and abs(b["score_sum"] - a["score_sum"]) < 1e-6 * max(1, abs(b["score_sum"])))
    print(f"same results: {same}")
    if not same:
        print(f"RESULTS DIFFER: {b} vs {a}")
    return 0 if same and speed >= 3 and a["peak_mib"] < b["peak_mib"] else 1


if __name__ == "__main__":
    sys.exit(main())
