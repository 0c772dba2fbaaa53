"""Hypotheses → cells, one claim at a time by its kind.

A claim compares one statistic with a number (`hypotheses.lower_claim`) or
two readings with each other (`difference(a, b)`, `ratio(a, b)`:
`lower_comparison_claim` below). This module sits above both so that
`hypotheses.py` (statistic calls, needs, tests) and `comparisons.py` (the
checks of readings) never import each other.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from scoreaudit.compiler import ir
from scoreaudit.compiler.comparisons import (
    SIGNED_UNITS,
    _unit,
    _unit_words,
    _where_value,
    check_replicates,
    check_where,
    comparison_of,
)
from scoreaudit.compiler.hypotheses import (
    _resolve_listed,
    axis_of,
    check_needs,
    check_prompt,
    lower_claim,
    lower_stat,
    make_test,
)
from scoreaudit.compiler.scopes import check_cells, covers, no_scorer
from scoreaudit.compiler.values import string_literals, text
from scoreaudit.grammar import ast


def lower_hypothesis(h: ast.HypothesisDecl, st) -> ir.HypothesisIR | None:
    if not h.claims:
        st.sink.emit("E0611", h, f"hypothesis `{h.name.name}` has no claim",
                     "add a claim, e.g. `fidelity_index(light) > 0 on real for each scorer`")
        return None
    cells: list[ir.CellIR] = []
    ok = True
    multi = len(h.claims) > 1
    for k, claim in enumerate(h.claims):
        comp = comparison_of(claim.expr)
        if comp is not None:  # difference(a, b) / ratio(a, b) of two readings
            got = lower_comparison_claim(h, k, claim, comp, st, multi)
        else:
            got = lower_claim(h, k, claim, st, multi)
        if got is None:
            ok = False
        else:
            cells.extend(got)
    if not ok:
        return None
    return ir.HypothesisIR(name=h.name.name, title=h.title.value,
                           text="\n".join(text(c) for c in h.claims), cells=tuple(cells),
                           span=h.name.span, claim_spans=tuple(c.span for c in h.claims),
                           literals=string_literals(h))



def _one(idents: tuple, kind: str, reading: ast.Reading, st) -> tuple[str | None, bool]:
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
                           multi: bool) -> list[ir.CellIR] | None:
    sink = st.sink
    before = sink.error_count()
    pseudo: Any = SimpleNamespace(name=comp.kind, meta={"returns": "number"})  # the registry entry make_test reads
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
    if comp.kind == "ratio" and test.kind == "greater" and test.threshold == 0 and isinstance(claim.expr, ast.Compare):
        # null values of the forms: difference 0, ratio 1 (a claim against 0 is E0424's mistake for ratios);
        # `ratio(a, b) < 0` is allowed: a pre-registered reversal (the readings have opposite signs)
        sink.emit("E0426", claim.expr.right, f"`ratio(...)` has null value 1, so `{text(claim.expr)}` tests it "
                  "against 0, which only says that the two readings share a sign",
                  f"compare with 1, e.g. `{text(claim.expr.left)} {claim.expr.op} 1`, bound its size with "
                  "`abs(...) <`, or claim a reversal (opposite signs) with `< 0`")
        return None
    on_probe = [low.entry.meta.get("scope") == "probe" for low in lows]
    if any(on_probe):  # probe readings (compiler/probes.py): clusters are the probes' prompts, not an arm's
        from scoreaudit.compiler.probes import lower_probe_comparison

        return lower_probe_comparison(h, k, claim, comp, lows, on_probe, test, st, multi)

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
        arm_opts: list[str | None] = [None]
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
    # `for each scorer` (or no `for`) fills a reading's scorer with those in scope on its arm
    implicit = need_scorer and (isinstance(claim.scorers, ast.EachScorer) or not claim.scorers)
    if claim.scorers and not need_scorer:
        node = claim.scorers if isinstance(claim.scorers, ast.EachScorer) else claim.scorers[0]
        sink.emit("W0460", node, "both readings name their scorer, so `for ...` after the claim expands nothing",
                  "remove it, or leave `for` off one reading to compare it with every scorer")
        scorer_opts: list[str | None] = [None]
    elif need_scorer:
        if implicit:
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
            check_replicates(low, a, r.call, st)
            if r.where:
                check_where(r, a, st)
            scorers_i = [fixed_scorers[i]] if fixed_scorers[i] else scorer_opts
            for s in scorers_i:
                if implicit and not fixed_scorers[i] and not covers(st, s, (a,)):
                    continue
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
    claim_arms = tuple(dict.fromkeys([x for x in fixed_arms if x] + [x for x in arm_opts if x]))
    axes = {axis_of(la, st, claim_arms), axis_of(lb, st, claim_arms)}
    axis = axes.pop() if len(axes) == 1 else None
    cells, seen, same = [], set(), None
    filled: dict = {}  # claim arm -> (the arms its readings read, whether some scorer is in scope on them)
    for s in scorer_opts:
        for a in arm_opts:
            parts = []
            for i, low in enumerate(lows):
                parts.append(ir.ReadingIR(statistic=low.ir, arm=fixed_arms[i] or a, scorer=fixed_scorers[i] or s,
                                          where=where[i]))
            if implicit:
                fits = all(fixed_scorers[i] or covers(st, p.scorer, (p.arm,)) for i, p in enumerate(parts))
                arms_read = tuple(dict.fromkeys(p.arm for i, p in enumerate(parts) if not fixed_scorers[i]))
                filled[a] = (arms_read, filled.get(a, ((), False))[1] or fits)
                if not fits:
                    continue
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
    for a, (arms_read, fits) in filled.items():
        if not fits and st.scorers:
            no_scorer(st, arms_read, next((x for x in claim.arms if x.name == a), None) or claim, claim)
    if not cells and same is not None:
        sink.emit("E0464", comp, f"both sides of `{comp.kind}` are the same reading "
                  f"(`{text(comp.a.call)}` on {same[0].arm} for {same[0].scorer})",
                  "qualify one side with `on ARM`, `for SCORER` or `where COLUMN = \"value\"`")
    check_cells(cells, claim, st)
    if sink.error_count() > before:
        return None
    return cells


# ---------------------------------------------------------------- pairing, as far as the spec tells
