"""Semantic analysis: syntax tree → typed IR, with every problem as a diagnostic.

`check(module, source, path)` runs small passes in a fixed order (collect
declarations, settings, scorers, arms, regions, measures, operators,
placebos, validations, selections, hypotheses, report). Each pass reads the
syntax tree and what earlier passes produced, reports problems to one
`Sink`, and carries on, so a file with several mistakes reports all of them.
The IR is built only when there is no error. Codes are catalogued in
`scoreaudit.compiler.codes` (rendered to spec/diagnostics.md).
"""

from __future__ import annotations

import hashlib
import traceback
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from scoreaudit import registry
from scoreaudit.compiler import ir, settings as setting_defs
from scoreaudit.compiler.claims import lower_hypothesis
from scoreaudit.compiler.doses import DoseSet, check_doses, expand
from scoreaudit.compiler.params import Bound, bind, closest_choice, fields_of
from scoreaudit.compiler.probes import probes_pass
from scoreaudit.compiler.resolve import DECL_KINDS, Decls, Sink, a, plugin_entry
from scoreaudit.compiler.scopes import lower_scope, scopes_pass
from scoreaudit.compiler.values import number, string_literals, text
from scoreaudit.diagnostics import Diagnostic, did_you_mean
from scoreaudit.gcpause import paused_gc
from scoreaudit.grammar import ast

SUPPORTED_VERSIONS = (1,)


@dataclass
class State:
    """What the passes have produced so far (IR parts by name, in declaration order)."""

    sink: Sink
    path: str = ""  # the spec's path (manifests named by arms are read relative to its folder)
    decls: Decls = field(default_factory=Decls)
    settings: ir.Settings | None = None
    report: ir.ReportIR = field(default_factory=ir.ReportIR)
    scorers: dict[str, ir.ScorerIR] = field(default_factory=dict)
    arms: dict[str, ir.ArmIR] = field(default_factory=dict)
    regions: dict[str, ir.RegionIR] = field(default_factory=dict)
    measures: dict[str, ir.MeasureIR] = field(default_factory=dict)
    operators: dict[str, ir.OperatorIR] = field(default_factory=dict)
    dosesets: dict[str, DoseSet] = field(default_factory=dict)
    validations: list[ir.ValidationIR] = field(default_factory=list)
    selections: dict[str, ir.SelectionIR] = field(default_factory=dict)
    hypotheses: list[ir.HypothesisIR] = field(default_factory=list)
    probes: dict[str, ir.ProbeIR] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)  # declarations that failed (no cascade errors)


def check(module: ast.Module, source: str, path: str) -> tuple[ir.AuditIR | None, list[Diagnostic]]:
    """Lower a parsed module to the IR; never raises for a parsed module."""
    with paused_gc():
        return _check(module, source, path)


def _check(module: ast.Module, source: str, path: str) -> tuple[ir.AuditIR | None, list[Diagnostic]]:
    sink = Sink(path)
    try:
        registry.load_plugins()
        st = State(sink=sink, path=path)
        for p in PASSES:
            p(module, st)
        sink.items.sort(key=_position)
        if sink.has_errors:
            return None, sink.items
        audit = ir.AuditIR(
            settings=st.settings,
            scorers=st.scorers,
            arms=st.arms,
            regions=st.regions,
            measures=st.measures,
            operators=st.operators,
            validations=tuple(st.validations),
            selections=st.selections,
            hypotheses=tuple(st.hypotheses),
            probes=st.probes,
            report=st.report,
            source_path=path,
            source_hash=hashlib.sha256(source.encode("utf-8")).hexdigest(),
        )
        return audit, sink.items
    except Exception as exc:  # noqa: BLE001 - an internal bug must still not crash `scoreaudit check`
        sink.emit("E0001", None, f"internal compiler error: {type(exc).__name__}: {exc}",
                  "please report this with the spec that caused it",
                  notes=tuple(traceback.format_exc().strip().splitlines()[-3:]))
        return None, sink.items


