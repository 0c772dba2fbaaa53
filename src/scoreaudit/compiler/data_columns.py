"""E0807: a data-reading scorer's columns read on an arm of the wrong kind (spec/precomputed.md).

`precomputed(column: c)` reads one score per image row, `precomputed(preferred:
a, other: b)` one per side of a pair row. Read on the other kind of arm, every
image would be excluded and every cell left undefined at run time; `check`
refuses it where a claim reads the scorer on such an arm, at the scorer's
argument. The rule is the plugin's (`arm_problem` fact), so a plugin that
reads data its own way states its own.
"""

from __future__ import annotations

from typing import Any

from scoreaudit.compiler import ir


def _argument(st, scorer: str, fname: str) -> Any:
    """The scorer declaration's argument `fname` as written (the call when it is not found)."""
    decl = st.decls.table.get(scorer, (None, None))[1]
    call = getattr(decl, "call", None)
    for arg in getattr(call, "args", ()) or ():
        if arg.name is not None and arg.name.name == fname:
            return arg
    return call if call is not None else decl


def check_data_columns(scorer: ir.ScorerIR, arm: ir.ArmIR, st) -> bool:
    """E0807 when the columns `scorer` reads cannot be read on `arm` (False), else True."""
    from scoreaudit import registry

    if scorer.call.plugin not in registry.scorers:
        return True
    check = registry.scorers.get(scorer.call.plugin).fact("arm_problem")
    problem = check(scorer.call.params, arm.source) if check else None
    if problem is None:
        return True
    fname, msg, help = problem
    kind = "pairs" if arm.source == "pairs" else "images"
    st.sink.emit("E0807", _argument(st, scorer.name, fname),
                 f"scorer `{scorer.name}` is read on {kind} arm `{arm.name}`: {msg}", help,
                 notes=(f"a claim reads scorer `{scorer.name}` on arm `{arm.name}`; when the audit has arms of "
                        "both kinds, declare one scorer per kind, each scoped to its arms "
                        "(`scorer NAME = precomputed(...) on ARM`)",))
    return False
