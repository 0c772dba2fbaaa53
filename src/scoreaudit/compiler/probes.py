"""Optimisation probes: `probe NAME = reno(...)` declarations and the claims about them (spec/probes.md).

Checks (codes in compiler/codes.py): the probe's scorer must have a
differentiable path (E0855: classical, planted and precomputed scorers have
none); every entry of `measures:` is a probe measure (E0856, with its own
arguments bound like any plugin call); a probe statistic names a measure the
probe records and, for `probe_shift`, one of its labels (E0857); a claim on a
probe is evaluated for the probe's own scorer and on no arm (E0858).
Nothing here imports torch.
"""

from __future__ import annotations

from typing import Any, Optional

from scoreaudit import registry
from scoreaudit.compiler import ir
from scoreaudit.compiler.params import bind
from scoreaudit.compiler.resolve import plugin_entry
from scoreaudit.compiler.values import text
from scoreaudit.diagnostics import did_you_mean
from scoreaudit.grammar import ast

#: What `probe_drift(..., measure:)` may name besides the probe's measures: the scorer's own score.
SCORE = "score"


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
                         "(classical, planted and precomputed scorers are not differentiable)",
                         f"use a model scorer (laion_aesthetic, pickscore, image_reward, hpsv2, clip_score)"
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
                                     label=d.label.value if d.label is not None else None)


def _labels(probe: ir.ProbeIR, measure: str) -> list[str]:
    for m in probe.call.params["measures"]:
        if m["measure"] == measure:
            return list(m["params"].get("labels") or [])
    return []


def lower_probe_claim(h: ast.HypothesisDecl, k: int, claim: ast.Claim, low, test, ok: bool, st,
                      multi: bool) -> Optional[list[ir.CellIR]]:
    """The one cell of a claim on a probe statistic: the probe's scorer, no arm."""
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
        label = p.get("label")
        lnode = low.bound.arg_node("label")
        lnode = getattr(lnode, "value", lnode)
        if not labels:
            sink.emit("E0857", node, f"`{measure}` records no labels, so `{low.name}` cannot take a share of one",
                      "use a measure with labels, e.g. `clip_attribute(labels: [...])`, or `probe_drift`")
        elif label not in labels:
            guess = did_you_mean(str(label), labels)
            sink.emit("E0857", lnode, f"`{label}` is not one of the labels of `{measure}` in probe `{probe.name}`",
                      f"did you mean '{guess}'?" if guess else f"labels: {', '.join(labels)}")
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
    return [ir.CellIR(id=f"{prefix}/{probe.scorer}/{probe.name}", hypothesis=h.name.name, claim=k,
                      scorer=probe.scorer, arm=None, arms=(), statistic=low.ir, test=test)]