def _position(d: Diagnostic) -> tuple[int, int]:
    """Source order (file-level diagnostics first), so output reads top to bottom."""
    return (d.span.line, d.span.column) if d.span is not None else (0, 0)


# ---------------------------------------------------------------- pass 1: declarations


def collect(module: ast.Module, st: State) -> None:
    audits = [d for d in module.decls if isinstance(d, ast.AuditBlock)]
    reports = [d for d in module.decls if isinstance(d, ast.ReportDecl)]
    if not audits:
        st.sink.emit("E0207", None, "the spec has no `audit \"title\" { ... }` block",
                     'start the file with e.g. `audit "My audit" { version: 1  seed: 1 }`')
    for extra, what in ((audits[1:], "audit"), (reports[1:], "report")):
        for d in extra:
            st.sink.emit("E0208", d, f"more than one `{what}` block", f"merge the settings into the first `{what}` block")
    for d in module.decls:
        kind = DECL_KINDS.get(type(d))
        if kind is None:
            continue
        assert not isinstance(d, (ast.AuditBlock, ast.ReportDecl, ast.ValidateDecl)), "blocks have no DECL_KINDS entry"
        name = d.name.name
        if kind in ("operator", "placebo") and name == ir.ORIGINAL:
            st.sink.emit("E0206", d.name, f"`{ir.ORIGINAL}` is reserved for the unaltered images",
                         f"rename the {kind}, e.g. `{name}_op`")
            st.broken.add(name)
        prev = st.decls.table.get(name)
        if prev is not None:
            line = getattr(getattr(prev[1], "span", None), "line", 0)
            where = f" on line {line}" if line else ""
            st.sink.emit("E0201", d.name, f"`{name}` is already declared{where} (as {a(prev[0])})",
                         "give each declaration its own name")
            continue
        st.decls.table[name] = (kind, d)


# ---------------------------------------------------------------- settings and report


def _setting_value(v: Any) -> Any:
    if isinstance(v, ast.Number):
        return number(v)
    if isinstance(v, ast.String):
        return v.value
    if isinstance(v, (ast.Name, ast.Ident)):
        return v.name
    if isinstance(v, ast.ListValue):
        return [_setting_value(x) for x in v.items]
    return text(v)


def _known_settings(settings, allowed: list[str], where: str, listing: str, st: State) -> dict[str, ast.Setting]:
    """The block's settings by key, in order; unknown (E0306) and repeated (E0308) ones reported and dropped."""
    nodes: dict[str, ast.Setting] = {}
    for s in settings:
        key = s.key.name
        if key not in allowed:
            guess = did_you_mean(key, allowed)
            st.sink.emit("E0306", s.key, f"unknown setting `{key}` in the {where}",
                         f"did you mean '{guess}'?" if guess else f"{listing}: {', '.join(allowed)}")
            continue
        if key in nodes:
            st.sink.emit("E0308", s, f"setting `{key}` is given twice", "keep one of them")
            continue
        nodes[key] = s
    return nodes


BOOTSTRAP_ADVISED = 1000


def _setting_ranges(settings: ir.Settings, nodes: dict, st: State) -> None:
    """E0251 for a setting outside its range; W0250 for fewer bootstrap resamples than advised."""
    for key, bounds in setting_defs.RANGES.items():  # each setting's range is in its definition
        node = nodes.get(key)
        if node is None:
            continue
        if not bounds.contains(getattr(settings, key)):
            st.sink.emit("E0251", node.value, f"setting `{key}: {text(node.value)}` is out of range: "
                         f"it must be {bounds.text()}", f"write e.g. `{key}: {setting_defs.default(key)}`")
    node = nodes.get("bootstrap")
    if node is not None and setting_defs.RANGES["bootstrap"].contains(settings.bootstrap) \
            and settings.bootstrap < BOOTSTRAP_ADVISED:
        st.sink.emit("W0250", node.value, f"`bootstrap: {settings.bootstrap}` resamples give unstable confidence "
                     f"limits and p-values; at least {BOOTSTRAP_ADVISED} are advised",
                     f"write `bootstrap: {setting_defs.default('bootstrap')}` for the final run (fewer are fine for a quick look)")


