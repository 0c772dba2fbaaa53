"""W0423 at check time: a claim whose discrete test cannot reach alpha on data that already exist.

`run` warns (stats/engine.py `level_warnings`) when a cell's smallest
attainable p (`smallest_p`: exact binomial t^m, sign-flip 2^-k or 1/K, a
bootstrap's 1/(B + 1)) exceeds the audit's alpha: such a claim can never be
supported. `check` reports the discrete tests' floors (exact binomial,
sign-flip), which the design fixes whatever the resamples; it evaluates with
CHECK_BOOT resamples to stay quick on large tables. When the numbers are already on disk — precomputed scores tables,
`precomputed(...)` manifest columns — `scoreaudit check` can say so before
anything runs. This module builds, for the cells whose every input is such
data, the same images and scores tables the executor would write (manifest
rows through the same loader, scores through the same readers), evaluates
those cells with the same estimators, and turns the run's warnings into
diagnostics located at the claim that made the cell: the same smallest p as
`run` gives.

A cell qualifies when every (arm, scorer) it reads is data-provided (a
scores table has rows for it, or the scorer reads manifest columns), every
measure it reads comes from a measures table, and it reads no probe. An arm
with image files is taken as listed: an image the run later fails to decode
would change the count (`run` then warns with the run's numbers). Anything
unreadable or undefined means "not known yet": no warning.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from scoreaudit.compiler.coverage import is_precomputed, is_table_only, provided
from scoreaudit.compiler.ir import AuditIR, CellIR, readings_of
from scoreaudit.compiler.reads import reads
from scoreaudit.diagnostics import Diagnostic

IMAGE_COLUMNS = ("arm", "image_id", "row", "cluster", "side", "pair_id")
# Bootstrap resamples for the check-time evaluation: only the discrete tests' floors are reported, and those
# depend on the design alone (t^m, 2^-k, 1/K), never on B; a bootstrap's own floor 1/(B + 1) is `run`'s to say.
CHECK_BOOT = 200


def _data_provided(ir: AuditIR, cell: CellIR, given: dict[str, set[tuple[str, str]]]) -> bool:
    """Every input of the cell is on disk: scores from tables or manifest columns, measures from tables."""
    if any(r.arm is None for r in readings_of(cell.statistic)):  # a probe reading: computed by the run
        return False
    parts = cell.parts()
    if not parts:
        return False
    for arm, scorer, stat in parts:
        a = ir.arms.get(arm)
        if a is None or a.source not in ("images", "pairs") or scorer not in ir.scorers:
            return False
        from_column = is_precomputed(ir, scorer) and not is_table_only(ir, scorer)
        if (arm, scorer) not in given["scores"] and not from_column:
            return False
        r = reads(stat, ir)
        if any((arm, m) not in given["measures"] for _, m in r.measures):
            return False
    return True


def check_cells(ir: AuditIR, pre: Any) -> list[CellIR]:
    """The cells `check` can evaluate from data on disk (`pre`: the matched TableSet, or None)."""
    given = provided(pre)
    return [c for c in ir.cells() if _data_provided(ir, c, given)]


def check_tables(ir: AuditIR, spec_dir: Path, arms: set[str], pre: Any,
                 root: Path | None) -> dict[str, pd.DataFrame] | None:
    """The images and scores (and measures) tables of `arms` as the run would write them; None if unreadable."""
    from scoreaudit.runtime.columns import required_columns
    from scoreaudit.runtime.manifests import load_manifest
    from scoreaudit.runtime.precomputed.rows import manifest_scores, precomputed_measures, precomputed_scores

    images, scores, measures = [], [], []
    skip = provided(pre)["scores"]
    for name in sorted(arms):
        arm = ir.arms[name]
        man = load_manifest(arm, spec_dir, columns=required_columns(ir, arm), on_error=ir.settings.on_error,
                            root=root, probe=False)
        if not man.ok:
            return None
        recs = list(man.records)
        for r in recs:
            row = {"arm": name, "image_id": r.image_id, "row": r.row, "cluster": r.cluster, "side": r.side,
                   "pair_id": r.pair_id}
            row.update({k: v for k, v in (r.columns or {}).items() if k not in IMAGE_COLUMNS})
            images.append(row)
        s, _ = manifest_scores(ir, name, recs, skip=skip)
        scores.append(s)
        if pre is not None:
            ids = [r.image_id for r in recs]
            scores.append(precomputed_scores(ir, name, ids, pre))
            measures.append(precomputed_measures(ir, name, ids, pre))
    frames = [f for f in scores if len(f)]
    out = {"images": pd.DataFrame(images),
           "scores": pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()}
    m = [f for f in measures if len(f)]
    if m:
        out["measures"] = pd.concat(m, ignore_index=True)
    return out


def _claim_span(ir: AuditIR, cell: CellIR):
    """The span of the claim that made the cell (its hypothesis's when the claim's is not known), from the IR."""
    for h in ir.hypotheses:
        if h.name == cell.hypothesis:
            return h.claim_spans[cell.claim] if 0 <= cell.claim < len(h.claim_spans) else h.span
    return None


def level_diagnostics(ir: AuditIR, path: str, pre: Any, root: Path | None) -> list[Diagnostic]:
    """W0423 for every data-provided cell whose test cannot reach alpha, with the run's smallest p."""
    from scoreaudit.stats.context import StatContext
    from scoreaudit.stats.engine import evaluate_cells, level_warnings

    cells = check_cells(ir, pre)
    if not cells:
        return []
    spec_dir = Path(path).resolve().parent
    arms = {arm for c in cells for arm, _, _ in c.parts()}
    try:
        tables = check_tables(ir, spec_dir, arms, pre, root)
        if tables is None:
            return []
        out = evaluate_cells(StatContext(ir, tables, n_boot=min(CHECK_BOOT, ir.settings.bootstrap)), cells)
    except Exception:  # noqa: BLE001  (data `check` cannot evaluate are "not known yet"; `run` says why)
        return []
    out = [c for c in out if c["_est"].p_floor is not None]  # a design's floor: independent of B and the seed
    by_id = {c.id: c for c in cells}
    return [Diagnostic("W0423", "warning", w["message"], span=_claim_span(ir, by_id[w["cell"]]), path=path,
                       help="add pairs (clusters) that the readings judge differently, raise alpha if the "
                            "design is pre-registered that way, or state the claim as descriptive",
                       notes=(f"smallest attainable p: {w['smallest_p']:.6g} (from the data on disk; "
                              "`run` gives the same number)",))
            for w in level_warnings(out, ir.settings.alpha)]
