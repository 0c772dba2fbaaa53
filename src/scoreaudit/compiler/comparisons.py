"""Comparisons between readings: `difference(a, b)` and `ratio(a, b)` → cells (DESIGN §6).

A reading is a statistic with its own `on ARM`, `for SCORER` and
`where COLUMN = VALUE` qualifiers; what it leaves out is filled from the claim
line (`on ...`, `for ...`, `for each scorer`, every scorer when absent), so a
claim expands into one cell per combination of the claim's arms and scorers
that some reading leaves open. Each cell's statistic is a `difference` or
`ratio` call whose `params["readings"]` holds the two `ReadingIR`s.

Also checked here, per arm: the statistics that combine or read columns
(`group_gap` on strata, `decompose`, `share`, `agreement`), and `where`
conditions against the arm's manifest when it can be read at check time.

Codes E046x–E047x and W046x, catalogued in `codes.py`.
"""

from __future__ import annotations

import csv
import io
import json
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Optional

from scoreaudit.compiler import ir
from scoreaudit.compiler.values import text
from scoreaudit.diagnostics import did_you_mean
from scoreaudit.grammar import ast

#: Statistics whose sign carries meaning (null value 0): a ratio of two of them can be negative.
SIGNED_UNITS = ("sd", "sd per measure unit", "r", "measure units", "sd per covariate unit")


def comparison_of(expr: Any) -> Optional[ast.Comparison]:
    """The `difference`/`ratio` a claim expression tests, if it tests one."""
    left = getattr(expr, "left", None)
    if isinstance(left, ast.Abs):
        left = left.call
    return left if isinstance(left, ast.Comparison) else None


def _unit(low) -> tuple[str, Optional[str]]:
    """(unit, what it is a unit of) of a lowered statistic: measure units depend on the measure."""
    unit = str(low.entry.meta.get("unit", "number"))
    of = None
    if "measure" in unit:
        of = low.bound.params.get("measure")
        if of is None:  # net_drift: the selection's measure
            of = low.bound.params.get("selection")
    return unit, of


def _unit_words(unit: str, scale: str, of: Optional[str] = None) -> str:
    """`is in SD units`, `is a share`, `is in measure units of ita` (a predicate for messages)."""
    if unit == "sd":
        return "is in SD units" if scale == "sd" else "is in raw score units"
    words = {"share": "is a share", "ratio": "is a ratio", "r": "is a correlation", "rank": "is an average rank",
             "p": "is a p-value"}.get(unit)
    return words or f"is in {unit}{f' of {of}' if of else ''}"


def _where_value(v: Any) -> str:
    if isinstance(v, ast.String):
        return v.value
    return str(int(v.value)) if v.is_int else repr(float(v.value))


# ---------------------------------------------------------------- manifests at check time


@lru_cache(maxsize=32)
def _read_manifest(path: str, mtime: float, size: int) -> Optional[tuple[tuple[str, ...], dict[str, frozenset]]]:
    """(columns, column → set of values as text) of a CSV/TSV/JSON-lines manifest, or None."""
    p = Path(path)
    suffix = p.suffix.lower()
    try:
        data = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    rows: list[dict[str, Any]]
    try:
        if suffix in (".csv", ".tsv"):
            reader = csv.DictReader(io.StringIO(data), delimiter="\t" if suffix == ".tsv" else ",")
            rows = list(reader)
            columns = tuple(reader.fieldnames or ())
        elif suffix in (".jsonl", ".ndjson"):
            rows = [json.loads(line) for line in data.splitlines() if line.strip()]
            columns = tuple(dict.fromkeys(k for r in rows if isinstance(r, dict) for k in r))
        else:
            return None
    except (csv.Error, ValueError):
        return None
    values: dict[str, set] = {c: set() for c in columns}
    for r in rows:
        if not isinstance(r, dict):
            return None
        for c, v in r.items():
            if c in values and v is not None:
                values[c].add(_as_text(v))
    return columns, {c: frozenset(v) for c, v in values.items()}


def _as_text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    s = str(v).strip()
    try:
        f = float(s)
    except ValueError:
        return s
    return str(int(f)) if f.is_integer() and "e" not in s.lower() and s.lstrip("-").replace(".", "", 1).isdigit() \
        else s


def manifest_of(st, arm_name: str):
    """The arm's manifest as (columns, values) when it exists inside the spec's folder, else None."""
    arm = st.arms.get(arm_name)
    path = getattr(st, "path", "") or ""
    if arm is None or not path or path.startswith("<"):  # text checked without a file: nothing to read
        return None
    spec = Path(path)
    rel = arm.call.params.get("manifest")
    if not isinstance(rel, str):
        return None
    root = spec.resolve().parent
    p = (root / rel).resolve()
    try:
        p.relative_to(root)
    except ValueError:
        return None
    if not p.is_file():
        return None
    stat = p.stat()
    return _read_manifest(str(p), stat.st_mtime, stat.st_size)


