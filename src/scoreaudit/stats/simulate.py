"""Design diagnosis (`scoreaudit simulate`): planted scorers on the audit's own structure.

Every scorer is replaced by a planted scorer whose truth is the scorer's own
`planted(...)` arguments (a scorer of another kind: the null truth, no effect,
noise 1) with `--truth` laid over them key by key (JSON: {scorer or "*":
{fidelity, asymmetry, noise, placebo, slope_by, slope, ..., arms: {arm: {...}},
strata: {"col=level": {...}}}}; every key checked, stats/truthfile.py). The arms keep their structure: cluster count, images per
cluster (rounded mean) and stratum levels from the manifests when readable,
else DEFAULT_SHAPES. Each replication draws new tables (stats.planted), a new
bootstrap seed, and runs the same cell statistics and outcome rules as `run`.

Per cell it reports: the true value (every statistic's registry entry names
its truth function, stats/truth.py; None where the planted model implies
none), whether the hypothesis is true, mean estimate and bias, coverage of the
truth by the (1 − alpha) interval, and the shares supported/refuted — power
and false-refutation rate when the hypothesis is true, false-support rate
when it is false. For `transfers` the reading is the ratio ρ.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from scoreaudit.compiler.ir import AuditIR, CellIR
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import evaluate_cells
from scoreaudit.stats.planted import ArmShape, MeasureModel, planted_tables
from scoreaudit.stats.truth import TruthContext, true_value

DEFAULT_SHAPES = {"real": (200, 1), "synthetic": (50, 4)}  # (clusters, images per cluster) by arm kind
DEFAULT_STRATA = ("s1", "s2", "s3")
DEFAULT_PAIRS = 200  # pairs of a pairs arm whose manifest is not readable

def load_truth(ir: AuditIR, truth: str | Path | Mapping | None) -> dict:
    """The truths to plant: the spec's `planted(...)` parameters with `truth` (a file or a mapping, checked:
    DiagnosticError on an unknown key or a bad value) laid over them key by key (stats/truthfile.py)."""
    from scoreaudit.diagnostics import DiagnosticError
    from scoreaudit.stats.truthfile import check_truth, merged_truth, read_truth

    if isinstance(truth, (str, Path)):
        truth = read_truth(ir, truth)
    elif isinstance(truth, Mapping):
        diags = check_truth(ir, truth)
        if diags:
            raise DiagnosticError(diags)
    return merged_truth(ir, truth)


def _manifest_rows(arm, spec_path: Path | None) -> int | None:
    man = arm.call.params.get("manifest") or (arm.call.params.get("path") if arm.source == "pairs" else None)
    if not man or spec_path is None:
        return None
    from scoreaudit.datafiles import manifest_rows
    from scoreaudit.safeio import inside

    p = Path(spec_path).parent / man
    try:
        if not inside(p, Path(spec_path).resolve().parent) or not p.is_file():
            return None
        return manifest_rows(p)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def arm_shapes(ir: AuditIR, spec_path: Path | None) -> dict[str, ArmShape]:
    """Cluster count, images per cluster and strata of every images arm (manifests when readable)."""
    shapes = {}
    for name, arm in sorted(ir.arms.items()):
        if arm.source == "pairs":  # one cluster per pair (two images), the pairs manifest's row count
            shapes[name] = ArmShape(_manifest_rows(arm, spec_path) or DEFAULT_PAIRS, 2)
            continue
        if arm.source != "images":
            continue
        n_c, per = DEFAULT_SHAPES[arm.kind]
        strata = {s: DEFAULT_STRATA for s in arm.strata}
        crossed: tuple[str, ...] = ()
        man = arm.call.params.get("manifest")
        if man and spec_path is not None:
            import io

            from scoreaudit.safeio import inside, read_regular

            p = Path(spec_path).parent / man
            try:
                if not inside(p, Path(spec_path).resolve().parent):  # the one containment check
                    raise ValueError("manifest outside the project folder")
                buf = io.BytesIO(read_regular(p, root=Path(spec_path).resolve().parent))  # never a FIFO, never out
                df = pd.read_parquet(buf) if p.suffix == ".parquet" else pd.read_csv(buf)
                col = arm.cluster
                n_c = int(df[col].nunique()) if col and col in df else len(df)
                per = max(1, round(len(df) / max(n_c, 1)))
                strata = {s: tuple(sorted(df[s].dropna().astype(str).unique())) or DEFAULT_STRATA
                          for s in arm.strata if s in df} | {s: DEFAULT_STRATA for s in arm.strata if s not in df}
                if col and col in df:  # strata crossed with clusters stay crossed
                    crossed = tuple(s for s in arm.strata if s in df and len(strata[s]) > 1
                                    and (df.groupby(col)[s].nunique() == len(strata[s])).all())
                    per = max(per, *(len(strata[s]) for s in crossed)) if crossed else per
            except (OSError, ValueError, KeyError):
                pass
        shapes[name] = ArmShape(n_c, per, strata, crossed)
    return shapes


def _hyp_true(cell: CellIR, truth: float | None) -> bool | None:
    if truth is None or not math.isfinite(truth):
        return None
    t = cell.test
    if t.kind == "claim":
        p = cell.statistic.params
        if cell.statistic.name == "transfers":
            k = float(p.get("margin") or 2.0)
            return 1 / k < truth < k
        if cell.statistic.name == "homogeneous":
            m = p.get("margin")
            return truth < m if m else truth == 0.0
        return None
    if t.kind == "greater":
        return truth > t.threshold
    if t.kind == "less":
        return truth < t.threshold
    if t.kind == "equivalence":
        return t.low < truth < t.high
    return None


def run_simulation(ir: AuditIR, reps: int, truth: Mapping, shapes: Mapping[str, ArmShape],
                   n_boot: int | None = None, model: MeasureModel = MeasureModel(), progress: bool = False,
                   seed: int | None = None, probe_shapes: Mapping[str, Any] | None = None) -> list[dict]:
    """Rows per cell: truth, hypothesis truth, bias, coverage, power/false-positive rate.

    `probe_shapes` (stats.probes.probe_shapes): each probe's prompts × seeds to plant; None plants
    each probe's declared seeds over stats.probes.DEFAULT_PROMPTS placeholder prompts.
    """
    base_seed = ir.settings.seed if seed is None else seed
    cells = [c for c in ir.cells() if all(a in shapes for a in (c.arms or (c.arm,)) if a)]
    est_rows: dict[str, list[tuple]] = {c.id: [] for c in cells}
    from scoreaudit.plainprogress import stage_bar

    bar = stage_bar(progress, "simulate", reps)  # plain `progress:` lines off a terminal
    for r in range(reps):
        rseed = int(np.random.SeedSequence([int(base_seed) % (2**63), 0x51, r]).generate_state(1)[0])
        tables = planted_tables(ir, shapes, truth, seed=rseed, model=model, sort=False) if shapes else {}
        if ir.probes:  # optimisation probes: planted first/last values (stats/probes.py)
            from scoreaudit.stats.probes import planted_probe_prompts, planted_probe_table

            tables["probe"] = planted_probe_table(ir, truth, seed=rseed, shapes=probe_shapes)
            tables["probe_prompts"] = planted_probe_prompts(ir, shapes=probe_shapes)
        ir_r = ir.model_copy(update={"settings": ir.settings.model_copy(update={"seed": rseed})})
        ctx = StatContext(ir_r, tables, n_boot=n_boot)
        for c in evaluate_cells(ctx, cells):
            lo, hi = c["_est"].interval(1 - ir.settings.alpha)
            est_rows[c["id"]].append((c["estimate"], lo, hi, c["outcome"]))
        if bar is not None:
            bar.advance(1)
    if bar is not None:
        bar.close()
    out = []
    for cell in cells:
        levels = {col: lv for sh in shapes.values() for col, lv in sh.strata.items()}
        tc = TruthContext({**truth, "_levels": levels}, cell.scorer, cell.arm, model,
                          raw=ir.settings.scale == "raw")
        tv = true_value(ir, cell.statistic, tc)
        ht = _hyp_true(cell, tv)
        rows = est_rows[cell.id]
        est = np.array([x[0] for x in rows], float)
        lo = np.array([x[1] for x in rows], float)
        hi = np.array([x[2] for x in rows], float)
        outc = [x[3] for x in rows]
        share = {o: outc.count(o) / len(outc) for o in ("supported", "refuted", "inconclusive")}
        fin = np.isfinite(lo) & np.isfinite(hi)
        cover = float(np.mean((lo[fin] <= tv) & (tv <= hi[fin]))) if tv is not None and fin.any() else None
        ok = np.isfinite(est)
        out.append({"cell": cell.id, "statistic": cell.statistic.name, "claim": cell.test.text, "reps": len(rows),
                    "truth": tv, "hypothesis_true": ht,
                    "mean_estimate": float(est[ok].mean()) if ok.any() else None,
                    "bias": float(est[ok].mean() - tv) if tv is not None and ok.any() else None,
                    "coverage": cover, "coverage_n": int(fin.sum()) if cover is not None else 0,
                    "ci_level": 1 - ir.settings.alpha,
                    "supported": share["supported"], "refuted": share["refuted"],
                    "inconclusive": share["inconclusive"],
                    "power": share["supported"] if ht is True else None,
                    "false_positive_rate": share["supported"] if ht is False else None,
                    "false_refutation_rate": share["refuted"] if ht is True else None})
    return out


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def render_table(rows: list[dict]) -> str:
    cols = ("cell", "truth", "hypothesis_true", "mean_estimate", "bias", "coverage", "power",
            "false_positive_rate", "false_refutation_rate", "supported", "refuted")
    heads = ("cell", "truth", "H true", "mean est", "bias", "coverage", "power", "false supp.", "false refut.",
             "supported", "refuted")
    data = [[_fmt(r[c]) for c in cols] for r in rows]
    widths = [max(len(h), *(len(d[k]) for d in data)) if data else len(h) for k, h in enumerate(heads)]
    line = "  ".join(h.ljust(w) for h, w in zip(heads, widths))
    out = [line, "-" * len(line)]
    out += ["  ".join(v.ljust(w) for v, w in zip(d, widths)) for d in data]
    return "\n".join(out)


def _check_bootstrap(ir: AuditIR, shapes: Mapping[str, ArmShape], n_boot: int | None) -> None:
    """`--bootstrap N` against what can be computed, as `check` does for the spec's own (compiler/limits.py):
    alpha at least 1/(N + 1), and N × clusters count matrices within this machine's memory."""
    from scoreaudit.compiler.limits import bootstrap_bytes, memory_limit, size_text
    from scoreaudit.diagnostics import Diagnostic, DiagnosticError

    if n_boot is None:
        return
    alpha = float(ir.settings.alpha)
    clusters = [s.n_clusters for s in shapes.values()]
    n_cells = len(list(ir.cells()))
    need, limit = bootstrap_bytes(n_boot, clusters, n_cells), memory_limit()
    problems = []
    if alpha < 1.0 / (n_boot + 1):
        problems.append((f"`--bootstrap {n_boot}` cannot resolve the spec's alpha {alpha:g}: {n_boot} resamples "
                         f"estimate no tail probability below 1/(N + 1) = {1 / (n_boot + 1):.3g}",
                         f"give --bootstrap {math.ceil(1 / alpha) - 1} or more"))
    if limit is not None and need > limit:
        most = limit // bootstrap_bytes(1, clusters, n_cells)
        problems.append((f"`--bootstrap {n_boot}` needs about {size_text(need)} of memory for arms of "
                         f"{', '.join(map(str, clusters))} clusters and {n_cells} cell(s), more than this machine's "
                         f"{size_text(limit)}", f"give --bootstrap {min(most, 2000)} (at most {most} fit here)"))
    if problems:
        raise DiagnosticError([Diagnostic("E0251", "error", m, None, h, "simulate --bootstrap")
                               for m, h in problems])


