"""The statistics engine: bundle tables → every cell, q, outcome, validation, verdict → results.json.

`compute(ir, tables)` is pure (used by `simulate` on in-memory tables);
`analyse(bundle_dir)` reads the bundle, adds provenance, and writes
results.json and the derived tables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from scoreaudit.bundletables import CELL_COLUMNS, SCHEMAS, rows_table, write_parquet
from scoreaudit.compiler.ir import AuditIR, CellIR, StatCallIR
from scoreaudit.safeio import write_atomic
from scoreaudit.stats import claims as _claims, dose as _dose
from scoreaudit.stats.context import TABLES, StatContext
from scoreaudit.stats.estimate import Estimate
from scoreaudit.stats.outcomes import adjust, cell_p, number_outcome, wrong_side
from scoreaudit.stats.provenance import clean, environment, lock_info, plan_info, read_json, spec_info
from scoreaudit.stats.seeds import seed_robustness
from scoreaudit.stats.sentences import cell_sentence as sentence
from scoreaudit.stats.validity import validations as _validations
from scoreaudit.stats.verdicts import verdicts as _verdicts

SCHEMA_VERSION = 1
# Below this many clusters SD-unit intervals are not vouched for by bench/calibration.py (spec/methods.md,
# "Measured calibration"): W0421 warns (check raises it too when the manifest is readable).
from scoreaudit.compiler.clusters import SD_MIN_CLUSTERS  # noqa: E402


def _progress(progress: bool, total: int, what: str):
    """A transient bar on a terminal, plain `progress:` lines off one (CI logs), None when off."""
    from scoreaudit.plainprogress import stage_bar

    return stage_bar(progress, what, total)


def _family_key(family: str, cell) -> str:
    """Which multiplicity family a cell belongs to under the audit's `family:` setting."""
    if family == "hypothesis":
        return cell.hypothesis
    if family == "scorer":
        return cell.scorer
    if family == "arm":
        return cell.arm or "+".join(cell.arms)
    return "audit"


def _cell_dict(cell: CellIR, est: Estimate, alpha: float) -> dict:
    level = 1 - 2 * alpha
    lo, hi = est.interval(level)
    call = cell.statistic
    return {"id": cell.id, "hypothesis": cell.hypothesis, "claim": cell.claim, "scorer": cell.scorer,
            "arm": cell.arm, "arms": list(cell.arms) or ([cell.arm] if cell.arm else []),
            "statistic": call.name, "params": {k: v for k, v in call.params.items() if not isinstance(v, dict)},
            "inner": call.inner.name if call.inner is not None else None,
            "claim_text": cell.test.text, "test": cell.test.model_dump(mode="json"),
            "estimate": est.estimate, "ci_low": lo, "ci_high": hi, "ci_level": level,
            "p": cell_p(est, cell.test), "q": None, "outcome": None, "method": est.test_name_for(cell.test),
            "se": est.standard_error, "undefined": est.undefined, "axis": list(cell.axis) if cell.axis else None,
            "qualifier": None, "interval": est.family, "where": [list(w) for w in cell.where],
            "detail": _with_floor(dict(est.detail), est, cell), "_est": est}


def _with_floor(detail: dict, est: Estimate, cell: CellIR) -> dict:
    """The cell's detail plus `smallest_p`, the smallest p its (discrete) test can reach (None: not discrete)."""
    t = cell.test
    floor = est.smallest_p(t.kind, t.threshold, t.low, t.high)
    if floor is not None:
        detail["smallest_p"] = floor
    return detail


def cell_estimate(ctx: StatContext, cell: CellIR, arm=None) -> Estimate:
    """The cell's statistic on its arm (or `arm`, e.g. one seed's sub-arm), restricted to its stratum if it has one."""
    arm = cell.arm if arm is None else arm
    if not cell.where:
        return ctx.evaluate(cell.statistic, arm, cell.scorer)
    from scoreaudit.stats.comparisons import restrict
    from scoreaudit.stats.context import StatError

    try:
        view = restrict(ctx, ctx.arm(arm), cell.where)
    except StatError as e:
        return Estimate(float("nan"), "fixed", undefined=str(e))
    return ctx.evaluate(cell.statistic, view, cell.scorer)


