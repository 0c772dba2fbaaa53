"""Hypotheses → cells (claim × arm × scorer), with every statistic's needs checked.

A claim is a statistic compared with a threshold (`θ > t`, `θ < t`,
`abs(θ) < δ`, `θ within [a, b]`) or a statistic that decides itself
(`transfers(...)`, `homogeneous(...)`). What each statistic needs from its
arm is declared in the registry (`meta["needs"]`, see
`scoreaudit.plugins.statistics`) and checked here per arm, so a problem is
reported once at the argument or arm that causes it, not once per scorer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scoreaudit import registry
from scoreaudit.compiler import ir
from scoreaudit.compiler.comparisons import check_arm, check_combination
from scoreaudit.compiler.doses import dose_key
from scoreaudit.compiler.params import Bound, bind, fields_of
from scoreaudit.compiler.resolve import plugin_entry
from scoreaudit.compiler.scopes import check_cells, covers, measure_covers, no_scorer
from scoreaudit.compiler.values import text
from scoreaudit.diagnostics import did_you_mean
from scoreaudit.grammar import ast


@dataclass
class Lowered:
    """A checked statistic call (and its nested statistic)."""

    entry: registry.PluginEntry
    bound: Bound
    ir: ir.StatCallIR
    inner: Lowered | None
    extra: dict | None = None  # further nested statistics by field (`decompose(..., via: ...)`)

    @property
    def name(self) -> str:
        return self.entry.name

    def refs(self, kind: str) -> list[tuple[str, str]]:
        """(field, value) of every parameter that names a declaration of `kind`, in field order."""
        out = []
        for spec in fields_of(self.entry.params).values():
            v = self.bound.params.get(spec.name)
            if spec.ref == kind and isinstance(v, str) and (spec.name, v) not in out:
                out.append((spec.name, v))
        return out


def _has_stat_field(entry: registry.PluginEntry) -> str | None:
    for spec in fields_of(entry.params).values():
        if spec.ref == "statistic":
            return spec.spelled
    return None


def lower_stat(call: ast.Call, st, nested: bool = False) -> tuple[Lowered | None, bool]:
    sink = st.sink
    entry = plugin_entry(call, "statistic", st, "a hypothesis")
    if entry is None:
        return None, False
    if entry.meta.get("validation"):
        sink.emit("E0607", call.func, f"`{entry.name}` checks a measure and belongs in a `validate` statement, "
                  "not in a hypothesis", f"write `validate MEASURE under OPERATOR: {entry.name} >= 0.5`")
        return None, False
    if nested and (entry.meta.get("returns") == "claim" or entry.meta.get("scope") == "cross_arm"):
        sink.emit("E0608", call.func, f"`{entry.name}` cannot be nested inside another statistic",
                  "nest a statistic that returns a number, e.g. `asymmetry(light)`")
        return None, False
    # a combinator (`decompose`) takes statistics even when it is itself nested (`share(decompose(...))`)
    inner_hook = None if nested and not entry.meta.get("combines") else (lambda c: lower_stat(c, st, nested=True))
    bound = bind(call, entry, st.decls, sink, lower_stat=inner_hook)
    if bound is None:
        return None, False
    stat_field = _has_stat_field(entry)
    if stat_field and bound.inner is None:
        sink.emit("E0608", call, f"`{entry.name}` needs a statistic to judge",
                  f"write e.g. `{entry.name}(asymmetry(light), ...)`")
        return None, False
    inner = bound.inner
    extra = {f: low for f, low in bound.inners.items() if low is not inner}
    params = {**bound.params, **{f: low.ir.model_dump(mode="json") for f, low in extra.items()}}
    stat = ir.StatCallIR(name=entry.name, version=entry.version, params=params,
                         inner=inner.ir if inner is not None else None)
    low = Lowered(entry=entry, bound=bound, ir=stat, inner=inner, extra=extra or None)
    if not check_combination(low, sink):
        return None, False
    return low, True


# ---------------------------------------------------------------- tests


def make_test(expr: Any, entry: registry.PluginEntry, sink) -> ir.TestIR | None:
    returns = entry.meta.get("returns", "number")
    claim_text = text(expr)
    if isinstance(expr, ast.Bare):
        if returns != "claim":
            sink.emit("E0601", expr, f"`{entry.name}` returns a number; a claim must compare it with a threshold",
                      f"write e.g. `{text(expr.call)} > 0` or `abs({text(expr.call)}) < 0.05`")
            return None
        return ir.TestIR(kind="claim", text=claim_text)
    left = expr.left
    is_abs = isinstance(left, ast.Abs)
    call = left.call if is_abs else left
    if returns == "claim":
        sink.emit("E0602", expr, f"`{entry.name}` decides a claim itself and cannot be compared with a number",
                  f"write the claim on its own: `{text(call)}`")
        return None
    if isinstance(expr, ast.Within):
        if is_abs:
            sink.emit("E0604", left, "`abs(...) within [a, b]` is not a test this language runs",
                      f"test the signed value: `{text(call)} within [a, b]`")
            return None
        if not expr.low.value < expr.high.value:
            sink.emit("E0603", expr, f"`within [{expr.low.text}, {expr.high.text}]` needs the lower bound first "
                      "and strictly below the upper one",
                      f"write `within [{expr.high.text}, {expr.low.text}]`" if expr.high.value < expr.low.value
                      else "give an interval of positive width")
            return None
        return ir.TestIR(kind="equivalence", low=float(expr.low.value), high=float(expr.high.value),
                         strict=False, text=claim_text)
    op, t = expr.op, float(expr.right.value)
    if is_abs:
        if op in (">", ">="):
            sink.emit("E0604", expr, f"`abs(θ) {op} t` cannot be pre-registered as one test",
                      f"test one direction (`{text(call)} > {expr.right.text}` or `{text(call)} < -{expr.right.text}`),"
                      f" or claim equivalence with `abs({text(call)}) < δ` or `{text(call)} within [a, b]`")
            return None
        if t <= 0:
            sink.emit("E0609", expr.right, f"`abs(θ) {op} {expr.right.text}`: the equivalence margin must be positive",
                      "write e.g. `abs(θ) < 0.05`")
            return None
        return ir.TestIR(kind="equivalence", low=-t, high=t, strict=op == "<", text=claim_text)
    kind = "greater" if op in (">", ">=") else "less"
    return ir.TestIR(kind=kind, threshold=t, strict=op in (">", "<"), text=claim_text)


# ---------------------------------------------------------------- needs


def _dose_range(op) -> tuple[float, float]:
    """The operator plugin's accepted dose range (registry meta); unbounded when it declares none."""
    from scoreaudit.registry import operators

    entry = operators.get(op.call.plugin) if op.call.plugin in operators else None
    rng = (entry.meta.get("dose_range") if entry is not None else None) or (float("-inf"), float("inf"))
    return float(rng[0]), float(rng[1])


