"""Optimisation probes: `probe NAME = reno(...)` declarations and the claims about them (spec/probes.md).

Checks (codes in compiler/codes.py): the probe's scorer must have a
differentiable path (E0855; which scorers have one is the scorer registry's
`differentiable` fact); every entry of `measures:` is a probe measure (E0856, with its own
arguments bound like any plugin call); a probe statistic names a measure the
probe records and, for `probe_shift` and `probe_transition`, its labels (E0857); a claim on a
probe is evaluated for the probe's own scorer and on no arm (E0858).
Nothing here imports torch.
"""

from __future__ import annotations

from scoreaudit import registry
from scoreaudit.compiler import ir
from scoreaudit.compiler.comparisons import _unit, _unit_words
from scoreaudit.compiler.params import bind
from scoreaudit.compiler.resolve import plugin_entry
from scoreaudit.compiler.values import string_literals, text
from scoreaudit.diagnostics import did_you_mean
from scoreaudit.grammar import ast

#: What `probe_drift(..., measure:)` may name besides the probe's measures: the scorer's own score.
SCORE = "score"


def differentiable_scorers() -> list[str]:
    """The scorer plugins a probe can optimise against: those the registry says have a gradient."""
    reg = registry.REGISTRIES["scorer"]
    return sorted(n for n in reg.names() if reg.get(n).fact("differentiable"))


def probes_pass(module: ast.Module, st) -> None:
    """Bind every `probe` declaration and check that its scorer can be differentiated."""
    for d in module.decls:
        if not isinstance(d, ast.ProbeDecl) or st.decls.table.get(d.name.name, (None, None))[1] is not d:
            continue
        name = d.name.name
        entry = plugin_entry(d.call, "probe", st, f"probe `{name}`")
        bound = entry and bind(d.call, entry, st.decls, st.sink)
        if not bound:
            st.broken.add(name)
            continue
        scorer = bound.params["scorer"]
        if scorer not in st.scorers:  # the scorer's own declaration failed (reported there)
            st.broken.add(name)
            continue
        plugin = st.scorers[scorer].call.plugin
        if not registry.REGISTRIES["scorer"].get(plugin).fact("differentiable"):
            diff = [s for s, sc in st.scorers.items()
                    if registry.REGISTRIES["scorer"].get(sc.call.plugin).fact("differentiable")]
            st.sink.emit("E0855", bound.arg_node("scorer").value if "scorer" in bound.args else d.call,
                         f"probe `{name}` optimises against scorer `{scorer}`, but `{plugin}` has no gradient "
                         "(planted, precomputed and most classical scorers are not differentiable)",
                         f"use a scorer with a gradient ({', '.join(differentiable_scorers())})"
                         + (f", e.g. `scorer: {diff[0]}`" if diff else ""))
            st.broken.add(name)
            continue
        measures = bound.params["measures"]
        names = [m["measure"] for m in measures]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            st.sink.emit("E0856", bound.arg_node("measures").value, f"probe measure `{repeated[0]}` is listed "
                         "twice", "list each probe measure once")
            st.broken.add(name)
            continue
        st.probes[name] = ir.ProbeIR(name=name, call=ir.PluginCall(plugin=entry.name, version=entry.version,
                                                                    params=bound.params),
                                     scorer=scorer, measures=tuple(names),
                                     label=d.label.value if d.label is not None else None, span=d.name.span,
                                     literals=string_literals(d))


def _labels(probe: ir.ProbeIR, measure: str) -> list[str] | None:
    """The labels `measure` records in `probe`: its `labels:`; None when a file gives them at run time."""
    for m in probe.call.params["measures"]:
        if m["measure"] == measure:
            if registry.fact("probe_measure", measure, "labels_from_file"):
                return list(m["params"].get("labels") or []) or None
            return list(m["params"].get("labels") or [])
    return []


def _check_measure(low, probe: ir.ProbeIR, sink) -> None:
    """E0857: the statistic's measure (and label) is one the probe records."""
    p = low.bound.params
    measure = p["measure"]
    allowed = list(probe.measures) + ([SCORE] if low.entry.meta.get("score_measure") else [])
    node = low.bound.arg_node("measure")
    node = getattr(node, "value", node)
    if measure not in allowed:
        guess = did_you_mean(measure, allowed)
        sink.emit("E0857", node, f"probe `{probe.name}` does not record `{measure}`",
                  f"did you mean '{guess}'?" if guess else f"it records: {', '.join(allowed)}")
    elif low.entry.meta.get("needs_label"):
        labels = _labels(probe, measure)
        if labels is None:  # read from a file at run time (an `anchor` manifest): checked there
            return
        if not labels:
            sink.emit("E0857", node, f"`{measure}` records no labels, so `{low.name}` cannot take a share of one",
                      "use a measure with labels, e.g. `clip_attribute(labels: [...])`, or `probe_drift`")
            return
        for arg in low.entry.meta.get("label_params", ("label",)):  # `label:`, or `initial:` and `final:`
            given = p.get(arg)
            lnode = low.bound.arg_node(arg)
            lnode = getattr(lnode, "value", lnode)
            for label in (given if isinstance(given, list) else [given]):
                if label not in labels:
                    guess = did_you_mean(str(label), labels)
                    sink.emit("E0857", lnode, f"`{label}` is not one of the labels of `{measure}` in probe "
                              f"`{probe.name}`", f"did you mean '{guess}'?" if guess else f"labels: {', '.join(labels)}")