def evaluate_cells(ctx: StatContext, cells: list[CellIR], progress: bool = False) -> list[dict]:
    """Estimates, p, q and outcomes for every cell (one family)."""
    bar = _progress(progress, len(cells), "statistics: cells")
    out = []
    for cell in cells:
        est = cell_estimate(ctx, cell)
        out.append(_cell_dict(cell, est, ctx.alpha))
        if bar is not None:
            bar.advance(1, cell.id)
    if bar is not None:
        bar.close()
    # Multiplicity: one family per audit by default; `family:` splits it (spec/methods.md).
    families: dict[str, list[int]] = {}
    for k, (cell, c) in enumerate(zip(cells, out)):
        key = _family_key(ctx.settings.family, cell)
        c["family"] = key
        families.setdefault(key, []).append(k)
    for members in families.values():
        qs = adjust([out[k]["p"] for k in members], ctx.settings.correction)
        for k, q in zip(members, qs):
            out[k]["q"] = q
    by_claim: dict[str, list[dict]] = {}
    for cell, c in zip(cells, out):
        if cell.test.kind == "claim":
            by_claim.setdefault(c["statistic"], []).append(c)
        else:
            c["outcome"] = number_outcome(c["_est"], cell.test, c["q"], ctx.alpha)
            q = c["q"]
            if (q is not None and q <= ctx.alpha and c["outcome"] != "supported" and c["undefined"] is None
                    and wrong_side(c["estimate"], cell.test)):
                c["detail"]["not_supported"] = ("q ≤ alpha, but the point estimate lies on the wrong side of the "
                                                "claim's threshold: a cell is never supported against its own estimate")
    for name, group in by_claim.items():
        resolve = _claims.RESOLVERS.get(name)
        for c in group:
            claim_est: Estimate = c["_est"]
            if claim_est.claim_outcome is not None:
                c["outcome"] = claim_est.claim_outcome
        if resolve is not None:
            resolve([c for c in group if c["outcome"] is None], ctx.settings.correction, ctx.alpha)
        for c in group:
            c["outcome"] = c["outcome"] or "inconclusive"
    for c in out:
        c["sentence"] = sentence(c)
    return out


def qualify(cells: list[dict], verdicts: list[dict]) -> None:
    """Cells on a stress-test-only axis keep their outcome but carry the qualifier (cell and sentence)."""
    stress = {(v["measure"], v["operator"]) for v in verdicts if v["verdict"] == "stress-test-only"}
    for c in cells:
        if c.get("axis") and tuple(c["axis"]) in stress:
            c["qualifier"] = "stress-test-only"
            c["sentence"] = sentence(c)


def scale_warnings(ctx: StatContext, cells: list[dict]) -> list[dict]:
    """W0421 for every arm whose `scale: sd` cells rest on fewer than SD_MIN_CLUSTERS clusters."""
    if ctx.settings.scale != "sd":
        return []
    out = []
    arms = sorted({a for c in cells for a in (c.get("arms") or []) if str(c.get("interval")) != "t"})
    for name in arms:
        if name not in ctx.ir.arms or ctx.ir.arms[name].source != "images":
            continue
        n = ctx.arm(name).n_clusters
        if 0 < n < SD_MIN_CLUSTERS:
            out.append({"code": "W0421", "arm": name, "n_clusters": n,
                        "message": f"arm {name} has {n} clusters: below {SD_MIN_CLUSTERS} the intervals of statistics "
                                   "in SD units are not vouched for by the calibration grid (spec/methods.md); "
                                   "read its SD-unit verdicts with care, or use `scale: raw`"})
    return out


#: Above this share of clusters with tied rankings a ranking cell warns (W0422; spec/methods.md, ties).
TIE_SHARE_WARN = 0.20