def settings_pass(module: ast.Module, st: State) -> None:
    blocks = [d for d in module.decls if isinstance(d, ast.AuditBlock)]
    if not blocks:
        return
    block = blocks[0]
    allowed = list(setting_defs.NAMES)
    nodes = _known_settings(block.settings, allowed, "audit block", "settings", st)
    data: dict[str, Any] = {"title": block.title.value}
    data.update({key: _setting_value(s.value) for key, s in nodes.items()})
    ok = True
    while True:
        try:
            st.settings = ir.Settings.model_validate(data, strict=True)
            break
        except ValidationError as exc:
            ok = False
            bad = set()
            for err in exc.errors():
                key = str(err["loc"][0]) if err.get("loc") else ""
                node = nodes.get(key)
                bad.add(key)
                from scoreaudit.compiler.params import literal_choices

                choices = literal_choices(ir.Settings.model_fields[key].annotation) if key in ir.Settings.model_fields else ()
                help = None
                if choices:
                    guess = closest_choice(str(data.get(key)), choices)
                    help = f"did you mean '{guess}'?" if guess else f"`{key}` is one of: {', '.join(choices)}"
                else:
                    default = ir.Settings.model_fields[key].default if key in ir.Settings.model_fields else None
                    if default is not None:
                        help = f"write e.g. `{key}: {default}`"
                st.sink.emit("E0307", node.value if node else block, f"invalid value "
                             f"`{text(node.value) if node else data.get(key)}` for setting `{key}`: "
                             f"{err['msg'][0].lower() + err['msg'][1:]}", help)
            for key in bad:
                data.pop(key, None)
            if not bad or "title" in bad:
                break
    if ok and st.settings is not None:
        _setting_ranges(st.settings, nodes, st)
    if ok and st.settings is not None and st.settings.version not in SUPPORTED_VERSIONS:
        node = nodes["version"]
        st.sink.emit("E0309", node.value, f"language version {st.settings.version} is not supported by this scoreaudit",
                     f"supported: {', '.join(map(str, SUPPORTED_VERSIONS))}; write `version: 1`")
    if not ok:
        st.settings = None


def report_pass(module: ast.Module, st: State) -> None:
    blocks = [d for d in module.decls if isinstance(d, ast.ReportDecl)]
    if not blocks:
        return
    data: dict[str, Any] = {}
    nodes = _known_settings(blocks[0].settings, list(ir.ReportIR.model_fields), "report block", "report settings", st)
    for key, s in nodes.items():
        value = _setting_value(s.value)
        if key == "formats":
            value = tuple(value) if isinstance(value, list) else (value,)
        if key == "title" and not isinstance(s.value, ast.String):
            st.sink.emit("E0307", s.value, "the report title must be a quoted string",
                         f'write `title: "{text(s.value)}"`')
            continue
        data[key] = value
    try:
        st.report = ir.ReportIR.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            key = str(err["loc"][0])
            node = nodes.get(key)
            st.sink.emit("E0307", node.value if node else blocks[0], f"invalid value for report setting `{key}`: "
                         f"{err['msg'][0].lower() + err['msg'][1:]}", "formats: html, pdf")


# ---------------------------------------------------------------- plugin calls


def plugin_call(bound: Bound) -> ir.PluginCall:
    return ir.PluginCall(plugin=bound.entry.name, version=bound.entry.version, params=bound.params)


def _decls_of(module: ast.Module, cls: type) -> list:
    return [d for d in module.decls if isinstance(d, cls)]


def _first(module: ast.Module, st: State, cls: type) -> list:
    """Declarations of a class that are the first of their name (duplicates were reported)."""
    return [d for d in _decls_of(module, cls) if st.decls.table.get(d.name.name, (None, None))[1] is d]


