"""What can be computed: numeric settings checked against each other and this machine's memory (E0251).

Each setting has its own range (compiler/settings.py, read by check); some pairs of in-range values still cannot be computed,
and `run` used to find out with a traceback after scoring. Checked here, at `check`, located at the setting:

- `alpha` below the bootstrap's resolution: B resamples estimate no tail probability below 1/(B + 1), and an
  interval's (1 − 2α) bounds at α ≪ 1/(B + 1) are quantiles of no resample (at 1e-300 the BCa levels are not
  numbers and the run ended in a ValueError);
- `bootstrap` against memory: the cluster bootstrap keeps a B × G count matrix per arm (8 bytes a cell, G the
  arm's clusters) and, while one is drawn, two more of its size (int64 draws and counts); comparisons pair
  two arms in one more matrix over both arms' clusters; every cell keeps a few B-long replicate vectors.
  `bootstrap_bytes` adds these up; more than this machine's memory (the smallest of physical memory, the
  cgroup's limit and the address-space limit) is an error that states both (`bootstrap: 1000000000000` on
  six clusters wanted a 43.7 TiB allocation).

- `robustness` above ROBUSTNESS_MAX: each seed reruns every cell's bootstrap (1e9 seeds ran for days); a
  same-sign rate over 1000 seeds already resolves 0.001;
- a number in a hypothesis (threshold, equivalence bound, margin, dose) beyond ±NUMBER_MAX (E0253):
  statistics are score differences in SD or raw units, and arithmetic on such bounds (interval widths,
  chart axes) overflows float64 (`within [-1e308, 1e308]` ended run in an OverflowError).

A spec checked without its manifests (clusters unknown) counts two clusters per arm, the fewest any arm has.
The estimate errs high: demo.audit (14 clusters, 28 cells) peaked 76 MB higher at 100,000 resamples than at
1,000; `bootstrap_bytes` says 125 MB.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os

from scoreaudit.grammar import ast

NUMBER_MAX = 1e12  # the largest magnitude of a number in a hypothesis (E0253)
ROBUSTNESS_MAX = 1000  # robustness seeds: each reruns every cell's bootstrap
BYTES = 8  # float64 / int64
CELL_VECTORS = 4  # B-long replicate vectors a cell keeps (estimate, numerator/denominator, jackknife or null)
MIN_CLUSTERS = 2


def bootstrap_bytes(n_boot: int, clusters: list[int], n_cells: int) -> int:
    """Peak bytes of the cluster bootstrap: kept matrices (one per arm, one per pairing), the draw in
    progress (two more of the largest), and the cells' replicate vectors."""
    if not clusters:
        return BYTES * n_boot * CELL_VECTORS * n_cells
    kept = 2 * sum(clusters)  # one per arm, plus pairings over the union of two arms' clusters
    drawing = 2 * max(clusters)
    return BYTES * n_boot * (kept + drawing + CELL_VECTORS * n_cells)


def memory_limit() -> int | None:
    """Bytes this process can hold at most: physical memory, a cgroup (v2/v1) limit, RLIMIT_AS; None if unknown."""
    found = []
    with contextlib.suppress(ValueError, OSError, AttributeError):
        found.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as f:
                value = f.read().strip()
            if value.isdigit() and int(value) < 1 << 60:
                found.append(int(value))
        except OSError:
            continue
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
            found.append(int(soft))
    except (ImportError, OSError, ValueError):
        pass
    return min(found) if found else None


def size_text(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            return f"{n:.0f} bytes" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} EiB"


def _setting_nodes(module: ast.Module) -> dict:
    blocks = [d for d in module.decls if isinstance(d, ast.AuditBlock)]
    return {s.key.name: s for s in blocks[0].settings} if blocks else {}


def _bootstrapped_arms(st) -> list[str]:
    arms: list[str] = []
    for h in st.hypotheses:
        for c in h.cells:
            for arm, _, _ in c.parts():
                if arm and arm not in arms:
                    arms.append(arm)
    return arms


def _clusters(st, arm: str) -> int:
    from scoreaudit.compiler.clusters import cluster_count

    n = cluster_count(st, arm)
    if n is None and arm in st.arms and st.arms[arm].source == "pairs":
        n = _pairs_rows(st, arm)
    return max(MIN_CLUSTERS, n or 0)


def _pairs_rows(st, arm: str) -> int | None:
    """A pairs arm's clusters: its cluster column's values, else its pairs (the manifest's ids), when readable."""
    from scoreaudit.compiler.comparisons import manifest_of

    man = manifest_of(st, arm)  # inside the spec's folder only; cached per version of the file
    if man is None:
        return None
    columns, values = man
    a = st.arms[arm]
    col = a.cluster or a.call.params.get("id", "id")
    return len(values[col]) if isinstance(col, str) and col in columns else None