def _cell_warnings(cells: list[dict], code: str, key: str, bound: float, message) -> list[dict]:
    """`code` for every cell whose detail `key` exceeds `bound` (the value is kept beside the message)."""
    out = []
    for c in cells:
        v = (c.get("detail") or {}).get(key)
        if v is not None and v > bound:
            out.append({"code": code, "arm": c.get("arm"), "cell": c["id"], key: float(v), "message": message(c, v)})
    return out


def tie_warnings(cells: list[dict]) -> list[dict]:
    """W0422 for every cell whose ranking has ties in more than TIE_SHARE_WARN of its clusters.

    The estimators resolve ties by their expected value over random tie orders
    and record `tie_share` in the cell's detail; this one check reads it for
    every ranking statistic alike.
    """
    return _cell_warnings(cells, "W0422", "tie_share", TIE_SHARE_WARN, lambda c, share: (
        f"cell {c['id']} ({c['statistic']} on {c.get('arm')} for {c.get('scorer')}): "
        f"{100 * share:.0f}% of its clusters have tied ranks; each tie counts at its "
        "expected value over random tie orders, so the estimate does not depend on "
        "file names, but read it as a rate on coarse scores"))


def level_warnings(cells: list[dict], alpha: float) -> list[dict]:
    """W0423 for every cell whose test cannot reach alpha: its smallest attainable p (detail `smallest_p`,
    the design's: every informative pair on the claimed side) exceeds it, so the claim is never supported.
    Nothing else says so: the cell would read as an ordinary inconclusive one."""
    return _cell_warnings(cells, "W0423", "smallest_p", alpha, lambda c, floor: (
        f"cell {c['id']} ({c['statistic']} for {c.get('scorer')}, {c.get('method')}): the "
        f"smallest p its test can reach on these data is {floor:.3g} > alpha = {alpha:g}, "
        "so the claim cannot be supported whatever the outcome; add pairs (clusters) "
        "that the readings judge differently, or state the claim as descriptive"))


def _derived_seed(seed: int, k: int) -> int:
    return int(np.random.SeedSequence([int(seed) % (2**63), 0x5EED, k]).generate_state(1)[0])


def robustness(ir: AuditIR, tables, cells_out: list[dict], progress: bool = False,
               cells_ir: list[CellIR] | None = None) -> None:
    """Same-sign (claims: same-outcome) rate of every cell over S derived seeds (run 0 = the audit seed)."""
    S = int(ir.settings.robustness)
    if S <= 1:
        return
    signs = [[np.sign(c["estimate"]) if c["estimate"] is not None else np.nan] for c in cells_out]
    outs = [[c["outcome"]] for c in cells_out]
    bar = _progress(progress, S - 1, "statistics: robustness seeds")
    for k in range(1, S):
        ctx = StatContext(ir, tables, seed=_derived_seed(ir.settings.seed, k))
        again = evaluate_cells(ctx, ir.cells() if cells_ir is None else cells_ir, progress=False)
        for i, c in enumerate(again):
            signs[i].append(np.sign(c["estimate"]) if np.isfinite(c["estimate"]) else np.nan)
            outs[i].append(c["outcome"])
        if bar is not None:
            bar.advance(1, f"seed {k + 1} of {S}")
    if bar is not None:
        bar.close()
    for c, sg, oc in zip(cells_out, signs, outs):
        if c["test"]["kind"] == "claim":
            c["robustness"] = {"runs": S, "same_outcome_rate": float(np.mean([o == oc[0] for o in oc]))}
        else:
            c["robustness"] = {"runs": S, "same_sign_rate": float(np.mean([s == sg[0] for s in sg]))
                               if np.isfinite(sg[0]) else None}


# ---------------------------------------------------------------- sections


def _images_arms(ctx: StatContext) -> list[str]:
    return [n for n, a in sorted(ctx.ir.arms.items()) if a.source == "images" and ctx.arm(n).n_images > 0]


def _has_scores(ctx, arm, scorer, operator) -> bool:
    _doses, S = ctx.score_matrix(arm, scorer, operator)
    return S.size > 0 and np.isfinite(S).any()


