"""W0540: a declaration nothing needs (compiler/demand.py), so it never runs.

The plan holds only the work the hypotheses, validations, probes and report
read; a scorer, operator, placebo, region, measure, selection or arm outside
all of that costs nothing and is warned about at the declaration, so a typo
in a claim (`on rael`) or a forgotten hypothesis does not silently drop work
the author meant to run. A spec without hypotheses is exploratory (everything
runs) and is not warned about.
"""

from __future__ import annotations

from scoreaudit.compiler import ir

WHAT = {
    "scorer": "no claim reads its scores on any arm (and no probe optimises it)",
    "operator": "no claim reads it and no arm that a claim scores is in its scope",
    "placebo": "no claim reads it and its operator runs nowhere",
    "region": "no operator or measure that runs uses it",
    "measure": "no claim, validation, selection, scorer or probe reads it where an operator runs",
    "selection": "no claim reads it",
    "arm": "no claim reads it",
}


def unused_pass(module, st) -> None:
    """Warn (W0540) at each declaration the demand leaves out; needs the whole checked spec."""
    if st.settings is None or st.sink.has_errors or not st.hypotheses:
        return
    from scoreaudit.compiler.demand import demand, unused

    audit = ir.AuditIR(settings=st.settings, scorers=st.scorers, arms=st.arms, regions=st.regions,
                       measures=st.measures, operators=st.operators, validations=tuple(st.validations),
                       selections=st.selections, hypotheses=tuple(st.hypotheses), probes=st.probes,
                       report=st.report)
    d = demand(audit)
    found = unused(audit, d)
    read_arms = {w[1] for w in d.needs if len(w) > 1}
    found += [("arm", a) for a in audit.arms if a not in read_arms]
    for kind, name in found:
        decl = st.decls.table.get(name, (None, None))[1]
        st.sink.emit("W0540", getattr(decl, "name", decl),
                     f"{kind} `{name}` is declared but nothing needs it: {WHAT[kind]}, so it never runs",
                     "use it in a hypothesis (or scope it to the arm a claim reads), or remove the declaration")
