"""Scoped declarations: `scorer pick = pickscore(...) on faces`, `operator widen = ... on bodies`.

A scope names the arms a declaration runs on (spec/language.md, "Scopes");
no scope is every arm (for regions, measures, covariates, operators and
placebos: every images arm, the only arms they run on; a placebo without a
scope of its own takes its operator's). This module lowers scopes and checks
what they imply, so a spec never asks for work outside a scope:

- a region covers every declaration that uses it (E0531);
- `validate M under O` and `best_of n under O by M` pair declarations that
  share an arm (E0532, E0533);
- `for each scorer` expands, per arm, to the scorers in scope there
  (`covers`, used by `hypotheses.lower_claim` and `claims.lower_comparison_claim`);
  an arm left with none is E0534;
- every cell reads, on each of its arms, only scorers (E0535) and operators,
  placebos, measures, covariates and selections (E0536) in scope there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any, cast

from scoreaudit import registry
from scoreaudit.compiler import ir
from scoreaudit.compiler.ir import ORIGINAL, in_scope
from scoreaudit.compiler.params import fields_of
from scoreaudit.compiler.reads import reads
from scoreaudit.grammar import ast

#: declaration kinds that only run on images arms (a pairs arm has no pixels to cut, alter or measure)
IMAGES_ONLY = frozenset({"region", "measure", "covariate", "operator", "placebo"})


# ---------------------------------------------------------------- lowering


def lower_scope(d: Any, kind: str, st) -> tuple[str, ...] | None:
    """The arms of declaration `d`'s `on ARM, ARM`, resolved, in the order the arms are declared; None after an
    error (the declaration then fails).

    E0203/E0204: a name that is not an arm (with did-you-mean); E0530: a pairs
    arm in the scope of a declaration that runs on images; W0530: an arm listed twice.
    """
    what = f"{kind} `{d.name.name}`"
    out: list[str] = []
    ok = True
    for ident in getattr(d, "on", ()):
        name = st.decls.resolve(ident, "arm", st.sink, f"(in the scope of {what})")
        if name is None:
            ok = False
            continue
        if name in out:
            st.sink.emit("W0530", ident, f"arm `{name}` is listed twice in the scope of {what}", "list it once")
            continue
        arm = st.arms.get(name)
        if kind in IMAGES_ONLY and arm is not None and arm.source == "pairs":
            images = [n for n in images_arms(st) if n not in out]
            st.sink.emit("E0530", ident, f"{what} runs on images, but `{name}` is a pairs arm",
                         f"scope it to images arms ({', '.join(images)})" if images else
                         f"remove `{name}` from the scope: a pairs arm is scored as it is")
            ok = False
            continue
        out.append(name)
    order = st.decls.names(["arm"])  # declaration order: `on b, a` and `on a, b` are one scope (one fingerprint)
    return tuple(sorted(out, key=order.index)) if ok else None


def images_arms(st) -> tuple[str, ...]:
    return tuple(n for n, a in st.arms.items() if a.source == "images")


def effective(on: tuple[str, ...], kind: str, st) -> tuple[str, ...]:
    """The arms a declaration runs on: its scope, else every (images) arm."""
    if on:
        return on
    return images_arms(st) if kind in IMAGES_ONLY else tuple(st.arms)


def _words(arms: Iterable[str]) -> str:
    return ", ".join(arms) or "no arm"


def _scope_words(on: tuple[str, ...], kind: str, st) -> str:
    """`on bodies` or `on every images arm (faces, bodies)`."""
    if on:
        return f"on {_words(on)}"
    every = "every images arm" if kind in IMAGES_ONLY else "every arm"
    return f"on {every} ({_words(effective(on, kind, st))})"


def _find(node: Any, name: str, fields: tuple[str, ...] = ()) -> Any:
    """The first Ident/Name called `name` under `node` (only inside `fields` when given), else None."""
    if isinstance(node, (ast.Ident, ast.Name)):
        return node if node.name == name and not fields else None
    if isinstance(node, tuple):
        for x in node:
            hit = _find(x, name, fields)
            if hit is not None:
                return hit
        return None
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        for f in dataclasses.fields(node):
            if f.name == "span":
                continue
            v = getattr(node, f.name)
            hit = _find(v, name, () if f.name in fields else fields)
            if hit is not None:
                return hit
    return None


# ---------------------------------------------------------------- declarations


def scopes_pass(module: ast.Module, st) -> None:
    """Regions cover their users (E0531); validations and selections pair declarations that share an arm."""
    for d in module.decls:
        name = getattr(getattr(d, "name", None), "name", None)
        if st.decls.table.get(name, (None, None))[1] is not d:  # a repeated name (E0201) or no name
            continue
        if isinstance(d, ast.RegionDecl) and d.name.name in st.regions:
            uses = st.regions[d.name.name].depends_on
            on, kind = st.regions[d.name.name].on, "region"
        elif isinstance(d, (ast.MeasureDecl, ast.CovariateDecl)) and d.name.name in st.measures:
            m = st.measures[d.name.name]
            uses, on, kind = ((m.region,) if m.region else ()), m.on, m.role
        elif isinstance(d, (ast.OperatorDecl, ast.PlaceboDecl)) and d.name.name in st.operators:
            o = st.operators[d.name.name]
            uses, on, kind = ((o.region,) if o.region else ()), o.on, ("placebo" if o.placebo_of else "operator")
        else:
            continue
        runs = effective(on, kind, st)
        for r in uses:
            region = st.regions.get(r)
            if region is None or not region.on:
                continue
            missing = [a for a in runs if a not in region.on]
            if missing:
                st.sink.emit("E0531", _find(d, r) or d.name,
                             f"{kind} `{d.name.name}` runs {_scope_words(on, kind, st)}, but its region `{r}` "
                             f"is computed only on {_words(region.on)}, not on {_words(missing)}",
                             f"scope `{d.name.name}` `on {_words(a for a in runs if a in region.on)}`, or add "
                             f"{_words(missing)} to the scope of region `{r}`"
                             if any(a in region.on for a in runs) else
                             f"add {_words(missing)} to the scope of region `{r}`, or use another region")
    for d in module.decls:
        if isinstance(d, ast.ValidateDecl):
            m, o = st.measures.get(d.measure.name), st.operators.get(d.operator.name)
            _share_arm(st, "E0532", d, m, o, f"`validate {d.measure.name} under {d.operator.name}`",
                       "the validation fits the measure along the operator's doses on the arms both run on")
        elif isinstance(d, ast.SelectDecl) and d.operator is not None and d.name.name in st.selections:
            m, o = st.measures.get(d.measure.name), st.operators.get(d.operator.name)
            _share_arm(st, "E0533", d, m, o, f"selection `{d.name.name}` (`best_of {d.n.text} under "
                       f"{d.operator.name} by {d.measure.name}`)",
                       "it picks among the operator's dose variants by the measure, on one arm at a time")


def _share_arm(st, code: str, d: Any, m: ir.MeasureIR | None, o: ir.OperatorIR | None, what: str,
               why: str) -> None:
    if m is None or o is None or not (m.on or o.on):
        return
    m_kind, o_kind = m.role, "placebo" if o.placebo_of else "operator"
    if any(a in effective(o.on, o_kind, st) for a in effective(m.on, m_kind, st)):
        return
    st.sink.emit(code, d, f"{what} pairs {m_kind} `{m.name}` ({_scope_words(m.on, m_kind, st)}) with {o_kind} "
                 f"`{o.name}` ({_scope_words(o.on, o_kind, st)}): they share no arm", f"{why}; give `{m.name}` and `{o.name}` "
                 "an arm in common")


# ---------------------------------------------------------------- claims


def covers(st, scorer: str, arms: Iterable[str]) -> bool:
    """Whether `scorer` is in scope on every arm of `arms` (what `for each scorer` expands to)."""
    s = st.scorers.get(scorer)
    return s is not None and all(in_scope(s.on, a) for a in arms)


def measure_covers(st, measure: str, arms: Iterable[str]) -> bool:
    """Whether a measure or covariate is computed on every arm of `arms` (the axis rules 3 and 4)."""
    m = st.measures.get(measure)
    return m is not None and all(in_scope(m.on, a) for a in arms)


def no_scorer(st, arms: tuple[str, ...], node: Any, claim: ast.Claim) -> None:
    """E0534: `for each scorer` (or no `for`) finds no scorer in scope on `arms`."""
    scoped = ", ".join(f"`{s.name}` on {_words(s.on)}" for s in st.scorers.values() if s.on)
    where = f"arm `{arms[0]}`" if len(arms) == 1 else f"arms {_words(arms)} together"
    what = "`for each scorer`" if isinstance(claim.scorers, ast.EachScorer) else \
        "this claim (no `for`: every scorer in scope)"
    st.sink.emit("E0534", node, f"{what} finds no scorer in scope on {where}: {scoped}",
                 f"add {_words(arms)} to a scorer's scope, or remove {_words(arms)} from this claim")


def _named(stat: ir.StatCallIR, st) -> list[tuple[str, str]]:
    """(kind, name) of every operator, placebo, measure and covariate a statistic reads, its selections' too."""
    out: list[tuple[str, str]] = []
    r = reads(stat, cast(ir.AuditIR, SimpleNamespace(selections=st.selections)))  # reads looks at selections only
    out += [("operator", o) for o in r.operators if o != ORIGINAL]
    out += [("measure", m) for _, m in r.measures]
    registry.load_plugins()
    for call in ir.walk_stats(stat):  # also what `reads` leaves out (a measure named without an operator)
        if call.name not in registry.statistics:
            continue
        for spec in fields_of(registry.statistics.get(call.name).params).values():
            v = call.params.get(spec.name)
            names = (v,) if isinstance(v, str) else tuple(x for x in v if isinstance(x, str)) \
                if isinstance(v, list) else ()
            for n in names:
                if spec.ref == "operator":
                    out.append(("operator", n))
                elif spec.ref in ("measure", "covariate"):
                    out.append(("measure", n))
                elif spec.ref == "selection" and n in st.selections:
                    sel = st.selections[n]
                    out += [("operator", sel.operator)] if sel.operator else []
                    out.append(("measure", sel.measure))
    return list(dict.fromkeys(out))