def sections(ctx: StatContext, cells: list[dict], validations: list[dict]) -> dict[str, Any]:
    curves, fi, placebo, drift = [], [], [], []
    scorers = sorted(ctx.ir.scorers)
    for arm in _images_arms(ctx):
        for scorer in scorers:
            for op in sorted(ctx.ir.operators):
                if _has_scores(ctx, arm, scorer, op):
                    curves += _dose.curve_rows(ctx, arm, scorer, op)
            fi += [r for r in _dose.uniformity_rows(ctx, arm, scorer) if _has_scores(ctx, arm, scorer, r["operator"])]
            for name, op in sorted(ctx.ir.operators.items()):
                if op.placebo_of and op.symmetric and _has_scores(ctx, arm, scorer, name):
                    est = ctx.evaluate(StatCallIR(name="placebo_ratio", version="1",
                                                  params={"operator": op.placebo_of, "placebo": name}), arm, scorer)
                    lo, hi = est.interval(1 - ctx.alpha)
                    placebo.append({"arm": arm, "scorer": scorer, "operator": op.placebo_of, "placebo": name,
                                    "ratio": est.estimate, "ci_low": lo, "ci_high": hi,
                                    "ci_level": 1 - ctx.alpha, "undefined": est.undefined, **{
                                        k: est.detail.get(k) for k in ("fi_operator", "fi_placebo")}})
            for sname, sel in sorted(ctx.ir.selections.items()):
                est = ctx.evaluate(StatCallIR(name="net_drift", version="1", params={"selection": sname}), arm, scorer)
                if est.undefined:
                    continue
                lo, hi = est.interval(1 - ctx.alpha)
                d = est.detail
                row = {"arm": arm, "scorer": scorer, "selection": sname, "measure": sel.measure,
                       "operator": sel.operator, "n": sel.n, "net": est.estimate, "ci_low": lo, "ci_high": hi,
                       "p_greater_0": est.p_greater(0.0), "p_less_0": est.p_less(0.0),
                       # the random pick enters in expectation (0): argmax drift = net drift
                       "argmax_drift": est.estimate, "argmax_ci_low": lo, "argmax_ci_high": hi,
                       "random_drift": 0.0, "random_ci_low": 0.0, "random_ci_high": 0.0,
                       "directional": None, "directional_ci_low": None, "directional_ci_high": None,
                       "fidelity_part": d.get("fidelity_part"), "note": d.get("note"),
                       "n_groups": d["n_groups"], "n_clusters": d["n_clusters"], "ci_level": 1 - ctx.alpha}
                if "directional_drift" in d:
                    de = ctx.evaluate(StatCallIR(name="directional_drift", version="1",
                                                 params={"selection": sname}), arm, scorer)
                    if not de.undefined:
                        dlo, dhi = de.interval(1 - ctx.alpha)
                        row.update(directional=de.estimate, directional_ci_low=dlo, directional_ci_high=dhi)
                drift.append(row)
    transfer = [{"cell": c["id"], "scorer": c["scorer"], **{k: v for k, v in c["detail"].items() if k != "params"}}
                for c in cells if c["statistic"] == "transfers" and not c.get("undefined")]
    for t in transfer:
        for k in ("ci_source", "ci_target"):
            lo, hi = t.pop(k)
            t[k + "_low"], t[k + "_high"] = lo, hi
    strata = []
    for c in cells:
        if c["statistic"] == "homogeneous" and not c.get("undefined"):
            d = c["detail"]
            for s in d["strata"]:
                strata.append({"cell": c["id"], "arm": c["arm"], "scorer": c["scorer"], "by": d["by"],
                               "statistic": d["statistic"], **s, "pooled": d["pooled"],
                               "omnibus_p": d["omnibus_p"], "q": c["q"]})
    return {"curves": curves, "uniformity": fi, "placebo": placebo, "drift": drift, "transfer": transfer,
            "strata": strata, "validity": validations}


def _contrast_rows(ctx: StatContext, cells: list[dict]) -> list[dict]:
    rows = []
    for c in cells:
        est: Estimate = c["_est"]
        if est.contrasts is None or c["arm"] is None:
            continue
        labels = est.detail.get("_clusters")
        values = np.asarray(est.contrasts)
        if labels is None or len(labels) != len(values):
            labels = [None] * len(values)
        for lab, v in zip(labels, values):
            rows.append({"cell": c["id"], "cluster": None if lab is None else str(lab), "value": float(v)})
    return rows


