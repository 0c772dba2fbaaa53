"""Comparisons between readings: `difference(a, b)` and `ratio(a, b)` → cells (spec/methods.md, "Comparisons").

A reading is a statistic with its own `on ARM`, `for SCORER` and
`where COLUMN = VALUE` qualifiers; what it leaves out is filled from the claim
line (`on ...`, `for ...`, `for each scorer`, every scorer when absent), so a
claim expands into one cell per combination of the claim's arms and scorers
that some reading leaves open. Each cell's statistic is a `difference` or
`ratio` call whose `params["readings"]` holds the two `ReadingIR`s.

Also checked here, per arm: the statistics that combine or read columns
(`group_gap` on strata, `decompose`, `share`, `agreement`), and `where`
conditions against the arm's manifest when it can be read at check time.

Codes E046x–E047x and W046x, catalogued in `codes.py`.
"""

from __future__ import annotations

import csv
import io
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from scoreaudit.compiler import ir
from scoreaudit.diagnostics import did_you_mean
from scoreaudit.grammar import ast

#: Statistics whose sign carries meaning (null value 0): a ratio of two of them can be negative.
SIGNED_UNITS = ("sd", "sd per measure unit", "r", "measure units", "sd per covariate unit")


def comparison_of(expr: Any) -> ast.Comparison | None:
    """The `difference`/`ratio` a claim expression tests, if it tests one."""
    left = getattr(expr, "left", None)
    if isinstance(left, ast.Abs):
        left = left.call
    return left if isinstance(left, ast.Comparison) else None


def _unit(low) -> tuple[str, str | None]:
    """(unit, what it is a unit of) of a lowered statistic: measure units depend on the measure."""
    unit = str(low.entry.meta.get("unit", "number"))
    of = None
    if "measure" in unit:
        of = low.bound.params.get("measure")
        if of is None:  # net_drift: the selection's measure
            of = low.bound.params.get("selection")
    return unit, of


def _unit_words(unit: str, scale: str, of: str | None = None) -> str:
    """`is in SD units`, `is a share`, `is in measure units of ita` (a predicate for messages)."""
    if unit == "sd":
        return "is in SD units" if scale == "sd" else "is in raw score units"
    words = {"share": "is a share", "ratio": "is a ratio", "r": "is a correlation", "rank": "is an average rank",
             "p": "is a p-value"}.get(unit)
    return words or f"is in {unit}{f' of {of}' if of else ''}"


def _where_value(v: Any) -> str:
    if isinstance(v, ast.String):
        return v.value
    return str(int(v.value)) if v.is_int else repr(float(v.value))


# ---------------------------------------------------------------- manifests at check time


@lru_cache(maxsize=32)
def _read_manifest(path: str, mtime: float, size: int) -> tuple[tuple[str, ...], dict[str, frozenset]] | None:
    """(columns, column → set of values as text) of a CSV/TSV/JSON-lines/JSON-list manifest, or None."""
    p = Path(path)
    suffix = p.suffix.lower()
    try:
        data = p.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    rows: list[dict[str, Any]]
    try:
        if suffix in (".csv", ".tsv"):
            reader = csv.DictReader(io.StringIO(data), delimiter="\t" if suffix == ".tsv" else ",")
            rows = list(reader)
            columns = tuple(reader.fieldnames or ())
        elif suffix in (".jsonl", ".ndjson", ".json"):
            whole = json.loads(data) if suffix == ".json" and data.lstrip().startswith("[") else None
            rows = whole if isinstance(whole, list) else \
                [json.loads(line) for line in data.splitlines() if line.strip()]
            columns = tuple(dict.fromkeys(k for r in rows if isinstance(r, dict) for k in r))
        else:
            return None
    except (csv.Error, ValueError):
        return None
    values: dict[str, set] = {c: set() for c in columns}
    for r in rows:
        if not isinstance(r, dict):
            return None
        for c, v in r.items():
            if c in values and v is not None:
                values[c].add(_as_text(v))
    return columns, {c: frozenset(v) for c, v in values.items()}


def _as_text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    s = str(v).strip()
    try:
        f = float(s)
    except ValueError:
        return s
    return str(int(f)) if f.is_integer() and "e" not in s.lower() and s.lstrip("-").replace(".", "", 1).isdigit() \
        else s


def manifest_of(st, arm_name: str):
    """The arm's manifest as (columns, values) when it exists inside the spec's folder, else None."""
    arm = st.arms.get(arm_name)
    path = getattr(st, "path", "") or ""
    if arm is None or not path or path.startswith("<"):  # text checked without a file: nothing to read
        return None
    spec = Path(path)
    rel = arm.call.params.get("manifest")
    if not isinstance(rel, str):
        return None
    root = spec.resolve().parent
    p = (root / rel).resolve()
    try:
        p.relative_to(root)
    except ValueError:
        return None
    try:  # is_file() raises for some errors (e.g. a name too long): any unreadable path means "unknown here"
        if not p.is_file():
            return None
        stat = p.stat()
    except OSError:
        return None
    return _read_manifest(str(p), stat.st_mtime, stat.st_size)


