"""E0707/E0730 at check: a table a statistic reads (`correlate(..., table:)`) the run would refuse.

The run copies each such table into the bundle before any work and refuses
one outside the spec's folder (E0707) or one that is not a regular file
(a folder, FIFO, device: E0730; runtime.run_inputs.read_stat_inputs). The same
two checks run here, at the hypothesis that names the table. A table not
there yet passes, as a missing manifest does (the statistic reports it).
"""

from __future__ import annotations

from pathlib import Path


def stat_tables_pass(module, st) -> None:
    from scoreaudit.compiler.ir import table_params
    from scoreaudit.safeio import file_problem, inside

    path = getattr(st, "path", "") or ""
    if st.sink.has_errors or not path or path.startswith("<"):
        return
    base = Path(path).resolve().parent
    for h in st.hypotheses:
        dumped = [c.statistic.model_dump(mode="json") for c in h.cells]
        for table in dict.fromkeys(table_params(dumped)):
            decl = st.decls.table.get(h.name, (None, None))[1]
            node = getattr(decl, "name", decl)
            target = base / table
            if not inside(target, base):
                st.sink.emit("E0707", node, f"hypothesis `{h.name}` reads table '{table}', which leaves the "
                             "project folder", "keep the table inside the spec's folder, or run with --allow-outside")
                continue
            problem = file_problem(target)
            if problem is not None and problem != "not found":
                st.sink.emit("E0730", node, f"hypothesis `{h.name}` reads table '{table}', which {problem}",
                             "name a table file; folders, pipes and devices are never read")