# ---------------------------------------------------------------- entry points


def compute(ir: AuditIR, tables: Mapping[str, pd.DataFrame], progress: bool = False,
            with_sections: bool = True) -> tuple[dict, dict[str, pd.DataFrame], StatContext]:
    """Everything statistical, from in-memory tables: (results part, derived tables, context)."""
    res, derived, ctx = _compute(ir, tables, progress, with_sections)
    return res, {name: t.to_pandas() for name, t in derived.items()}, ctx


def _compute(ir: AuditIR, tables: Mapping[str, pd.DataFrame], progress: bool,
             with_sections: bool, cells_ir: list[CellIR] | None = None) -> tuple[dict, dict[str, pa.Table], StatContext]:
    """`compute`, with the derived tables as typed Arrow tables (what the bundle stores).

    `cells_ir`: the cells to evaluate (the plan's statistic steps, `plan.cells_of`); None: the IR's."""
    ctx = StatContext(ir, tables)
    cells_ir = ir.cells() if cells_ir is None else cells_ir
    cells = evaluate_cells(ctx, cells_ir, progress=progress)
    robustness(ir, tables, cells, progress=progress, cells_ir=cells_ir)
    seed_robustness(ctx, cells_ir, cells)  # generated arms: the estimate on each generation seed alone
    vals = _validations(ctx)
    verd = _verdicts(ctx, vals)
    qualify(cells, verd)
    secs = sections(ctx, cells, vals) if with_sections else {}
    hyps = [{"name": h.name, "title": h.title, "text": h.text,
             "cells": [c["id"] for c in cells if c["hypothesis"] == h.name],
             "outcomes": {o: sum(1 for c in cells if c["hypothesis"] == h.name and c["outcome"] == o)
                          for o in ("supported", "refuted", "inconclusive")}} for h in ir.hypotheses]
    derived: dict[str, pa.Table] = {}
    flat = [{k: clean(v) for k, v in c.items() if not k.startswith("_")} for c in cells]
    derived["cells"] = rows_table(flat, columns=CELL_COLUMNS, table="cells")
    for name, key in (("curves", "curves"), ("fi", "uniformity"), ("placebo", "placebo"), ("drift", "drift"),
                      ("transfer", "transfer"), ("strata", "strata")):
        if secs.get(key):
            derived[name] = rows_table(clean(secs[key]), table=name)
    if vals:
        derived["validity"] = rows_table([{k: v for k, v in r.items() if k != "checks"} | {
            "checks": clean(r["checks"])} for r in vals], table="validity")
    cr = _contrast_rows(ctx, cells)
    if cr:
        derived["contrasts"] = rows_table(cr)
    res = {"cells": cells, "hypotheses": hyps, "verdicts": verd, "validations": vals, "sections": secs,
           "warnings": scale_warnings(ctx, cells) + tie_warnings(cells) + level_warnings(cells, ctx.alpha)}
    return res, derived, ctx


def read_inputs(bundle: Path, ir_dump: dict) -> dict:
    from scoreaudit.stats.inputs import read_inputs as _read

    return _read(bundle, ir_dump)


def read_tables(bundle: Path) -> dict[str, pd.DataFrame]:
    out = {}
    for name in TABLES:
        p = bundle / "tables" / f"{name}.parquet"
        out[name] = pd.read_parquet(p) if p.exists() else pd.DataFrame()
    return out


def _records(df: pd.DataFrame) -> list[dict]:
    """A frame's rows with missing cells as None (pandas gives NaN for a missing row number)."""
    return [{k: (None if v is None or (isinstance(v, float) and v != v) else v) for k, v in r.items()}
            for r in df.to_dict(orient="records")]


