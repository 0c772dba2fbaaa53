"""`simulate --truth FILE`: the JSON of planted truths, checked key by key and merged over the spec's own.

Shape: {SCORER | PROBE | "*": {KEY: value, "arms": {ARM: {KEY: value}}, "strata": {"col=level": {KEY: value}}}}
with KEY one of stats.planted.TRUTH_KEYS (a scorer's planted response) or PROBE_KEYS (a probe's drift; a
PROBE entry holds only those and `noise`). A key nothing reads would be ignored without a word, so every
unknown name is an E0740 (with the closest valid one and the full list), located in the file; so is a value
of the wrong type or out of range.

Merging (`merged_truth`): each scorer starts from its `planted(...)` arguments in the spec (a scorer of
another kind from the null truth), then "*" of the file, then its own entry, key by key: a file that plants
one scorer keeps the spec's planted parameters of every other.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scoreaudit.compiler.ir import AuditIR
from scoreaudit.diagnostics import Diagnostic, DiagnosticError, Span, did_you_mean
from scoreaudit.stats.planted import TRUTH_KEYS

PROBE_KEYS = ("probe_drift", "probe_shift")
NESTED = ("arms", "strata")
NUMBERS = frozenset({"fidelity", "asymmetry", "noise", "placebo", "slope", "effect", "gap", "rating", "step",
                     *PROBE_KEYS})
NON_NEGATIVE = frozenset({"noise", "step"})
NAMES = frozenset({"slope_by", "factor", "rated_by"})  # a column or measure name, or null
CODE = "E0740"


class _Checker:
    def __init__(self, ir: AuditIR, path: str | None, text: str | None):
        self.ir, self.path, self.text = ir, path, text
        self.diags: list[Diagnostic] = []

    def span(self, keys: tuple[str, ...]) -> Span | None:
        """Where the last of `keys` is written: each key searched for after its parent's position."""
        if self.text is None:
            return None
        pos, found = 0, None
        for k in keys:
            for quoted in (json.dumps(k, ensure_ascii=False), json.dumps(k)):
                found = re.compile(re.escape(quoted) + r"\s*:").search(self.text, pos)
                if found:
                    break
            if found is None:
                return None
            pos = found.start()
        start, end = found.start(), found.start() + len(json.dumps(k, ensure_ascii=False))
        line = self.text.count("\n", 0, start) + 1
        col = start - (self.text.rfind("\n", 0, start) + 1) + 1
        return Span(line, col, line, col + (end - start), start, end)

    def emit(self, keys: tuple[str, ...], message: str, help: str) -> None:
        where = "".join(f"[{json.dumps(k)}]" for k in keys)
        self.diags.append(Diagnostic(CODE, "error", f"truth{where}: {message}", self.span(keys), help, self.path))

    def unknown(self, keys: tuple[str, ...], what: str, valid: list[str], plural: str = "") -> None:
        guess = did_you_mean(keys[-1], valid)
        listing = ", ".join(valid) if valid else "(none in this spec)"
        self.emit(keys, f"unknown {what} {json.dumps(keys[-1])}: nothing reads it, so it would be ignored",
                  (f"did you mean {json.dumps(guess)}? " if guess else "") + f"valid {plural or what + 's'}: "
                  f"{listing}")

    def value(self, keys: tuple[str, ...], v: Any) -> None:
        key = keys[-1]
        if key in NUMBERS:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                self.emit(keys, f"{json.dumps(v)} is not a finite number", f"write a number, e.g. \"{key}\": 0.5")
            elif key in NON_NEGATIVE and v < 0:
                self.emit(keys, f"{v} is negative", f"\"{key}\" is a standard deviation or a step: 0 or more")
        elif key in NAMES and not (v is None or isinstance(v, str)):
            self.emit(keys, f"{json.dumps(v)} is not a name", "write a column or measure name in quotes, or null")
        elif key == "level" and not (v is None or (isinstance(v, (str, int, float)) and not isinstance(v, bool))):
            self.emit(keys, f"{json.dumps(v)} is not a level", "write the level as text, e.g. \"level\": \"1\"")

    def params(self, keys: tuple[str, ...], entry: Any, valid: tuple[str, ...], nested: bool) -> None:
        if not isinstance(entry, Mapping):
            self.emit(keys, f"{json.dumps(entry)[:60]} is not an object of planted parameters",
                      'write e.g. {"fidelity": 0.3, "noise": 1}')
            return
        allowed = list(valid) + (list(NESTED) if nested else [])
        for k, v in entry.items():
            here = keys + (k,)
            if k not in allowed:
                self.unknown(here, "key", allowed)
            elif k == "arms":
                self.group(here, v, "arm", sorted(self.ir.arms), lambda name: True)
            elif k == "strata":
                self.group(here, v, "stratum", [], lambda name: "=" in name)
            else:
                self.value(here, v)

    def group(self, keys: tuple[str, ...], v: Any, what: str, names: list[str], ok) -> None:
        if not isinstance(v, Mapping):
            self.emit(keys, f"is not an object of {what}s", f'write e.g. {{"{names[0] if names else "col=level"}"'
                      ': {"fidelity": 0.3}}')
            return
        for name, entry in v.items():
            here = keys + (name,)
            if names and name not in names:
                self.unknown(here, what, names)
            elif not ok(name):
                self.emit(here, f"{json.dumps(name)} is not a stratum", 'name it "column=level" (e.g. "tone=dark")')
            else:
                self.params(here, entry, TRUTH_KEYS + PROBE_KEYS, nested=False)

    def run(self, data: Any) -> list[Diagnostic]:
        if not isinstance(data, Mapping):
            self.emit((), "the file is not a JSON object", 'write {"SCORER": {"fidelity": 0.3}} (or "*" for every '
                      "scorer)")
            return self.diags
        scorers, probes = sorted(self.ir.scorers), sorted(self.ir.probes)
        for name, entry in data.items():
            if name == "*" or name in scorers:
                self.params((name,), entry, TRUTH_KEYS + PROBE_KEYS, nested=True)
            elif name in probes:
                self.params((name,), entry, PROBE_KEYS + ("noise",), nested=False)
            else:
                self.unknown((name,), "scorer or probe", ["*"] + scorers + probes, "scorers and probes")
        return self.diags