def _fmt_doses(ds) -> str:
    return ", ".join(f"{d:g}" for d in ds)


def _one_sided(op) -> bool:
    """Every dose other than the identity lies on one side of it (blur, JPEG, noise)."""
    off = [d - op.identity for d in op.doses if abs(d - op.identity) > 1e-9]
    return bool(off) and (all(x > 0 for x in off) or all(x < 0 for x in off))


def _null_text(v) -> str:
    return "none" if v is None else f"{v:g}"


def check_nulls(low: Lowered, expr: Any, test: ir.TestIR, st) -> bool:
    """Claims and combinators must test a statistic against its own null value (registry `null`)."""
    sink = st.sink
    ok = True
    null = low.entry.meta.get("null")
    if test.kind in ("greater", "less") and test.threshold == 0 and null != 0.0 and low.entry.meta.get("returns") != "claim":
        sink.emit("E0424", expr.right, f"`{low.name}` has null value {_null_text(null)}, so `{text(expr)}` tests it "
                  "against the wrong value (0 is not its no-effect value)",
                  f"compare with its null value, e.g. `{text(expr.left)} {expr.op} {_null_text(null) if null is not None else 'THRESHOLD'}`")
        ok = False
    if test.kind == "equivalence" and isinstance(getattr(expr, "left", None), ast.Abs) and null != 0.0:
        sink.emit("E0424", expr.left, f"`abs(θ) < δ` tests `{low.name}` against 0, but its null value is "
                  f"{_null_text(null)}", f"write the interval around its null value: `{text(expr.left.call)} within "
                  f"[a, b]`")
        ok = False
    if "inner_null" in low.entry.meta.get("needs", ()) and low.inner is not None \
            and low.inner.entry.meta.get("null") is None:
        sink.emit("E0425", low.bound.arg_node("statistic") or low.bound.call,
                  f"`{low.inner.name}` has no null value, so its transfer ratio has no meaning",
                  "transfer a statistic with a no-effect value (an effect, a correlation, an accuracy)")
        ok = False
    return ok