def with_where(low, where: tuple, probe, st):
    """`low` restricted to the probe's prompts whose attributes hold every `where` value.

    A probe reading has no arm to restrict, so its conditions travel in its statistic's params
    (`where: [[column, value], ...]`; stats/probes.py selects the prompts in tables/probe_prompts).
    A template's attributes are its factors, checked here with their levels; a prompts table's
    columns are known only when the run reads it (an unknown one makes the cell undefined).
    """
    from dataclasses import replace

    from scoreaudit.compiler.comparisons import _where_value

    prompts = probe.call.params.get("prompts")
    factors = prompts.get("factors", {}) if isinstance(prompts, dict) else None
    ok = True
    for w in where:
        col, val = w.column.name, _where_value(w.value)
        if factors is not None and col not in factors:
            st.sink.emit("E0465", w.column, f"the prompts of probe `{probe.name}` have no factor `{col}` to select "
                         "with `where`", f"factors of its template: {', '.join(factors) or 'none'}")
            ok = False
        elif factors is not None and isinstance(factors[col], list) and val not in [str(v) for v in factors[col]]:
            st.sink.emit("E0466", w.value, f"factor `{col}` of probe `{probe.name}`'s template has no level "
                         f"\"{val}\"", f"levels: {', '.join(str(v) for v in factors[col])}")
            ok = False
        elif isinstance(prompts, str) and not prompts.lower().endswith((".csv", ".tsv")):
            st.sink.emit("E0465", w.column, f"the prompts of probe `{probe.name}` come from a plain list "
                         f"('{prompts}'), which has no column `{col}`",
                         "give the prompts as a .csv with a `prompt` column and the columns to select by, or as "
                         "a template with factors")
            ok = False
    if not ok:
        return None
    rows = [[w.column.name, _where_value(w.value)] for w in where]
    return replace(low, ir=low.ir.model_copy(update={"params": {**low.ir.params, "where": rows}}))


def lower_probe_claim(h: ast.HypothesisDecl, k: int, claim: ast.Claim, low, test, ok: bool, st,
                      multi: bool, stratum=None) -> list[ir.CellIR] | None:
    """The one cell of a claim on a probe statistic: the probe's scorer, no arm (`stratum`: its `where`)."""
    sink = st.sink
    before = sink.error_count()
    if claim.arms:
        sink.emit("E0858", claim.arms[0], f"`{low.name}` reads its probe, not an arm; it takes no `on` clause",
                  "remove `on ...`")
    if low is None or not ok:
        return None
    p = low.bound.params
    probe = st.probes.get(p["probe"])
    if probe is None:  # the probe's declaration failed (reported there)
        return None
    _check_measure(low, probe, sink)
    suffix = ""
    if stratum is not None:
        low = with_where(low, stratum.where, probe, st)
        if low is None:
            return None
        suffix = "".join(f"@{c}={v}" for c, v in low.ir.params["where"])
    # scorers: the probe's own (a probe optimises against one scorer)
    if isinstance(claim.scorers, tuple) and claim.scorers:
        for ident in claim.scorers:
            name = st.decls.resolve(ident, "scorer", sink, f"(after `for` in hypothesis `{h.name.name}`)")
            if name is not None and name != probe.scorer:
                sink.emit("E0858", ident, f"probe `{probe.name}` optimises against `{probe.scorer}`, so its "
                          f"statistics are readings for `{probe.scorer}` only, not `{name}`",
                          f"write `for {probe.scorer}`, or declare a probe for `{name}`")
    if sink.error_count() > before or test is None:
        return None
    prefix = f"{h.name.name}.{k + 1}" if multi else h.name.name
    return [ir.CellIR(id=f"{prefix}/{probe.scorer}/{probe.name}{suffix}", hypothesis=h.name.name, claim=k,
                      scorer=probe.scorer, arm=None, arms=(), statistic=low.ir, test=test)]