def _same_value(value: str, present: frozenset) -> bool:
    if value in present:
        return True
    try:
        f = float(value)
    except ValueError:
        return False
    for v in present:
        try:
            if float(v) == f:
                return True
        except ValueError:
            continue
    return False


def check_where(reading: ast.Reading, arm_name: str, st) -> bool:
    """`where COLUMN = VALUE`: the column exists on the arm and the value occurs (manifest permitting)."""
    man = manifest_of(st, arm_name)
    if man is None:
        return True
    columns, values = man
    ok = True
    for w in reading.where:
        col = w.column.name
        if col not in columns:
            guess = did_you_mean(col, columns)
            st.sink.emit("E0465", w.column, f"arm `{arm_name}` has no column `{col}` to select with `where`",
                         f"did you mean '{guess}'?" if guess else f"columns of its manifest: {', '.join(columns)}")
            ok = False
            continue
        val = _where_value(w.value)
        if not _same_value(val, values[col]):
            shown = sorted(values[col])
            listing = ", ".join(f'"{v}"' for v in shown[:12]) + (", ..." if len(shown) > 12 else "")
            guess = did_you_mean(val, shown)
            st.sink.emit("E0466", w.value, f"no image of arm `{arm_name}` has {col} = \"{val}\"",
                         f"did you mean \"{guess}\"?" if guess else f"values of `{col}`: {listing}")
            ok = False
    return ok


# ---------------------------------------------------------------- per-arm checks of the statistics here


def _column_known(col: str, arm_name: str, st) -> bool | None:
    """True/False when the arm's declaration or manifest says whether `col` exists; None when unknown."""
    arm = st.arms.get(arm_name)
    if arm is None:
        return None
    if col in arm.factors or col in arm.strata or col == arm.cluster:
        return True
    man = manifest_of(st, arm_name)
    if man is None:
        return None
    return col in man[0]


def check_arm(low, arm_name: str, arm_node: Any, st) -> bool:
    """Checks of `group_gap` on strata, `decompose`, `share` and `agreement` on one arm."""
    sink = st.sink
    arm = st.arms.get(arm_name)
    if arm is None:
        return True
    name, params, ok = low.name, low.bound.params, True
    if name == "group_gap":
        col = params.get("factor")
        known = _column_known(col, arm_name, st)
        if known is False or (known is None and not arm.strata and not arm.factors):
            sink.emit("E0469", low.bound.arg_node("factor"),
                      f"`{col}` is neither a factor nor a stratum of arm `{arm_name}`",
                      f"add `strata: {col}` (or `factors: [{col}]`) to arm `{arm_name}`, or name a column it has")
            ok = False
    elif name == "agreement":
        col = params.get("label")
        if _column_known(col, arm_name, st) is False:
            man = manifest_of(st, arm_name)
            guess = did_you_mean(col, man[0]) if man else None
            sink.emit("E0470", low.bound.arg_node("label"), f"arm `{arm_name}` has no label column `{col}`",
                      f"did you mean '{guess}'?" if guess else "name the manifest column that holds the judge's labels")
            ok = False
        if arm.source == "images" and params.get("metric") != "auroc" and params.get("threshold") is None:
            sink.emit("E0471", low.bound.arg_node("metric") if "metric" in low.bound.args else low.bound.call,
                      f"`agreement(metric: {params.get('metric')})` compares a call with the label, "
                      f"but on the images arm `{arm_name}` no `threshold:` says where the score makes its call",
                      "add `threshold: t` (the score at or above which the call is 1; a list of ascending cut "
                      "points for classes 0..K−1), or use `metric: auroc`")
            ok = False
        cuts = params.get("threshold")
        if isinstance(cuts, list) and (list(cuts) != sorted(cuts) or len(set(cuts)) != len(cuts)
                                       or (params.get("metric") in ("f1", "auroc") and len(cuts) > 1)):
            sink.emit("E0471", low.bound.arg_node("threshold"),
                      f"`threshold: {cuts}` must be strictly ascending cut points"
                      + (f" and `metric: {params.get('metric')}` takes one" if params.get("metric") in ("f1", "auroc")
                         else ""),
                      "list the cut points from low to high, each once (f1 and auroc: two classes, one cut point)")
            ok = False
    return ok