def _same_value(value: str, present: frozenset) -> bool:
    if value in present:
        return True
    try:
        f = float(value)
    except ValueError:
        return False
    for v in present:
        try:
            if float(v) == f:
                return True
        except ValueError:
            continue
    return False


def check_where(reading: ast.Reading, arm_name: str, st) -> bool:
    """`where COLUMN = VALUE`: the column exists on the arm and the value occurs (manifest permitting)."""
    man = manifest_of(st, arm_name)
    if man is None:
        return True
    columns, values = man
    ok = True
    for w in reading.where:
        col = w.column.name
        if col not in columns:
            guess = did_you_mean(col, columns)
            st.sink.emit("E0465", w.column, f"arm `{arm_name}` has no column `{col}` to select with `where`",
                         f"did you mean '{guess}'?" if guess else f"columns of its manifest: {', '.join(columns)}")
            ok = False
            continue
        val = _where_value(w.value)
        if not _same_value(val, values[col]):
            shown = sorted(values[col])
            listing = ", ".join(f'"{v}"' for v in shown[:12]) + (", ..." if len(shown) > 12 else "")
            guess = did_you_mean(val, shown)
            st.sink.emit("E0466", w.value, f"no image of arm `{arm_name}` has {col} = \"{val}\"",
                         f"did you mean \"{guess}\"?" if guess else f"values of `{col}`: {listing}")
            ok = False
    return ok


# ---------------------------------------------------------------- per-arm checks of the statistics here


def _column_known(col: str, arm_name: str, st) -> Optional[bool]:
    """True/False when the arm's declaration or manifest says whether `col` exists; None when unknown."""
    arm = st.arms.get(arm_name)
    if arm is None:
        return None
    if col in arm.factors or col in arm.strata or col == arm.cluster:
        return True
    man = manifest_of(st, arm_name)
    if man is None:
        return None
    return col in man[0]


def check_arm(low, arm_name: str, arm_node: Any, st) -> bool:
    """Checks of `group_gap` on strata, `decompose`, `share` and `agreement` on one arm."""
    sink = st.sink
    arm = st.arms.get(arm_name)
    if arm is None:
        return True
    name, params, ok = low.name, low.bound.params, True
    if name == "group_gap":
        col = params.get("factor")
        known = _column_known(col, arm_name, st)
        if known is False or (known is None and not arm.strata and not arm.factors):
            sink.emit("E0469", low.bound.arg_node("factor"),
                      f"`{col}` is neither a factor nor a stratum of arm `{arm_name}`",
                      f"add `strata: {col}` (or `factors: [{col}]`) to arm `{arm_name}`, or name a column it has")
            ok = False
    elif name == "agreement":
        col = params.get("label")
        if _column_known(col, arm_name, st) is False:
            man = manifest_of(st, arm_name)
            guess = did_you_mean(col, man[0]) if man else None
            sink.emit("E0470", low.bound.arg_node("label"), f"arm `{arm_name}` has no label column `{col}`",
                      f"did you mean '{guess}'?" if guess else "name the manifest column that holds the judge's labels")
            ok = False
        if arm.source == "images" and params.get("metric") != "auroc":
            sink.emit("E0471", low.bound.arg_node("metric") if "metric" in low.bound.args else low.bound.call,
                      f"`agreement(metric: {params.get('metric')})` compares a yes/no call with the label, "
                      f"but on the images arm `{arm_name}` a score makes no call",
                      "use `metric: auroc` on an images arm, or run the agreement on a pairs arm "
                      "(the call is which side scores higher)")
            ok = False
    return ok


def check_combination(low, sink) -> bool:
    """`share(decompose(...), part:)` and `decompose(group_gap(...), via: attribute_effect(...))` shapes."""
    if low.name == "share" and low.inner is not None and low.inner.name != "decompose":
        sink.emit("E0467", low.bound.arg_node("statistic"),
                  f"`share` takes a `decompose(...)`, not `{low.inner.name}(...)`",
                  "write `share(decompose(group_gap(s, a, b), via: attribute_effect(o, measure: m)), part: confound)`")
        return False
    if low.name == "decompose":
        gap = low.inner
        via = (low.extra or {}).get("via")
        bad = []
        if gap is not None and gap.name != "group_gap":
            bad.append((low.bound.arg_node("gap"), f"the gap is `{gap.name}(...)`; decompose splits a `group_gap(...)`"))
        if via is None:
            bad.append((low.bound.call, "`via:` is missing"))
        elif via.name != "attribute_effect":
            bad.append((low.bound.arg_node("via"),
                        f"`via:` is `{via.name}(...)`; the explained part comes from an `attribute_effect(...)`"))
        for node, msg in bad:
            sink.emit("E0468", node, f"decompose: {msg}",
                      "write `decompose(group_gap(tone, \"dark\", \"light\"), via: attribute_effect(light, measure: ita))`")
        return not bad
    return True