def check_truth(ir: AuditIR, data: Any, path: str | None = None, text: str | None = None) -> list[Diagnostic]:
    """E0740 for every unknown name and bad value of a truth mapping (located when the file's text is given)."""
    return _Checker(ir, path, text).run(data)


def read_truth(ir: AuditIR, path: str | Path) -> dict:
    """The checked truth file; DiagnosticError (every problem, located) when it has any."""
    p = str(path)
    from scoreaudit.safeio import read_regular

    text = read_regular(Path(p)).decode("utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        d = Diagnostic(CODE, "error", f"the truth file is not JSON: {e.msg}", Span.point(e.lineno, e.colno, e.pos),
                       'write a JSON object, e.g. {"SCORER": {"fidelity": 0.3}}', p)
        raise DiagnosticError([d], text) from None
    except RecursionError:
        raise DiagnosticError([Diagnostic(CODE, "error", "the truth file is nested too deeply to be read", None,
                                          "a truth file is two or three levels deep", p)], text) from None
    diags = check_truth(ir, data, p, text)
    if diags:
        raise DiagnosticError(diags, text)
    return data


def spec_truth(ir: AuditIR) -> dict:
    """Each scorer's planted truth from the spec: its `planted(...)` arguments, else the null truth."""
    return {name: dict(s.call.params) if s.call.plugin == "planted" else {"noise": 1.0}
            for name, s in ir.scorers.items()}


def _over(base: Mapping, top: Mapping) -> dict:
    out = dict(base)
    for k, v in top.items():
        if k in NESTED and isinstance(v, Mapping):
            inner = dict(out.get(k) or {})
            for name, entry in v.items():
                inner[name] = {**dict(inner.get(name) or {}), **dict(entry)}
            out[k] = inner
        else:
            out[k] = v
    return out


def merged_truth(ir: AuditIR, given: Mapping | None) -> dict:
    """The spec's truths with the file's laid over them key by key ("*" first, then each scorer's own)."""
    out: dict[str, Any] = spec_truth(ir)
    if not given:
        return out
    star = given.get("*") or {}
    for name in ir.scorers:
        out[name] = _over(_over(out[name], star), given.get(name) or {})
    for name, entry in given.items():  # "*" (for the probes' scorers' fallback) and probe entries
        if name not in ir.scorers:
            out[name] = dict(entry)
    return out