def _numbers(node) -> list:
    """Every number literal under an AST node."""
    out, todo = [], [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Number):
            out.append(n)
        elif isinstance(n, (tuple, list)):
            todo.extend(n)
        elif dataclasses.is_dataclass(n) and not isinstance(n, type):
            todo.extend(getattr(n, f.name) for f in dataclasses.fields(n) if f.name != "span")
    return out


def _hypothesis_numbers(module: ast.Module, st) -> None:
    for d in module.decls:
        if not isinstance(d, ast.HypothesisDecl):
            continue
        for n in _numbers(d.claims):
            if abs(n.value) > NUMBER_MAX:
                st.sink.emit("E0253", n, f"the number {n.text} is beyond what the statistics can be compared "
                             "with (±1e12): arithmetic on it overflows", "statistics are differences "
                             "of scores in SD or raw units: write a bound of their size (e.g. 0.5)")


def limits_pass(module: ast.Module, st) -> None:
    """E0251 for `alpha` below the bootstrap's resolution, a bootstrap larger than memory and too many robustness
    seeds; E0253 for a number in a hypothesis beyond ±NUMBER_MAX."""
    s = st.settings
    if s is None or st.sink.has_errors:
        return
    _hypothesis_numbers(module, st)
    nodes = _setting_nodes(module)
    if s.robustness > ROBUSTNESS_MAX and "robustness" in nodes:
        st.sink.emit("E0251", nodes["robustness"].value,
                     f"`robustness: {s.robustness}` reruns every cell's bootstrap {s.robustness - 1} more times: "
                     f"at most {ROBUSTNESS_MAX} seeds are allowed (their same-sign rate resolves 1/{ROBUSTNESS_MAX})",
                     "write e.g. `robustness: 20`")
    n_boot, alpha = int(s.bootstrap), float(s.alpha)
    arms = _bootstrapped_arms(st)
    clusters = [_clusters(st, a) for a in arms]
    n_cells = sum(len(h.cells) for h in st.hypotheses)
    limit = memory_limit()
    need = bootstrap_bytes(n_boot, clusters, n_cells)

    def fits(b: int) -> bool:
        return limit is None or bootstrap_bytes(b, clusters, n_cells) <= limit

    floor = 1.0 / (n_boot + 1)
    if alpha < floor and "alpha" in nodes:
        b_needed = math.ceil(1.0 / alpha) - 1
        if b_needed < 10 ** 15 and fits(b_needed):
            fix = f"raise `alpha` to at least {floor:.3g}, or `bootstrap` to at least {b_needed}"
        elif b_needed < 10 ** 15:
            fix = (f"raise `alpha` to at least {floor:.3g} (the {b_needed} resamples that alpha needs would take "
                   f"{size_text(bootstrap_bytes(b_needed, clusters, n_cells))} of memory, more than this machine's "
                   f"{size_text(limit or 0)})")
        else:
            fix = f"raise `alpha` to at least {floor:.3g} (no machine holds the {b_needed:.3g} resamples it needs)"
        st.sink.emit("E0251", nodes["alpha"].value,
                     f"`alpha: {alpha:g}` cannot be resolved by `bootstrap: {n_boot}`: {n_boot} resamples estimate "
                     f"no tail probability below 1/(bootstrap + 1) = {floor:.3g}, so the (1 − 2·alpha) interval "
                     "and its test are not computable", fix)
    if limit is not None and need > limit:
        per = bootstrap_bytes(1, clusters, n_cells)
        most = max(0, limit // per)
        node = nodes.get("bootstrap")  # the default bootstrap on a huge design: the audit block's title
        blocks = [d for d in module.decls if isinstance(d, ast.AuditBlock)]
        anchor = node.value if node is not None else (blocks[0].title if blocks else None)
        st.sink.emit("E0251", anchor,
                     f"`bootstrap: {n_boot}` needs about {size_text(need)} of memory for {len(arms)} arm(s) of "
                     f"{', '.join(map(str, clusters)) or 'no'} clusters and {n_cells} cell(s) (a {n_boot} × "
                     f"clusters count matrix per arm, 8 bytes a count), more than this machine's {size_text(limit)}",
                     f"write `bootstrap: {min(most, 2000)}` (at most {most} resamples fit in memory here)"
                     if most >= 100 else
                     "this design's clusters need more memory than this machine has even at 100 resamples (the "
                     "fewest allowed); run it on a larger machine")