def simulate(ir: AuditIR, spec_path: Path | None, reps: int, truth=None, out=None, progress: bool = True,
             n_boot: int | None = None) -> str:
    """Run the design diagnosis; return a printable table (and write CSV + JSON when `out` is given)."""
    tr = load_truth(ir, truth)
    shapes = arm_shapes(ir, Path(spec_path) if spec_path else None)
    _check_bootstrap(ir, shapes, n_boot)
    pshapes = None
    if ir.probes:  # each probe's own prompts × seeds (stats/probes.py)
        from scoreaudit.stats.probes import probe_shapes

        pshapes = probe_shapes(ir, Path(spec_path) if spec_path else None)
    rows = run_simulation(ir, reps, tr, shapes, n_boot=n_boot, progress=progress, probe_shapes=pshapes)
    table = render_table(rows)
    if out:
        o = Path(out)
        base = o.with_suffix("") if o.suffix in (".csv", ".json") else o / "simulation"
        base.parent.mkdir(parents=True, exist_ok=True)
        from scoreaudit.stats.provenance import clean

        meta = {"reps": reps, "truth": tr, "shapes": {k: {"n_clusters": v.n_clusters, "per_cluster": v.per_cluster,
                                                          "strata": {s: list(lv) for s, lv in v.strata.items()},
                                                          "crossed": list(v.crossed)}
                                                      for k, v in shapes.items()},
                "probes": {k: {"prompts": len(v.prompts), "seeds": list(v.seeds), "declared": v.declared}
                           for k, v in (pshapes or {}).items()}, "cells": rows}
        base.with_suffix(".json").write_text(json.dumps(clean(meta), indent=2), encoding="utf-8")
        with base.with_suffix(".csv").open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["cell"])
            w.writeheader()
            w.writerows(rows)
    header = (f"design diagnosis: {reps} replications, arms "
              + ", ".join(f"{k} ({v.n_clusters} clusters × {v.per_cluster})" for k, v in shapes.items()))
    if pshapes:
        header += ", probes " + ", ".join(
            f"{k} ({len(v.prompts)} prompts{'' if v.declared else ' (placeholders: prompts unreadable)'} × "
            f"{len(v.seeds)} seeds)" for k, v in pshapes.items())
    return header + "\n" + table
