"""The words of a probe reading (`probe_drift`, `probe_shift`, `probe_transition`): what it measures and in which unit.

"Under probe up, pick's ita drifts by +0.91° [0.52, 1.30] (90% CI) from the first to the last
iteration, p = 0.003 (claim: ...): supported."

The unit is the probe measure plugin's declared `unit` (registry meta, as the
report's `measures_unit` reads it), so a new measure states its own unit with
no change here; `measure: score` is the scorer's own score, in its score units.
"""

from __future__ import annotations

from collections.abc import Callable

PROBE_STATISTICS = ("probe_drift", "probe_shift", "probe_transition")
SCORE_UNIT = "score units"
#: units written as a symbol attached to the number (+0.91°), the rest after a space (+0.12 share)
SYMBOLS = {"degrees": "\u00b0"}


def measure_unit(measure: str | None) -> str:
    """The declared unit of a probe measure (registry meta `unit`); the scorer's score units for `score`."""
    if measure in (None, "", "score"):
        return SCORE_UNIT
    from scoreaudit import registry

    registry.load_plugins()
    for kind in ("probe_measure", "measure", "covariate"):
        reg = registry.REGISTRIES[kind]
        if measure in reg:
            return str(reg.get(measure).meta.get("unit") or measure)
    return str(measure)


def with_unit(number: str, unit: str) -> str:
    """`+0.91°`, `+1.2 score units`: a formatted number and its unit."""
    return f"{number}{SYMBOLS[unit]}" if unit in SYMBOLS else f"{number} {unit}" if unit else number


def reading_unit(statistic: str, params: dict) -> str:
    """The unit of a probe reading's estimate: a label shift is a change in a share of images."""
    if statistic in ("probe_shift", "probe_transition"):
        return "share"
    return measure_unit(params.get("measure"))


def probe_phrase(cell: dict, number: Callable[[float | None], str], ci: str, level: str) -> str:
    """`ita drifts by +0.91° [lo, hi] (90% CI) from the first to the last iteration`."""
    p = cell.get("params") or {}
    est = with_unit(number(cell.get("estimate")), reading_unit(cell["statistic"], p))
    if cell["statistic"] == "probe_transition":
        d = cell.get("detail") or {}
        n = f" ({d['transitions']} of {d['trajectories']} trajectories)" if "transitions" in d else ""
        return (f"share of trajectories starting as {_labels(p.get('initial'))} that end as "
                f"{_labels(p.get('final'))} ({p.get('measure') or 'clip_attribute'}) is {est} {ci} ({level}){n}, "
                "first to last iteration")
    if cell["statistic"] == "probe_shift":
        subject = f"share of images labelled {p.get('label', '?')!r} ({p.get('measure') or 'clip_attribute'})"
        verb = "moves by"
    else:
        subject, verb = str(p.get("measure", "?")), "drifts by"
    return f"{subject} {verb} {est} {ci} ({level}) from the first to the last iteration"


def _labels(v) -> str:
    """'white', or 'black' or 'asian' for a set of labels."""
    return " or ".join(repr(str(x)) for x in v) if isinstance(v, list) else repr(str(v))