def scorers_pass(module: ast.Module, st: State) -> None:
    for d in _first(module, st, ast.ScorerDecl):
        entry = plugin_entry(d.call, "scorer", st, f"scorer `{d.name.name}`")
        bound = entry and bind(d.call, entry, st.decls, st.sink)
        scope = lower_scope(d, "scorer", st)
        if not bound or scope is None:
            st.broken.add(d.name.name)
            continue
        st.scorers[d.name.name] = ir.ScorerIR(name=d.name.name, call=plugin_call(bound),
                                              needs_prompt=bool(entry.fact("needs_prompt")),
                                              label=d.label.value if d.label is not None else None, on=scope,
                                              span=d.name.span, literals=string_literals(d))


def arms_pass(module: ast.Module, st: State) -> None:
    for d in _first(module, st, ast.ArmDecl):
        entry = plugin_entry(d.call, "arm", st, f"arm `{d.name.name}`")
        bound = entry and bind(d.call, entry, st.decls, st.sink)
        if not bound:
            st.broken.add(d.name.name)
            continue
        p = bound.params
        if registry.generated_arm(entry.name):  # the images exist after the run's generate step
            if p.get("scheduler"):
                from scoreaudit.compiler.schedulers import check_scheduler

                if not check_scheduler(p["scheduler"], bound.arg_node("scheduler").value, st.sink,
                                       f"arm `{d.name.name}`"):
                    st.broken.add(d.name.name)
                    continue
            prompts = p.get("prompts")
            factors = tuple(prompts["factors"]) if isinstance(prompts, dict) else ()
            if p.get("score_prompt") is not None:
                from scoreaudit.compiler.prompts import check_score_prompt

                if not check_score_prompt(p["score_prompt"], factors, bound.arg_node("score_prompt").value, st.sink,
                                          f"arm `{d.name.name}`"):
                    st.broken.add(d.name.name)
                    continue
            st.arms[d.name.name] = ir.ArmIR(name=d.name.name, call=plugin_call(bound), source="images",
                                            kind=p.get("kind", "synthetic"), cluster="cluster", factors=factors,
                                            label=d.label.value if d.label is not None else None, span=d.name.span,
                                            literals=string_literals(d))
            continue
        strata = p.get("strata")
        strata = tuple(strata) if isinstance(strata, list) else ((strata,) if strata else ())
        st.arms[d.name.name] = ir.ArmIR(
            name=d.name.name, call=plugin_call(bound),
            source="pairs" if entry.meta.get("source", entry.name) == "pairs" else "images",
            kind=p.get("kind", "synthetic"), cluster=p.get("cluster"), strata=strata,
            factors=tuple(p.get("factors") or ()), label=d.label.value if d.label is not None else None,
            span=d.name.span, literals=string_literals(d),
        )


# ---------------------------------------------------------------- regions


def _region_refs(bound: Bound) -> list[tuple[str, Any]]:
    specs = {s.name: s for s in fields_of(bound.entry.params).values()}
    out = []
    for fname, arg in bound.args.items():
        if specs[fname].ref == "region" and isinstance(bound.params.get(fname), str):
            out.append((bound.params[fname], arg.value))
    return out


def lower_region(expr: Any, st: State, owner: str, deps: list[tuple[str, Any]]) -> ir.RegionExprIR | None:
    if isinstance(expr, ast.Call):
        entry = plugin_entry(expr, "region", st, f"region `{owner}`")
        bound = entry and bind(expr, entry, st.decls, st.sink)
        if not bound:
            return None
        deps.extend(_region_refs(bound))
        return ir.RegionCallIR(call=plugin_call(bound))
    if isinstance(expr, (ast.Name, ast.Ident)):
        if st.decls.kind_of(expr.name) is None and expr.name in registry.regions:
            st.sink.emit("E0203", expr, f"unknown region `{expr.name}` in region `{owner}`",
                         f"`{expr.name}` is a region plugin: call it, `{expr.name}()`")
            return None
        name = st.decls.resolve(expr, "region", st.sink, f"(in region `{owner}`)")
        if name is None:
            return None
        deps.append((name, expr))
        return ir.RegionRefIR(name=name)
    if isinstance(expr, ast.Not):
        inner = lower_region(expr.operand, st, owner, deps)
        return inner and ir.RegionNotIR(operand=inner)
    if isinstance(expr, ast.BinaryRegion):
        left = lower_region(expr.left, st, owner, deps)
        right = lower_region(expr.right, st, owner, deps)
        if left is None or right is None:
            return None
        return ir.RegionBinIR(op="and" if expr.op == "&" else "or", left=left, right=right)
    st.sink.emit("E0303", expr, f"`{text(expr)}` is not a region expression",
                 "use a region call (`face()`), a region name, `not`, `&` or `|`")
    return None