def replicates_problem(name: str, params, arm: ir.ArmIR | None, scale: str) -> str | None:
    """Why statistic `name` on `arm` gives no cluster-bootstrap replicates (its `replicates` entry), else None.

    One side of `difference(...)`/`ratio(...)` needs them: the comparison resamples both readings
    with the same draws. `check` refuses such a reading (E0477, `check_replicates`); the run's
    `stats.comparisons.read` says the same for a cell it meets.
    """
    from scoreaudit import registry

    rule = registry.statistics.get(name).meta.get("replicates", "always") if name in registry.statistics \
        else "always"
    if rule == "never":
        return f"`{name}` is a share with its own exact interval and gives no bootstrap replicates"
    if rule == "scale sd" and scale != "sd":
        return (f"`{name}` under `scale: raw` is a cluster-robust regression coefficient tested with t and "
                "gives no bootstrap replicates")
    factor = (params or {}).get("factor")
    if rule == "strata" and arm is not None and factor in arm.factors:
        return (f"`{name}({factor}, ...)` on arm `{arm.name}`, where `{factor}` is one of the arm's factors, is "
                "a counterfactual regression contrast tested with t and gives no bootstrap replicates")
    return None


def check_replicates(low, arm_name: str, node: Any, st) -> bool:
    """E0477: a reading of `difference`/`ratio` whose statistic gives no bootstrap replicates on `arm_name`."""
    scale = st.settings.scale if st.settings is not None else "sd"
    why = replicates_problem(low.name, low.bound.params, st.arms.get(arm_name), scale)
    if why is None:
        return True
    help = ("compare the two with separate claims" if scale == "sd" or low.entry.meta.get("replicates") != "scale sd"
            else "use `scale: sd` (its estimate is bootstrapped), or compare the two with separate claims")
    if low.entry.meta.get("replicates") == "strata":
        help = (f"declare `{low.bound.params.get('factor')}` as one of the arm's `strata:` instead of its "
                "`factors:` (a stratum gap is bootstrapped), or compare the two with separate claims")
    st.sink.emit("E0477", node, f"{why}, so it cannot be one side of a comparison", help)
    return False


def check_combination(low, sink) -> bool:
    """`share(decompose(...), part:)` and `decompose(group_gap(...), via: attribute_effect(...))` shapes."""
    if low.name == "share" and low.inner is not None and low.inner.name != "decompose":
        sink.emit("E0467", low.bound.arg_node("statistic"),
                  f"`share` takes a `decompose(...)`, not `{low.inner.name}(...)`",
                  "write `share(decompose(group_gap(s, a, b), via: attribute_effect(o, measure: m)), part: confound)`")
        return False
    if low.name == "decompose":
        gap = low.inner
        via = (low.extra or {}).get("via")
        bad = []
        if gap is not None and gap.name != "group_gap":
            bad.append((low.bound.arg_node("gap"), f"the gap is `{gap.name}(...)`; decompose splits a `group_gap(...)`"))
        if via is None:
            bad.append((low.bound.call, "`via:` is missing"))
        elif via.name != "attribute_effect":
            bad.append((low.bound.arg_node("via"),
                        f"`via:` is `{via.name}(...)`; the explained part comes from an `attribute_effect(...)`"))
        for node, msg in bad:
            sink.emit("E0468", node, f"decompose: {msg}",
                      "write `decompose(group_gap(tone, \"dark\", \"light\"), via: attribute_effect(light, measure: ita))`")
        return not bad
    return True


# ---------------------------------------------------------------- claims


def _manifest_key(arm: ir.ArmIR) -> str | None:
    p = arm.call.params
    return p.get("manifest") if isinstance(p.get("manifest"), str) else None


def static_pairing(readings: list[ir.ReadingIR], audit: ir.AuditIR) -> str:
    """How the two readings will be resampled, as the spec tells it (the data decides the rest).

    Same arm and rows: paired. Arms over the same manifest: paired on their
    shared ids. Otherwise the run pairs them on the clusters they share, if
    any, and resamples them independently when they share none.
    """
    a, b = readings
    if a.arm is None or b.arm is None:  # probe readings: clusters are the probes' prompts
        pa, pb = a.statistic.params.get("probe"), b.statistic.params.get("probe")
        if pa == pb:
            return f"paired: the same prompts of probe {pa}"
        qa, qb = (audit.probes.get(x) for x in (pa, pb))
        if qa is not None and qb is not None and qa.call.params.get("prompts") == qb.call.params.get("prompts"):
            return f"paired: probes {pa} and {pb} read the same prompts"
        return (f"paired on the prompts probes {pa} and {pb} share; independent if they share none (decided from "
                "the data)")
    if a.arm == b.arm:
        if a.where == b.where:
            return f"paired: the same clusters of {a.arm}"
        return (f"paired on the clusters of {a.arm} that hold both groups; independent if the groups are "
                "in different clusters (decided from the data)")
    ma, mb = (audit.arms.get(x.arm) for x in (a, b))
    if ma is not None and mb is not None and _manifest_key(ma) and _manifest_key(ma) == _manifest_key(mb):
        return f"paired: {a.arm} and {b.arm} are built from the same manifest ids"
    return f"independent unless {a.arm} and {b.arm} share cluster ids (decided from the data)"