def check_cells(cells: list[ir.CellIR], claim: ast.Claim, st) -> None:
    """E0535/E0536: a cell reading, on one of its arms, a scorer or declaration scoped elsewhere."""
    for cell in cells:
        for arm, scorer, stat in cell.parts():
            s = st.scorers.get(scorer)
            if s is not None and not in_scope(s.on, arm):
                node = _find(claim, scorer, ("scorers",)) or claim
                st.sink.emit("E0535", node, f"scorer `{scorer}` is scoped on {_words(s.on)}, so it scores "
                             f"nothing on `{arm}`", f"claim it on {_words(s.on)}, or add `{arm}` to the scope "
                             f"of `{scorer}`: `scorer {scorer} = ... on {_words(s.on + (arm,))}`")
            named = _named(stat, st)
            if cell.axis is not None:
                named += [("measure", cell.axis[0]), ("operator", cell.axis[1])]
            for kind, name in dict.fromkeys(named):
                decl = st.operators.get(name) if kind == "operator" else st.measures.get(name)
                if decl is None or in_scope(decl.on, arm):
                    continue
                word = st.decls.kind_of(name) or kind
                node = _find(claim, arm, ("arms",)) or _find(claim, arm) or claim
                st.sink.emit("E0536", node, f"`{stat.name}` on `{arm}` reads {word} `{name}`, which runs only "
                             f"on {_words(decl.on)}", f"claim it on {_words(decl.on)}, or add `{arm}` to the "
                             f"scope of `{name}`")