def check_needs(low: Lowered, arm_name: str, arm_node: Any, st) -> bool:
    """Check what `low` (and its nested statistic) needs from arm `arm_name`; False after errors."""
    sink = st.sink
    arm = st.arms.get(arm_name)
    if arm is None:
        return False
    ok = True
    name = low.name
    needs = tuple(low.entry.meta.get("needs", ()))
    params = low.bound.params
    if "images" in needs and arm.source != "images":
        sink.emit("E0501", arm_node, f"`{name}` needs an images arm, but `{arm_name}` is a pairs arm",
                  f"run `{name}` on an `images(...)` arm; pairs arms take `pairwise_accuracy()` and `mean_gap()`")
        ok = False
    if "pairs" in needs and arm.source != "pairs":
        pairs = [n for n, x in st.arms.items() if x.source == "pairs"]
        sink.emit("E0502", arm_node, f"`{name}` needs a pairs arm, but `{arm_name}` is an images arm",
                  f"use a `pairs(...)` arm: {', '.join(pairs)}" if pairs else
                  'declare one: `arm p = pairs("pairs.csv", preferred: a, other: b)`')
        ok = False
    if "symmetric" in needs:
        op = st.operators.get(params.get("operator"))
        if op is not None and not op.symmetric:
            missing = sorted({dose_key(2 * op.identity - d) for d in op.doses} - set(op.doses))
            lo, hi = _dose_range(op)
            possible = [d for d in missing if lo <= d <= hi]  # never suggest a dose the operator refuses
            if possible:
                help_text = f"add the mirrored doses {_fmt_doses(possible)} to `{op.placebo_of or op.name}`"
                if len(possible) < len(missing):
                    help_text += (f" and drop the doses whose mirror lies outside the operator's range "
                                  f"[{lo:g}, {hi:g}]")
            elif missing:
                help_text = (f"`{op.name}` cannot take doses below and above {op.identity:g} (its range is "
                             f"[{lo:g}, {hi:g}]); use a statistic that needs no mirror, such as "
                             f"`curve({op.name}, {max(op.doses, key=lambda d: abs(d - op.identity)):g})`")
            else:
                help_text = f"add doses on both sides of {op.identity:g}"
            sink.emit("E0410", low.bound.arg_node("operator"),
                      f"`{name}` needs doses symmetric around the identity {op.identity:g}, but `{op.name}` has "
                      f"doses {_fmt_doses(op.doses)}", help_text)
            ok = False
    if "fi_doses" in needs:
        op = st.operators.get(params.get("operator"))
        if op is not None and not op.symmetric and not _one_sided(op):
            missing = sorted({dose_key(2 * op.identity - d) for d in op.doses} - {dose_key(d) for d in op.doses})
            sink.emit("E0420", low.bound.arg_node("operator"),
                      f"`{name}` needs doses symmetric around the identity {op.identity:g} (fidelity index) or all "
                      f"on one side of it (penalty index), but `{op.name}` has doses {_fmt_doses(op.doses)}",
                      f"add the mirrored doses {_fmt_doses(missing)}, or keep the doses on one side of "
                      f"{op.identity:g}")
            ok = False
    if "dose" in needs and params.get("dose") is not None:
        op = st.operators.get(params.get("operator"))
        d = float(params["dose"])
        if op is not None and not any(abs(d - x) <= 1e-9 for x in op.doses):
            sink.emit("E0421", low.bound.arg_node("dose"), f"`{op.name}` has no dose {d:g} "
                      f"(its doses: {_fmt_doses(op.doses)})", f"name one of the doses of `{op.name}`, or add {d:g} "
                      "to its dose list")
            ok = False
    if "dose_selection" in needs:
        sel = st.selections.get(params.get("selection"))
        if sel is not None and sel.operator is None:
            sink.emit("E0422", low.bound.arg_node("selection"), f"`{name}` compares the picked dose "
                      f"with its mirror, but selection `{sel.name}` picks among images, not doses",
                      f"select among dose variants: `best_of {sel.n} under OPERATOR by {sel.measure}`, or use "
                      f"`net_drift({sel.name})`")
            ok = False
        elif sel is not None and sel.operator in st.operators and not st.operators[sel.operator].symmetric:
            op = st.operators[sel.operator]
            sink.emit("E0423", low.bound.arg_node("selection"), f"`{name}` needs doses symmetric around "
                      f"the identity, but `{op.name}` has doses {_fmt_doses(op.doses)}",
                      f"add the mirrored doses to `{op.name}`, or use `net_drift({sel.name})`")
            ok = False
    if "placebo" in needs:
        pl, target = params.get("placebo"), params.get("operator")
        op = st.operators.get(pl)
        if op is not None and op.placebo_of != target:
            cands = [n for n, o in st.operators.items() if o.placebo_of == target]
            sink.emit("E0411", low.bound.arg_node("placebo"), f"`{pl}` is not a placebo of `{target}`",
                      f"use {', '.join(f'`{c}`' for c in cands)}" if cands else
                      f"declare one: `placebo {target}_rest = ... of {target}`")
            ok = False
    if "cluster" in needs and arm.cluster is None and arm.source == "images":
        sink.emit("E0503", arm_node, f"`{name}` needs clusters, but arm `{arm_name}` declares no `cluster` column",
                  f"add `cluster: COLUMN` (e.g. a prompt or counterfactual-set id) to arm `{arm_name}`")
        ok = False
    if "factors" in needs or low.bound.factors:
        for fname, node in low.bound.factors:
            if fname not in arm.factors:
                guess = did_you_mean(fname, arm.factors)
                if not arm.factors:
                    help = f"add `factors: [{fname}]` to arm `{arm_name}`"
                else:
                    help = (f"did you mean '{guess}'?" if guess
                            else f"factors of `{arm_name}`: {', '.join(arm.factors)}")
                sink.emit("E0504", node, f"`{fname}` is not a factor of arm `{arm_name}`", help)
                ok = False
    for _, sel_name in low.refs("selection"):
        sel = st.selections.get(sel_name)
        if sel is not None and sel.operator is None and arm.cluster is None:
            sink.emit("E0506", arm_node, f"selection `{sel_name}` draws candidates within clusters, but arm "
                      f"`{arm_name}` declares no `cluster` column",
                      f"add `cluster: COLUMN` to arm `{arm_name}`, or select among dose variants with "
                      f"`best_of {sel.n} under OPERATOR by {sel.measure}`")
            ok = False
    ok = check_arm(low, arm_name, arm_node, st) and ok
    for nested in [low.inner, *(low.extra or {}).values()]:
        if nested is not None:
            ok = check_needs(nested, arm_name, arm_node, st) and ok
    return ok