# ---------------------------------------------------------------- claims


def _one(idents: tuple, kind: str, reading: ast.Reading, st) -> tuple[Optional[str], bool]:
    """The single arm/scorer a reading names (None when it names none); False after an error."""
    if not idents:
        return None, True
    if len(idents) > 1:
        word = "on" if kind == "arm" else "for"
        st.sink.emit("E0461", idents[1], f"a reading names one {kind}; this one has `{word}` twice",
                     f"keep one `{word} ...` in `{text(reading)}`, or compare the two with `difference(...)`")
        return None, False
    name = st.decls.resolve(idents[0], kind, st.sink, f"(in the reading `{text(reading.call)}`)")
    return name, name is not None


def lower_comparison_claim(h: ast.HypothesisDecl, k: int, claim: ast.Claim, comp: ast.Comparison, st,
                           multi: bool) -> Optional[list[ir.CellIR]]:
    from scoreaudit.compiler.hypotheses import (_resolve_listed, axis_of, check_needs, check_prompt,
                                                lower_stat, make_test)

    sink = st.sink
    before = sink.error_count()
    pseudo = SimpleNamespace(name=comp.kind, meta={"returns": "number"})
    test = make_test(claim.expr, pseudo, sink)
    readings = (comp.a, comp.b)
    lows = []
    for r in readings:
        low, ok = lower_stat(r.call, st)
        if low is not None and (low.entry.meta.get("returns") == "claim" or low.entry.meta.get("scope") == "cross_arm"):
            sink.emit("E0460", r.call.func, f"`{low.name}` decides a claim itself and cannot be one side of "
                      f"`{comp.kind}(...)`", "compare statistics that return a number, e.g. `fidelity_index(light)`")
            low = None
        lows.append(low if ok else None)
    fixed_arms, fixed_scorers = [], []
    for r in readings:
        a, _ = _one(r.arms, "arm", r, st)
        s, _ = _one(r.scorers, "scorer", r, st)
        fixed_arms.append(a)
        fixed_scorers.append(s)
    if sink.error_count() > before or any(x is None for x in lows) or test is None:
        return None
    la, lb = lows

    # units: a difference needs one unit; a ratio is unit-free but may be negative
    scale = st.settings.scale if st.settings is not None else "sd"
    (ua, of_a), (ub, of_b) = _unit(la), _unit(lb)
    if comp.kind == "difference" and (ua != ub or of_a != of_b):
        sink.emit("E0463", comp, f"`difference` subtracts readings in different units: `{la.name}` "
                  f"{_unit_words(ua, scale, of_a)}, `{lb.name}` {_unit_words(ub, scale, of_b)}",
                  "compare readings of the same kind of statistic, or compare them with `ratio(...)`")
        return None

    # claim-level qualifiers fill what the readings leave open
    need_arm = any(a is None for a in fixed_arms)
    need_scorer = any(s is None for s in fixed_scorers)
    where_h = f"(after `on` in hypothesis `{h.name.name}`)"
    if claim.arms and not need_arm:
        sink.emit("W0461", claim.arms[0], "both readings name their arm, so `on ...` after the claim is not used",
                  "remove `on ...`, or leave `on` off one reading to compare it across the claim's arms")
        arm_opts: list[Optional[str]] = [None]
    elif need_arm:
        if not claim.arms:
            arms = ", ".join(st.decls.names(["arm"])) or "none declared"
            node = next(r for r, a in zip(readings, fixed_arms) if a is None)
            sink.emit("E0462", node, f"the reading `{text(node.call)}` names no arm, and the claim has no `on ...`",
                      f"add `on ARM` to the reading or after the claim (arms: {arms})")
            return None
        arm_opts = list(_resolve_listed(claim.arms, "arm", where_h, st, sink))
    else:
        arm_opts = [None]
    if claim.scorers and not need_scorer:
        node = claim.scorers if isinstance(claim.scorers, ast.EachScorer) else claim.scorers[0]
        sink.emit("W0460", node, "both readings name their scorer, so `for ...` after the claim expands nothing",
                  "remove it, or leave `for` off one reading to compare it with every scorer")
        scorer_opts: list[Optional[str]] = [None]
    elif need_scorer:
        if isinstance(claim.scorers, ast.EachScorer) or not claim.scorers:
            scorer_opts = list(st.scorers)
            if not st.decls.names(["scorer"]):
                sink.emit("E0610", claim.expr, "this claim has no scorer to test: the spec declares none",
                          "declare one, e.g. `scorer laion = laion_aesthetic()`")
        else:
            scorer_opts = list(_resolve_listed(claim.scorers, "scorer",
                                               f"(after `for` in hypothesis `{h.name.name}`)", st, sink))
    else:
        scorer_opts = [None]
    if sink.error_count() > before:
        return None

    # per-arm needs and `where`, once per (reading, arm)
    checked: set = set()
    for i, (r, low) in enumerate(zip(readings, lows)):
        arms_i = [fixed_arms[i]] if fixed_arms[i] else arm_opts
        for a in arms_i:
            if a is None or (i, a) in checked or a not in st.arms:
                continue
            checked.add((i, a))
            node = r.arms[0] if r.arms else (claim.arms[0] if claim.arms else r)
            check_needs(low, a, node, st)
            if r.where:
                check_where(r, a, st)
            scorers_i = [fixed_scorers[i]] if fixed_scorers[i] else scorer_opts
            for s in scorers_i:
                if s in st.scorers:
                    check_prompt(st.scorers[s], st.arms[a], r, st)
    if sink.error_count() > before:
        return None

    prefix = f"{h.name.name}.{k + 1}" if multi else h.name.name
    where = [tuple((w.column.name, _where_value(w.value)) for w in r.where) for r in readings]
    if comp.kind == "ratio" and test.kind == "less" and (test.threshold or 0) > 0 \
            and ua in SIGNED_UNITS and ub in SIGNED_UNITS:
        both = f"`{la.name}`" if la.name == lb.name else f"`{la.name}` and `{lb.name}`"
        sink.emit("W0462", comp, f"{both} can be negative, so a negative ratio (effects in "
                  f"opposite directions) also lies below {test.threshold:g}",
                  f"to compare sizes write `abs({text(comp)}) < {test.threshold:g}`, or add a claim that each "
                  "reading is positive (e.g. `... > 0`)")
    axes = {axis_of(la, st), axis_of(lb, st)}
    axis = axes.pop() if len(axes) == 1 else None
    cells, seen, same = [], set(), None
    for s in scorer_opts:
        for a in arm_opts:
            parts = []
            for i, low in enumerate(lows):
                parts.append(ir.ReadingIR(statistic=low.ir, arm=fixed_arms[i] or a, scorer=fixed_scorers[i] or s,
                                          where=where[i]))
            key = tuple(p.model_dump_json() for p in parts)
            if key in seen:
                continue
            seen.add(key)
            if parts[0] == parts[1]:  # `a for pick` against every scorer: pick against itself is no comparison
                same = same or parts
                continue
            sc = parts[0].scorer if parts[0].scorer == parts[1].scorer else f"{parts[0].scorer}:{parts[1].scorer}"
            arms = tuple(dict.fromkeys(p.arm for p in parts))
            arm_label = arms[0] if len(arms) == 1 else ":".join(arms)
            stat = ir.StatCallIR(name=comp.kind, version="1",
                                 params={"readings": [p.model_dump(mode="json") for p in parts]})
            cells.append(ir.CellIR(id=f"{prefix}/{sc}/{arm_label}", hypothesis=h.name.name, claim=k, scorer=sc,
                                   arm=arms[0] if len(arms) == 1 else None, arms=arms, statistic=stat, test=test,
                                   axis=axis))
    if not cells and same is not None:
        sink.emit("E0464", comp, f"both sides of `{comp.kind}` are the same reading "
                  f"(`{text(comp.a.call)}` on {same[0].arm} for {same[0].scorer})",
                  "qualify one side with `on ARM`, `for SCORER` or `where COLUMN = \"value\"`")
    if sink.error_count() > before:
        return None
    return cells


# ---------------------------------------------------------------- pairing, as far as the spec tells


def _manifest_key(arm: ir.ArmIR) -> Optional[str]:
    p = arm.call.params
    return p.get("manifest") if isinstance(p.get("manifest"), str) else None


def static_pairing(readings: list[ir.ReadingIR], audit: ir.AuditIR) -> str:
    """How the two readings will be resampled, as the spec tells it (the data decides the rest).

    Same arm and rows: paired. Arms over the same manifest: paired on their
    shared ids. Otherwise the run pairs them on the clusters they share, if
    any, and resamples them independently when they share none.
    """
    a, b = readings
    if a.arm == b.arm:
        if a.where == b.where:
            return f"paired: the same clusters of {a.arm}"
        return (f"paired on the clusters of {a.arm} that hold both groups; independent if the groups are "
                "in different clusters (decided from the data)")
    ma, mb = (audit.arms.get(x.arm) for x in (a, b))
    if ma is not None and mb is not None and _manifest_key(ma) and _manifest_key(ma) == _manifest_key(mb):
        return f"paired: {a.arm} and {b.arm} are built from the same manifest ids"
    return f"independent unless {a.arm} and {b.arm} share cluster ids (decided from the data)"
