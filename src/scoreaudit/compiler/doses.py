"""Dose lists and ranges → sorted floats, checked against the operator's meta.

Rules (spec/language.md, "Doses"): a range `a..b step s` includes `a` and
every `a + k·s <= b`; the identity dose is always scored (it is the original
image), so when a list omits it the checker adds it and warns; duplicates
warn and are dropped; a dose outside the operator's `dose_range` is an error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scoreaudit.compiler.resolve import Sink
from scoreaudit.compiler.values import text
from scoreaudit.grammar import ast
from scoreaudit.registry import PluginEntry

MAX_DOSES = 1000
#: Two doses are one dose when they agree to this many decimals (0.1 + 0.2 and 0.3 are one dose).
DOSE_DECIMALS = 9
_SCALE = 10.0 ** DOSE_DECIMALS
_HUGE = 1e15  # beyond this a float has no 9th decimal (and d·10⁹ may overflow): the key is the dose itself


def dose_key(d: float) -> float:
    """The canonical value of a dose: equal doses have equal keys (use it for `==`, sets and dict keys).

    Computed as numpy rounds (`rint(d·10⁹)/10⁹`, ties to even), so a key made
    here equals one `dose_keys` makes from a table column.
    """
    d = float(d)
    if not abs(d) < _HUGE:  # also NaN and ±inf
        return d
    return round(d * _SCALE) / _SCALE


def dose_keys(values) -> np.ndarray:
    """`dose_key` of every value of an array, list or table column (float64)."""
    v = np.asarray(values, dtype=np.float64)
    small = np.abs(v) < _HUGE
    if small.all():
        return np.round(v, DOSE_DECIMALS)
    out = v.copy()
    out[small] = np.round(v[small], DOSE_DECIMALS)
    return out


def same_dose(a: float, b: float) -> bool:
    return dose_key(a) == dose_key(b)


def is_dose(values, d: float) -> np.ndarray:
    """Boolean mask: which of `values` are the dose `d`."""
    return dose_keys(values) == dose_key(d)


def _fmt(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class DoseSet:
    doses: tuple[float, ...]
    identity: float
    symmetric: bool


def expand(doses: ast.Doses, sink: Sink, what: str) -> list[tuple[float, object]] | None:
    """(value, node) pairs in written order; None after an error."""
    if isinstance(doses, ast.DoseList):
        return [(dose_key(n.value), n) for n in doses.values]
    start, stop, step = float(doses.start.value), float(doses.stop.value), float(doses.step.value)
    if step <= 0:
        sink.emit("E0402", doses.step, f"the step of the dose range of {what} must be positive, not {doses.step.text}",
                  f"write e.g. `{doses.start.text}..{doses.stop.text} step 1`")
        return None
    if stop < start:
        sink.emit("E0402", doses, f"the dose range `{text(doses.start)}..{text(doses.stop)}` of {what} is empty "
                  "(it ends before it starts)", f"write `{doses.stop.text}..{doses.start.text} step {doses.step.text}`")
        return None
    ratio = (stop - start) / step
    if not math.isfinite(ratio) or ratio + 1 > MAX_DOSES:
        shown = f"{int(ratio) + 1:,}" if math.isfinite(ratio) and ratio < 1e15 else "too many"
        sink.emit("E0402", doses, f"the dose range of {what} has {shown} doses; at most {MAX_DOSES} are allowed",
                  "use a larger step")
        return None
    count = int(math.floor(ratio + 1e-9)) + 1
    return [(dose_key(start + k * step), doses) for k in range(count)]


def check_doses(values: list[tuple[float, object]], entry: PluginEntry, sink: Sink, what: str,
                decl_span_node: object) -> DoseSet | None:
    identity = float(entry.fact("identity"))
    lo, hi = entry.meta.get("dose_range", (-math.inf, math.inf))
    ok = True
    for v, node in values:
        if not (lo <= v <= hi):
            sink.emit("E0401", node, f"dose {_fmt(v)} of {what} is outside the range of `{entry.name}` "
                      f"[{_fmt(lo)}, {_fmt(hi)}]",
                      f"use doses from {_fmt(lo)} to {_fmt(hi)} ({entry.meta.get('unit', 'dose units')}); "
                      f"{_fmt(identity)} is the identity")
            ok = False
    seen: dict[float, object] = {}
    for v, node in values:
        if v in seen:
            sink.emit("W0402", node, f"dose {_fmt(v)} of {what} is listed twice; it is scored once",
                      "remove the repeated dose")
        else:
            seen[v] = node
    if not ok:
        return None
    doses = sorted(seen)
    if identity not in seen:
        sink.emit("W0401", decl_span_node, f"the doses of {what} omit the identity dose {_fmt(identity)} of "
                  f"`{entry.name}`; it is added (the unaltered image is always scored)",
                  f"add {_fmt(identity)} to the doses to silence this warning")
        doses = sorted(doses + [identity])
    if len(doses) < 2:
        sink.emit("E0405", decl_span_node, f"{what} has only the identity dose {_fmt(identity)}, so it changes nothing",
                  "add doses on either side of the identity, e.g. "
                  f"`doses {_fmt(identity - 1)}, {_fmt(identity)}, {_fmt(identity + 1)}` (within the operator's range)")
        return None
    return DoseSet(tuple(doses), identity, is_symmetric(doses, identity))


def is_symmetric(doses: list[float] | tuple[float, ...], identity: float) -> bool:
    """Every dose d has its mirror 2·identity − d, and there is at least one pair."""
    s = {dose_key(d) for d in doses}
    if not any(d != dose_key(identity) for d in s):
        return False
    return all(dose_key(2 * identity - d) in s for d in s)