def _exclusions(ctx: StatContext, runtime: pd.DataFrame) -> pd.DataFrame:
    base = runtime[runtime["stage"] != "statistic"] if len(runtime) and "stage" in runtime else runtime
    notes = pd.DataFrame([{"arm": n["arm"], "image_id": n["image_id"], "row": None, "stage": "statistic",
                           "reason": n["reason"]} for n in ctx.notes])
    if len(notes):
        notes = notes.drop_duplicates()
        r = ctx.tables["images"]
        if len(r) and "row" in r:
            rows = r.set_index(["arm", "image_id"])["row"]
            notes["row"] = [rows.get((a, i)) for a, i in zip(notes["arm"], notes["image_id"])]
    frames = [f for f in (base, notes) if len(f)]
    if not frames:
        return pd.DataFrame(columns=["arm", "image_id", "row", "stage", "reason"])
    out = pd.concat(frames, ignore_index=True)
    return out.sort_values(["arm", "image_id", "stage"], kind="stable", na_position="first").reset_index(drop=True)


def _planned_cells(bundle: Path) -> list[CellIR] | None:
    """The cells of the bundle's plan.json statistic steps (the plan is what runs); None without a plan."""
    if not (bundle / "plan.json").is_file():
        return None
    from scoreaudit.compiler.plan import ExecutionPlan, cells_of

    return cells_of(ExecutionPlan.model_validate(read_json(bundle / "plan.json")))


def analyse(bundle_dir: Path, progress: bool = True) -> dict:
    """Read the bundle, compute everything, write results.json and derived tables; return the results."""
    bundle = Path(bundle_dir)
    ir_dump = read_json(bundle / "ir.json")
    ir = AuditIR.model_validate(ir_dump)
    tables = read_tables(bundle)
    tables["_inputs"] = read_inputs(bundle, ir_dump)
    run_info = read_json(bundle / "run.json")
    res, derived, ctx = _compute(ir, tables, progress, True, cells_ir=_planned_cells(bundle))
    excl = _exclusions(ctx, tables["exclusions"])
    tdir = bundle / "tables"
    tdir.mkdir(parents=True, exist_ok=True)
    names = {}
    for name, table in derived.items():
        write_parquet(table, tdir / f"{name}.parquet")
        names[name] = f"tables/{name}.parquet"
    write_parquet(rows_table(_records(excl), schema=SCHEMAS["exclusions"]), tdir / "exclusions.parquet")
    # images, not entries: one image can be excluded from several statistics
    n_excl: dict = {}
    for r in excl.to_dict(orient="records") if len(excl) else []:
        ident = r.get("image_id") if isinstance(r.get("image_id"), str) else f"row {r.get('row')}"
        n_excl.setdefault(r["arm"], set()).add(ident)
    n_excl = {k: len(v) for k, v in n_excl.items()}
    arms = {}
    for name, arm in ir.arms.items():
        a = ctx.arm(name)
        arms[name] = {"kind": arm.kind, "source": arm.source, "n_images": a.n_images, "n_clusters": a.n_clusters,
                      "n_excluded": int(n_excl.get(name, 0))}
    from scoreaudit.stats.provenance import package_versions

    _v = package_versions().get("scoreaudit", "0+unknown")
    results = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "scoreaudit", "version": _v},
        "title": ir.settings.title,
        "spec": spec_info(bundle, ir),
        "lock": lock_info(bundle, run_info),
        "settings": ir.settings.model_dump(mode="json"),
        "environment": environment(ir, run_info),
        "plan": plan_info(bundle),
        "arms": arms,
        "exclusions": excl.to_dict(orient="records"),
        "hypotheses": [{**h, "cells": [c for c in res["cells"] if c["id"] in h["cells"]]} for h in res["hypotheses"]],
        "cells": res["cells"],
        "verdicts": res["verdicts"],
        "validations": res["validations"],
        "sections": res["sections"],
        "warnings": res["warnings"],
        "tables": {**names, "exclusions": "tables/exclusions.parquet"},
        "precomputed": run_info.get("precomputed", []),
    }
    results = clean(results)
    write_atomic(bundle / "results.json", json.dumps(results, indent=2, allow_nan=False))
    # Where the bundle is, for callers only: results.json stays independent of its location.
    return {**results, "bundle": str(bundle)}