def lower_probe_comparison(h: ast.HypothesisDecl, k: int, claim: ast.Claim, comp: ast.Comparison, lows: list,
                           on_probe: list[bool], test, st, multi: bool) -> list[ir.CellIR] | None:
    """The one cell of `difference(a, b)` / `ratio(a, b)` of two probe readings (spec/probes.md).

    Each reading is read for its probe's scorer, on no arm; the statistics
    engine pairs the two probes on the prompts they share (stats/probes.py).
    """
    sink = st.sink
    before = sink.error_count()
    readings = (comp.a, comp.b)
    if not all(on_probe):
        i = on_probe.index(False)
        j = 1 - i
        sink.emit("E0880", readings[i].call, f"`{lows[i].name}` reads an arm, but `{lows[j].name}` reads probe "
                  f"`{lows[j].bound.params['probe']}`: a probe's clusters are its prompts, so the two readings "
                  "share neither clusters nor a scale", "compare two probe readings (e.g. `probe_drift(...)` under "
                  "two probes) or two arm readings")
        return None
    for r, low in zip(readings, lows):
        if r.arms:
            sink.emit("E0858", r.arms[0], f"`{low.name}` reads its probe, not an arm; it takes no `on` clause",
                      "remove `on ...`")
    if claim.arms:
        sink.emit("E0858", claim.arms[0], f"`{comp.kind}` of probe readings reads the probes, not an arm; it "
                  "takes no `on` clause", "remove `on ...`")
    probes = [st.probes.get(low.bound.params["probe"]) for low in lows]
    if any(p is None for p in probes):  # a probe's declaration failed (reported there)
        return None
    (ua, of_a), (ub, of_b) = _unit(lows[0]), _unit(lows[1])
    if comp.kind == "difference" and (ua != ub or of_a != of_b):
        scale = st.settings.scale if st.settings is not None else "sd"

        def words(low, probe, unit, of):
            if of == SCORE:
                return f"is a change in `{probe.scorer}`'s score"
            return _unit_words(unit, scale, of)

        sink.emit("E0463", comp, f"`difference` subtracts readings in different units: `{lows[0].name}` "
                  f"{words(lows[0], probes[0], ua, of_a)}, `{lows[1].name}` {words(lows[1], probes[1], ub, of_b)}",
                  "compare the same measure under both probes (e.g. `measure: ita` twice), or take the "
                  "`ratio(...)`")
    for low, probe in zip(lows, probes):
        _check_measure(low, probe, sink)
    # scorers: each reading is for its probe's scorer
    for r, low, probe in zip(readings, lows, probes):
        for ident in r.scorers:
            if ident.name in st.scorers and ident.name != probe.scorer:
                sink.emit("E0858", ident, f"probe `{probe.name}` optimises against `{probe.scorer}`, so "
                          f"`{low.name}` under it is a reading for `{probe.scorer}` only, not `{ident.name}`",
                          f"write `for {probe.scorer}`, or leave `for` off")
    own = list(dict.fromkeys(p.scorer for p in probes))
    if isinstance(claim.scorers, tuple):
        for ident in claim.scorers:
            name = st.decls.resolve(ident, "scorer", sink, f"(after `for` in hypothesis `{h.name.name}`)")
            if name is not None and name not in own:
                sink.emit("E0858", ident, f"the readings are for {' and '.join(f'`{s}`' for s in own)} (the "
                          f"scorers their probes optimise against), not `{name}`",
                          "leave `for` off: each probe reading is for its probe's scorer")
    if comp.kind == "difference" and all(low.bound.params.get("measure") == SCORE for low in lows) \
            and probes[0].scorer != probes[1].scorer:
        sink.emit("E0881", comp, f"`difference` subtracts score changes of two scorers: `{probes[0].name}` moves "
                  f"`{probes[0].scorer}`'s score, `{probes[1].name}` moves `{probes[1].scorer}`'s, and their "
                  "scores have different units", "compare a measure both probes record (e.g. `measure: ita`), or "
                  "take the `ratio(...)` of the two score changes")
    lows = [with_where(low, r.where, probe, st) if r.where else low for low, r, probe in zip(lows, readings, probes)]
    if sink.error_count() > before or test is None or any(low is None for low in lows):
        return None
    if lows[0].ir == lows[1].ir:
        sink.emit("E0464", comp, f"both sides of `{comp.kind}` are the same reading (`{text(comp.a.call)}`)",
                  "compare two probes, two measures or two labels")
        return None
    if comp.kind == "ratio" and test.kind == "less" and (test.threshold or 0) > 0 \
            and all(low.entry.meta.get("sign") == "signed" for low in lows):
        sink.emit("W0462", comp, f"probe statistics can be negative, so a negative ratio (changes in opposite "
                  f"directions) also lies below {test.threshold:g}",
                  f"to compare sizes write `abs({text(comp)}) < {test.threshold:g}`, or add a claim that each "
                  "reading is positive (e.g. `... > 0`)")
    parts = [ir.ReadingIR(statistic=low.ir, arm=None, scorer=p.scorer) for low, p in zip(lows, probes)]
    sc = own[0] if len(own) == 1 else ":".join(own)
    where = ":".join(dict.fromkeys(p.name for p in probes))
    stat = ir.StatCallIR(name=comp.kind, version="1", params={"readings": [x.model_dump(mode="json") for x in parts]})
    prefix = f"{h.name.name}.{k + 1}" if multi else h.name.name
    return [ir.CellIR(id=f"{prefix}/{sc}/{where}", hypothesis=h.name.name, claim=k, scorer=sc, arm=None, arms=(),
                      statistic=stat, test=test)]