def regions_pass(module: ast.Module, st: State) -> None:
    graph: dict[str, list[tuple[str, Any]]] = {}
    for d in _first(module, st, ast.RegionDecl):
        deps: list[tuple[str, Any]] = []
        expr = lower_region(d.expr, st, d.name.name, deps)
        graph[d.name.name] = deps
        scope = lower_scope(d, "region", st)
        if expr is None or scope is None:
            st.broken.add(d.name.name)
            continue
        order = list(dict.fromkeys(n for n, _ in deps))
        st.regions[d.name.name] = ir.RegionIR(name=d.name.name, expr=expr, depends_on=tuple(order), on=scope)
    _report_cycles(graph, st)


def _report_cycles(graph: dict[str, list[tuple[str, Any]]], st: State) -> None:
    """E0209 once per cycle, at the reference that closes it."""
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []
    reported: set[frozenset] = set()

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for dep, node in graph.get(n, []):
            if state.get(dep) == 1:
                cyc = stack[stack.index(dep):] + [dep]
                key = frozenset(cyc)
                if key not in reported:
                    reported.add(key)
                    chain = " → ".join(cyc)
                    msg = (f"region `{n}` refers to itself" if len(cyc) == 2
                           else f"region `{n}` refers to itself through {chain}")
                    st.sink.emit("E0209", node, msg,
                                 "a region must be defined from other regions (e.g. `region rest = not skin`)",
                                 notes=(f"cycle: {chain}",))
                    for m in cyc:
                        st.broken.add(m)
                        st.regions.pop(m, None)
            elif state.get(dep) is None and dep in graph:
                visit(dep)
        stack.pop()
        state[n] = 2

    for n in graph:
        if n not in state:
            visit(n)


# ---------------------------------------------------------------- measures, operators, placebos


def measures_pass(module: ast.Module, st: State) -> None:
    for cls, kind in ((ast.MeasureDecl, "measure"), (ast.CovariateDecl, "covariate")):
        for d in _first(module, st, cls):
            entry = plugin_entry(d.call, kind, st, f"{kind} `{d.name.name}`")
            bound = entry and bind(d.call, entry, st.decls, st.sink)
            scope = lower_scope(d, kind, st)
            if not bound or scope is None:
                st.broken.add(d.name.name)
                continue
            region = bound.params.get("region")
            st.measures[d.name.name] = ir.MeasureIR(name=d.name.name, call=plugin_call(bound), role=kind,
                                                    region=region if isinstance(region, str) else None, on=scope)


def operators_pass(module: ast.Module, st: State) -> None:
    for d in _first(module, st, ast.OperatorDecl):
        name = d.name.name
        entry = plugin_entry(d.call, "operator", st, f"operator `{name}`")
        bound = entry and bind(d.call, entry, st.decls, st.sink)
        if d.doses is None:
            st.sink.emit("E0404", d, f"operator `{name}` has no doses",
                         "add `doses` after the call, e.g. `doses -10, -5, 0, 5, 10` or `doses -20..20 step 10`")
            st.broken.add(name)
            continue
        if entry is None:
            st.broken.add(name)
            continue
        values = expand(d.doses, st.sink, f"operator `{name}`")
        ds = values and check_doses(values, entry, st.sink, f"operator `{name}`", d.doses)
        scope = lower_scope(d, "operator", st)
        if not bound or not ds or scope is None:
            st.broken.add(name)
            continue
        st.dosesets[name] = ds
        st.operators[name] = _operator_ir(name, bound, ds, None, d.label, scope)