def check_prompt(scorer: ir.ScorerIR, arm: ir.ArmIR, node: Any, st) -> bool:
    """What a scorer needs from an arm it is read on: its data columns (E0807), a prompt (E0507)."""
    from scoreaudit.compiler.data_columns import check_data_columns

    if not check_data_columns(scorer, arm, st):
        return False
    if not scorer.needs_prompt or scorer.call.params.get("prompt") is not None:
        return True
    if arm.call.params.get("prompt") is not None or registry.generated_arm(arm.call.plugin):  # generated: its prompts
        return True
    st.sink.emit("E0507", node, f"scorer `{scorer.name}` needs a prompt, but neither it nor arm `{arm.name}` "
                 "gives one", f'add `prompt: "..."` or `prompt: column(COLUMN)` to scorer `{scorer.name}`, '
                 f"or `prompt: COLUMN` to arm `{arm.name}`")
    return False


# ---------------------------------------------------------------- axis


def axis_of(low: Lowered, st, arms: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(measure, operator) the statistic is about (spec/language.md, "Axes").

    A measure the rules find on their own (rules 3 and 4) must be in scope on every arm of `arms`.
    """
    if low.inner is not None:
        return axis_of(low.inner, st, arms)
    operator = next((v for _, v in low.refs("operator")), None)
    measure = next((v for _, v in low.refs("measure")), None)
    for _, sel_name in low.refs("selection"):
        sel = st.selections.get(sel_name)
        if sel is not None:
            operator = operator or sel.operator
            measure = measure or sel.measure
    if operator is None:
        return None
    if measure is not None:
        return (measure, operator)
    for v in st.validations:
        if v.operator == operator and measure_covers(st, v.measure, arms):
            return (v.measure, operator)
    op = st.operators.get(operator)
    if op is not None and op.region is not None:
        for m in st.measures.values():
            if m.role == "measure" and m.region == op.region and measure_covers(st, m.name, arms):
                return (m.name, operator)
    return None


# ---------------------------------------------------------------- claims


def _stratum(expr: Any) -> ast.Reading | None:
    """The `where` reading of a claim about one stratum (`θ where race = "Black" > 0`), else None."""
    left = getattr(expr, "left", None)
    inner = left.call if isinstance(left, ast.Abs) else left
    return inner if isinstance(inner, ast.Reading) else None


def _stat_call(expr: Any) -> ast.Call:
    if isinstance(expr, ast.Bare):
        return expr.call
    left = expr.left
    inner = left.call if isinstance(left, ast.Abs) else left
    call = inner.call if isinstance(inner, ast.Reading) else inner
    assert isinstance(call, ast.Call), f"a claim's left side is a statistic call, not {type(call).__name__}"
    return call


def lower_claim(h: ast.HypothesisDecl, k: int, claim: ast.Claim, st, multi: bool) -> list[ir.CellIR] | None:
    """The cells of a claim that compares a statistic with a number (or is one: `transfers(...)`)."""
    sink = st.sink
    before = sink.error_count()
    low, ok = lower_stat(_stat_call(claim.expr), st)
    test = make_test(claim.expr, low.entry, sink) if low is not None else None
    if test is not None and not check_nulls(low, claim.expr, test, st):
        test = None
    if test is not None and "margin" in low.entry.meta.get("needs", ()) and low.bound.params.get("margin") is None:
        sink.emit("W0420", low.bound.call, f"`{low.name}(...)` without `margin:` can be refuted or inconclusive but "
                  "never supported: a non-significant test is absence of evidence, not evidence of homogeneity",
                  f"add an equivalence margin in the statistic's units, e.g. `{text(low.bound.call)[:-1]}, margin: 0.1)`")
    scope = low.entry.meta.get("scope", "arm") if low is not None else "arm"
    stratum = _stratum(claim.expr)
    if scope == "probe":  # a probe's statistic: its own scorer, no arm (compiler/probes.py); `where`: its prompts
        from scoreaudit.compiler.probes import lower_probe_claim

        return lower_probe_claim(h, k, claim, low, test, ok, st, multi, stratum)

    # scorers (`for each scorer`, or no `for`: per arm, the scorers in scope there)
    implicit = isinstance(claim.scorers, ast.EachScorer) or not claim.scorers
    if implicit:
        scorers = list(st.scorers)
        if not st.decls.names(["scorer"]):
            sink.emit("E0610", claim.scorers if isinstance(claim.scorers, ast.EachScorer) else claim.expr,
                      "this claim has no scorer to test: the spec declares none",
                      "declare one, e.g. `scorer laion = laion_aesthetic()`")
        scorer_nodes = {s: claim.scorers if isinstance(claim.scorers, ast.EachScorer) else claim.expr
                        for s in scorers}
    else:
        scorer_nodes = _resolve_listed(claim.scorers, "scorer", f"(after `for` in hypothesis `{h.name.name}`)",
                                       st, sink)
        scorers = list(scorer_nodes)

    # arms
    arm_nodes: dict[str, Any] = {}
    if scope == "cross_arm":
        if claim.arms:
            sink.emit("E0606", claim.arms[0], f"`{low.name}` reads its arms from `from:` and `to:`; "
                      "it takes no `on` clause", "remove `on ...`")
        if low is not None:
            for fname, v in low.refs("arm"):
                arm_nodes[v] = low.bound.arg_node(fname)
    else:
        if not claim.arms and low is not None:
            arms = ", ".join(st.decls.names(["arm"])) or "none declared"
            sink.emit("E0605", claim.expr, f"`{low.name}` is computed on an arm, but this claim names none",
                      f"add `on ARM` after the claim (arms: {arms})")
        arm_nodes.update(_resolve_listed(claim.arms, "arm", f"(after `on` in hypothesis `{h.name.name}`)", st, sink))

    if low is None or test is None or not ok:
        return None
    if scope == "cross_arm":
        arm_list = list(arm_nodes)
        if len(arm_list) == 2 and all(x in st.arms for x in arm_list):
            src, dst = (st.arms[x] for x in arm_list)
            if "kinds_differ" in low.entry.meta.get("needs", ()) and src.kind == dst.kind:
                sink.emit("E0505", low.bound.call, f"`{low.name}` compares arms of different kinds, but "
                          f"`{src.name}` and `{dst.name}` are both {src.kind}",
                          "transfer from a synthetic arm to a real one, e.g. `from: synthetic, to: real`")
        for a, node in arm_nodes.items():
            if low.inner is not None:
                check_needs(low.inner, a, node, st)
        for s in scorers:
            if implicit and not covers(st, s, arm_nodes):
                continue
            for a in arm_nodes:
                if a in st.arms and s in st.scorers:
                    check_prompt(st.scorers[s], st.arms[a], scorer_nodes[s], st)
    else:
        for a, node in arm_nodes.items():
            check_needs(low, a, node, st)
            if stratum is not None:
                from scoreaudit.compiler.comparisons import check_where

                check_where(stratum, a, st)
            for s in scorers:
                if implicit and not covers(st, s, (a,)):
                    continue
                if s in st.scorers and a in st.arms:  # an arm with errors is not in st.arms
                    check_prompt(st.scorers[s], st.arms[a], scorer_nodes[s], st)
    if sink.error_count() > before or any(a not in st.arms for a in arm_nodes) or \
            any(s not in st.scorers for s in scorers):
        return None

    axis = axis_of(low, st, tuple(arm_nodes))
    prefix = f"{h.name.name}.{k + 1}" if multi else h.name.name
    cells = []
    groups = [(None, tuple(arm_nodes))] if scope == "cross_arm" else [(a, (a,)) for a in arm_nodes]
    if implicit and scorers:
        for arm, arms in groups:
            if not any(covers(st, s, arms) for s in scorers):
                no_scorer(st, arms, arm_nodes[arms[0]] if arm is not None else claim, claim)
    rows = ()
    if stratum is not None:
        from scoreaudit.compiler.comparisons import _where_value

        rows = tuple((w.column.name, _where_value(w.value)) for w in stratum.where)
    suffix = "".join(f"@{c}={v}" for c, v in rows)
    for s in scorers:
        for arm, arms in groups:
            if implicit and not covers(st, s, arms):
                continue
            where = arm if arm is not None else "->".join(arms)
            cells.append(ir.CellIR(id=f"{prefix}/{s}/{where}{suffix}", hypothesis=h.name.name, claim=k, scorer=s,
                                   arm=arm, arms=arms, statistic=low.ir, test=test, axis=axis, where=rows))
    check_cells(cells, claim, st)
    if sink.error_count() > before:
        return None
    return cells


def _resolve_listed(idents, kind: str, where: str, st, sink) -> dict[str, Any]:
    """Names after `on` / `for`, resolved in order (unknown ones reported); a repeat warns (W0601) once."""
    out: dict[str, Any] = {}
    for ident in idents:
        name = st.decls.resolve(ident, kind, sink, where)
        if name is None:
            continue
        if name in out:
            sink.emit("W0601", ident, f"{kind} `{name}` is listed twice in this claim", "list it once")
            continue
        out[name] = ident
    return out
