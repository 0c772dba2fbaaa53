"""W0421 at check time: an images arm whose `scale: sd` statistics rest on few clusters.

Statistics in SD units divide by an SD estimated from the arm's own images;
below SD_MIN_CLUSTERS clusters the calibration bench (spec/methods.md,
"Measured calibration") cannot vouch for their intervals. `run` writes the
same warning to results.json `warnings` from the data; here it is raised
earlier, when the arm's manifest is readable at check time (the cluster
column's distinct values, or the distinct ids when each image is its own
cluster). A manifest that cannot be read means "not known yet": no warning.
"""

from __future__ import annotations

from scoreaudit import registry
from scoreaudit.compiler import ir
from scoreaudit.compiler.comparisons import manifest_of

# Below this many clusters SD-unit intervals are not vouched for by the calibration grid (its smallest point).
SD_MIN_CLUSTERS = 20


def _sd_unit(call: ir.StatCallIR) -> bool:
    """The statistic (or the one it wraps) is reported in SD units."""
    while call is not None:
        entry = registry.statistics.get(call.name) if call.name in registry.statistics else None
        if entry is not None and str(entry.meta.get("unit", "")).startswith("sd"):
            return True
        call = call.inner
    return False


def sd_arms(cells) -> list[str]:
    """Arms read by a statistic in SD units (each reading of a comparison counts on its own arm)."""
    found: list[str] = []
    for c in cells:
        for arm, _, call in c.parts():
            if arm and arm not in found and _sd_unit(call):
                found.append(arm)
    return found


def _generated(arm: ir.ArmIR) -> bool:
    return registry.generated_arm(arm.call.plugin)


def _generated_count(st, arm: ir.ArmIR) -> int | None:
    """Clusters of a generated arm, as the run will form them (a template: one per seed; a prompts file:
    one per prompt, read when the file exists), or None when the prompts cannot be read here."""
    from pathlib import Path

    from scoreaudit.compiler.prompts import PromptsError, generated_clusters

    path = getattr(st, "path", "") or ""
    params = arm.call.params
    if not isinstance(params.get("prompts"), dict) and (not path or path.startswith("<")):
        return None  # a prompts file, and no folder to read it from
    try:
        return generated_clusters(params, Path(path).resolve().parent if path else Path("."))
    except (PromptsError, OSError):
        return None


def cluster_count(st, arm_name: str) -> int | None:
    """Clusters of an images arm from its manifest (a generated arm: its prompts and seeds) at check time,
    or None when unknown."""
    arm = st.arms.get(arm_name)
    if arm is None or arm.source != "images":
        return None
    if _generated(arm):
        return _generated_count(st, arm)
    man = manifest_of(st, arm_name)
    if man is None:
        return None
    columns, values = man
    col = arm.cluster or arm.call.params.get("id", "id")
    if not isinstance(col, str) or col not in columns:
        return None
    return len(values[col])


def few_clusters_pass(module, st) -> None:
    """W0421 for every images arm with SD-unit cells and fewer than SD_MIN_CLUSTERS clusters in its manifest."""
    if st.settings is None or st.settings.scale != "sd" or st.sink.has_errors:
        return
    cells = [c for h in st.hypotheses for c in h.cells]
    for name in sd_arms(cells):
        n = cluster_count(st, name)
        if n is None or not 0 < n < SD_MIN_CLUSTERS:
            continue
        decl = st.decls.table.get(name, (None, None))[1]
        arm = st.arms[name]
        where = "in its manifest"
        if _generated(arm):
            where = ("(one per seed: each seed's prompts from the template are one counterfactual set)"
                     if isinstance(arm.call.params.get("prompts"), dict) else "(one per prompt of its prompts file)")
        st.sink.emit("W0421", getattr(decl, "name", decl),
                     f"arm `{name}` has {n} clusters {where}: below {SD_MIN_CLUSTERS} the intervals of "
                     "statistics in SD units are not vouched for by the calibration grid (the SD's own "
                     "uncertainty dominates)",
                     "add clusters, or use `scale: raw` (the t-tests of raw statistics hold at any cluster count)")