def _operator_ir(name: str, bound: Bound, ds: DoseSet, placebo_of: str | None, label=None,
                 on: tuple[str, ...] = ()) -> ir.OperatorIR:
    region = bound.params.get("region")
    return ir.OperatorIR(name=name, call=plugin_call(bound), doses=ds.doses, identity=ds.identity,
                         pixel_local=bool(bound.entry.fact("pixel_local")),
                         region=region if isinstance(region, str) else None,
                         placebo_of=placebo_of, symmetric=ds.symmetric,
                         label=label.value if label is not None else None, on=on)


def placebos_pass(module: ast.Module, st: State) -> None:
    for d in _first(module, st, ast.PlaceboDecl):
        name = d.name.name
        entry = plugin_entry(d.call, "operator", st, f"placebo `{name}`")
        bound = entry and bind(d.call, entry, st.decls, st.sink)
        target = st.decls.resolve(d.of, "operator", st.sink, f"(after `of` in placebo `{name}`)")
        if target is not None and st.decls.kind_of(target) == "placebo":
            st.sink.emit("E0403", d.of, f"placebo `{name}` is `of` another placebo, `{target}`",
                         f"name the operator it controls for, e.g. `of {st.operators[target].placebo_of}`"
                         if target in st.operators else "name an `operator` declaration after `of`")
            target = None
        scope = lower_scope(d, "placebo", st)
        if not bound or target is None or target not in st.dosesets or scope is None:
            st.broken.add(name)
            continue
        ds = st.dosesets[target]
        identity = float(entry.fact("identity"))
        lo, hi = entry.meta.get("dose_range", (float("-inf"), float("inf")))
        if identity != ds.identity:
            st.sink.emit("E0412", d.call.func, f"placebo `{name}` uses `{entry.name}`, whose identity dose "
                         f"{identity:g} differs from `{target}`'s {ds.identity:g}, so it cannot share its doses",
                         f"use the same operator plugin as `{target}` on another region")
            st.broken.add(name)
            continue
        outside = [x for x in ds.doses if not lo <= x <= hi]
        if outside:
            st.sink.emit("E0401", d.of, f"dose {outside[0]:g} of `{target}` (shared by placebo `{name}`) is outside "
                         f"the range of `{entry.name}` [{lo:g}, {hi:g}]", f"use doses of `{target}` within [{lo:g}, {hi:g}]")
            st.broken.add(name)
            continue
        target_plugin = st.operators[target].call.plugin
        if target_plugin != entry.name:
            st.sink.emit("W0404", d.call.func, f"placebo `{name}` uses `{entry.name}` but `{target}` uses "
                         f"`{target_plugin}`: the placebo ratio then compares different manipulations",
                         f"a placebo is usually the same operator on another region: `{target_plugin}(..., region: ...)`")
        # a placebo without a scope of its own runs where its operator runs
        st.operators[name] = _operator_ir(name, bound, ds, target, d.label, scope or st.operators[target].on)


# ---------------------------------------------------------------- validations and selections


def validations_pass(module: ast.Module, st: State) -> None:
    checks_allowed = [e.name for e in registry.statistics if e.meta.get("validation")]
    for d in _decls_of(module, ast.ValidateDecl):
        measure = st.decls.resolve(d.measure, "measure", st.sink, "(in `validate`)")
        operator = st.decls.resolve(d.operator, "operator", st.sink, "(after `under` in `validate`)")
        checks: list[tuple[str, str, float]] = []
        seen: set[str] = set()
        ok = measure is not None and operator is not None
        for c in d.checks:
            if c.stat.name not in checks_allowed:
                guess = did_you_mean(c.stat.name, checks_allowed)
                st.sink.emit("E0406", c.stat, f"unknown validation check `{c.stat.name}`",
                             f"did you mean '{guess}'?" if guess else f"checks: {', '.join(checks_allowed)}")
                ok = False
                continue
            if not 0.0 <= c.value.value <= 1.0:
                st.sink.emit("E0407", c.value, f"the threshold of `{c.stat.name}` must be between 0 and 1, "
                             f"not {c.value.text}", f"{c.stat.name} is a share; write e.g. `{c.stat.name} >= 0.5`")
                ok = False
                continue
            if c.stat.name in seen:
                st.sink.emit("W0403", c, f"`{c.stat.name}` is checked twice in this `validate`; both must hold",
                             "keep one threshold")
            seen.add(c.stat.name)
            checks.append((c.stat.name, c.op, float(c.value.value)))
        if ok and measure not in st.broken and operator not in st.broken:
            st.validations.append(ir.ValidationIR(measure=measure, operator=operator, checks=tuple(checks)))


def selections_pass(module: ast.Module, st: State) -> None:
    for d in _first(module, st, ast.SelectDecl):
        name = d.name.name
        ok = True
        if not d.n.is_int or d.n.value < 2:
            st.sink.emit("E0408", d.n, f"`best_of {d.n.text}`: n must be a whole number of at least 2",
                         "write e.g. `best_of 4`")
            ok = False
        measure = st.decls.resolve(d.measure, "measure", st.sink, f"(after `by` in selection `{name}`)")
        operator = None
        if d.operator is not None:
            operator = st.decls.resolve(d.operator, "operator", st.sink, f"(after `under` in selection `{name}`)")
            if operator is None:
                ok = False
            elif operator in st.operators and ok and int(d.n.value) > len(st.operators[operator].doses):
                k = len(st.operators[operator].doses)
                st.sink.emit("E0409", d.n, f"`best_of {d.n.text} under {operator}` needs at least {d.n.text} "
                             f"variants per image, but `{operator}` has {k} doses",
                             f"use `best_of {k}` or fewer, or add doses to `{operator}`")
                ok = False
        if not ok or measure is None:
            st.broken.add(name)
            continue
        st.selections[name] = ir.SelectionIR(name=name, n=int(d.n.value), measure=measure, operator=operator)


from scoreaudit.compiler.clusters import few_clusters_pass  # noqa: E402  (W0421 once the cells exist)
from scoreaudit.compiler.limits import limits_pass  # noqa: E402  (E0251: alpha vs bootstrap vs memory)
from scoreaudit.compiler.prompt_files import prompt_files_pass  # noqa: E402  (E0852: the run's prompts refusal)
from scoreaudit.compiler.stat_tables import stat_tables_pass  # noqa: E402  (E0707/E0730: the run's table refusals)
from scoreaudit.compiler.unused import unused_pass  # noqa: E402  (W0540 once the cells exist)


def hypotheses_pass(module: ast.Module, st: State) -> None:
    for d in _first(module, st, ast.HypothesisDecl):
        h = lower_hypothesis(d, st)
        if h is not None:
            st.hypotheses.append(h)


def titles_pass(module: ast.Module, st: State) -> None:
    """E0252: a title or label holding a line break or control character (it would start a line in run.log,
    plan text, a terminal)."""
    from scoreaudit.diagnostics import safe_text

    for d in module.decls:
        titles = []
        if isinstance(d, (ast.AuditBlock, ast.HypothesisDecl)):
            titles.append(d.title)
        if isinstance(d, ast.ReportDecl):
            titles += [s.value for s in d.settings if s.key.name == "title" and isinstance(s.value, ast.String)]
        named = [("title", t) for t in titles]
        label = getattr(d, "label", None)  # `label: "..."`: the report's (and a sentence's) name for it
        if isinstance(label, ast.String):
            named.append(("label", label))
        for what, t in named:
            if safe_text(t.value) != t.value:
                st.sink.emit("E0252", t, f"the {what} {safe_text(t.value)[:60]!s} holds a line break or control "
                             "character", f"write the {what} on one line, without control characters")


PASSES = (
    collect,
    titles_pass,
    settings_pass,
    scorers_pass,
    arms_pass,
    regions_pass,
    measures_pass,
    operators_pass,
    placebos_pass,
    validations_pass,
    selections_pass,
    scopes_pass,
    probes_pass,
    hypotheses_pass,
    unused_pass,
    prompt_files_pass,
    stat_tables_pass,
    few_clusters_pass,
    limits_pass,
    report_pass,
)
