"""What a report is built from: the bundle's files, read once, never recomputed.

`ReportContext` holds results.json, the IR (ir.json, when present) and the
exact spec text, plus small lookups the section builders share (an operator's
dose unit, a cell's test, hypothesis titles). Section builders read only this.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from scoreaudit.compiler import settings as setting_defs


class BundleError(Exception):
    """The folder is not a readable results bundle (what is missing, and what to do)."""


def load_json(path: Path) -> Any:
    from scoreaudit.safeio import JSONTooDeep, loads_bounded, read_regular

    try:
        return loads_bounded(read_regular(path).decode("utf-8"))
    except JSONTooDeep as e:
        raise BundleError(f"{path}: {e}") from None
    except FileNotFoundError:
        raise BundleError(f"{path} not found: is {path.parent} a results folder written by `scoreaudit run`?") from None
    except UnicodeDecodeError as e:
        raise BundleError(f"{path} is not UTF-8 text (byte {e.start}): it is not a scoreaudit results file") from None
    except json.JSONDecodeError as e:
        raise BundleError(f"{path} is not valid JSON (line {e.lineno}, column {e.colno}): {e.msg}") from None
    except OSError as e:
        raise BundleError(f"cannot read {path}: {e.strerror or e}") from None


# ---------------------------------------------------------------- shapes of the bundle's JSON

_OBJ, _LIST, _STR, _NUM = dict, list, str, (int, float)
_NONE = type(None)
#: results.json: key -> (type(s) of the value, type(s) of each item or entry value); what the
#: report and verify read without further checks (spec/results.schema.json has the full schema)
RESULTS_SHAPE: dict[str, tuple] = {
    "tool": (_OBJ, None), "title": (_STR, None), "spec": (_OBJ, None), "lock": ((_OBJ, _NONE), None),
    "settings": (_OBJ, None), "environment": (_OBJ, None), "plan": (_OBJ, None), "arms": (_OBJ, _OBJ),
    "exclusions": (_LIST, _OBJ), "hypotheses": (_LIST, _OBJ), "cells": (_LIST, _OBJ), "verdicts": (_LIST, _OBJ),
    "validations": (_LIST, _OBJ), "sections": (_OBJ, None), "warnings": (_LIST, _OBJ), "tables": (_OBJ, _STR),
    "table_sha256": (_OBJ, _STR), "precomputed": (_LIST, _OBJ),
}
#: fields of each cell: numbers, text and lists the report formats
CELL_SHAPE: dict[str, tuple] = {
    **{k: (_NUM, _NONE) for k in ("estimate", "ci_low", "ci_high", "ci_level", "se", "p", "q")},
    **{k: (_STR, _NONE) for k in ("id", "hypothesis", "scorer", "arm", "statistic", "inner", "claim_text",
                                  "outcome", "method", "undefined", "qualifier", "interval", "sentence")},
    "axis": (_LIST, _NONE),
    "arms": (_LIST, _NONE), "params": (_OBJ, _NONE), "test": (_OBJ, _NONE), "detail": (_OBJ, _NONE),
}
#: ir.json: the collections the report looks names up in
IR_SHAPE: dict[str, tuple] = {k: (_OBJ, _OBJ) for k in ("scorers", "arms", "operators", "placebos", "regions",
                                                          "measures", "covariates", "selections")}
IR_SHAPE.update(hypotheses=(_LIST, _OBJ), validations=(_LIST, _OBJ), settings=(_OBJ, None),
                report=((_OBJ, _NONE), None))


def _json_type(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null"}.get(
        type(v), "a number" if isinstance(v, (int, float)) else type(v).__name__)


def _wrong(v: Any, types) -> bool:
    types = types if isinstance(types, tuple) else (types,)
    if isinstance(v, bool) and bool not in types:  # JSON true/false is not a number here
        return True
    return not isinstance(v, types)


def shape_problems(data: Any, shape: dict[str, tuple], name: str) -> list[str]:
    """What in a bundle JSON file does not have the shape scoreaudit writes (edited, or another version).

    Checked when a bundle is read, so a hand-edited file is one message naming the key, not a
    traceback deep in the report. Only keys present are checked (older bundles lack some).
    """
    if not isinstance(data, dict):
        return [f"{name} holds {_json_type(data)}, not an object"]
    out = []
    for key, (types, item) in shape.items():
        if key not in data:
            continue
        v = data[key]
        if _wrong(v, types):
            out.append(f"{name}: '{key}' is {_json_type(v)}")
            continue
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
        for k, x in (items if item is not None else ()):
            if _wrong(x, item):
                out.append(f"{name}: '{key}'[{k!r}] is {_json_type(x)}")
                break
    if shape is RESULTS_SHAPE and isinstance(data.get("cells"), list):
        for i, cell in enumerate(data["cells"]):
            bad = [k for k, types in CELL_SHAPE.items() if isinstance(cell, dict) and k in cell and _wrong(cell[k], types)]
            if bad:
                out.append(f"{name}: cells[{i}] '{bad[0]}' is {_json_type(cell[bad[0]])}")
                break
    return out


def check_shape(data: Any, shape: dict[str, tuple], path: Path) -> None:
    """BundleError naming the first misshapen key of `path` (see `shape_problems`)."""
    problems = shape_problems(data, shape, path.name)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise BundleError(f"{path.parent / problems[0]}{more}: not what `scoreaudit run` writes (the file was "
                          "edited, or written by another version); run the audit again to get a readable bundle")


#: what report code raises on bundle data of an unexpected shape deeper than `shape_problems` looks
DATA_ERRORS = (TypeError, AttributeError, KeyError, ValueError, IndexError)


def unreadable(bundle_dir: Path, exc: BaseException) -> BundleError:
    """A BundleError for report code that failed on the bundle's data (one line, what to do)."""
    import traceback

    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" in {Path(frame.filename).name}:{frame.lineno}" if frame else ""
    return BundleError(f"cannot build the report from {bundle_dir}: {type(exc).__name__}: {str(exc)[:200]}{where}. "
                       "Its files are not what `scoreaudit run` writes (edited, or another version): "
                       f"`scoreaudit verify {bundle_dir}` names what changed; run the audit again for a readable "
                       "bundle (if verify passes, this is a bug in scoreaudit: please report it)")


@dataclass(frozen=True)
class ReportContext:
    bundle_dir: Path
    results: dict
    ir: dict = field(default_factory=dict)
    spec_text: str = ""
    thumbnails: dict = field(default_factory=dict)  # thumbnails.json: operator -> one image at every dose
    run: dict = field(default_factory=dict)  # run.json: the runtime's record (its `warnings` reach the report)

    @classmethod
    def load(cls, bundle_dir: Path) -> ReportContext:
        from scoreaudit.safeio import links_outside

        bundle_dir = Path(bundle_dir)
        if bundle_dir.exists() and not bundle_dir.is_dir():
            raise BundleError(f"{bundle_dir} is not a folder: give the results folder written by `scoreaudit run`")
        outside = links_outside(bundle_dir) if bundle_dir.is_dir() else []
        if outside:
            raise BundleError(f"{bundle_dir} has links that point outside it ({', '.join(outside[:5])}): "
                              "a results folder is read only inside itself; remove the links")
        results = load_json(bundle_dir / "results.json")
        if not isinstance(results, dict) or "cells" not in results:
            raise BundleError(f"{bundle_dir / 'results.json'} has no 'cells': it is not a scoreaudit results file")
        check_shape(results, RESULTS_SHAPE, bundle_dir / "results.json")
        ir_path = bundle_dir / "ir.json"
        ir = load_json(ir_path) if ir_path.exists() else {}
        check_shape(ir, IR_SHAPE, ir_path)
        spec_path = bundle_dir / "spec.audit"
        if spec_path.exists():
            from scoreaudit.safeio import read_regular

            try:
                spec_text = read_regular(spec_path).decode("utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise BundleError(f"cannot read {spec_path} as UTF-8 text ({e})") from None
        else:
            spec_text = (results.get("spec") or {}).get("text") or ""
        thumbs_path = bundle_dir / "thumbnails.json"
        thumbs = load_json(thumbs_path) if thumbs_path.exists() else {}
        run_path = bundle_dir / "run.json"
        run = load_json(run_path) if run_path.exists() else {}
        return cls(bundle_dir=bundle_dir, results=results, ir=ir or {}, spec_text=spec_text,
                   thumbnails=thumbs if isinstance(thumbs, dict) else {}, run=run if isinstance(run, dict) else {})

    # ------------------------------------------------------------ lookups

    @property
    def title(self) -> str:
        r = self.results
        return ((self.ir.get("report") or {}).get("title") or r.get("title")
                or (r.get("settings") or {}).get("title") or "scoreaudit report")

    @property
    def audit_title(self) -> str:
        return (self.results.get("settings") or {}).get("title") or ""

    @cached_property
    def spec_sha256(self) -> str:
        return hashlib.sha256(self.spec_text.encode("utf-8")).hexdigest()

    @property
    def scale(self) -> str:
        return (self.results.get("settings") or {}).get("scale", "sd")

    @property
    def alpha(self) -> float:
        return float((self.results.get("settings") or {}).get("alpha", setting_defs.default("alpha")))

    def section(self, name: str) -> list:
        """The section's rows in the shape spec/bundle.md documents (long tables are regrouped)."""
        from scoreaudit.reports.adapt import normalise

        rows = normalise(name, (self.results.get("sections") or {}).get(name) or [], self)
        return sorted(rows, key=self._order_key) if all(isinstance(r, dict) for r in rows) else rows

    def _order_key(self, row: dict) -> tuple:
        """Declaration order of scorers and arms (the spec's order, not the alphabet)."""
        scorers = list(self.ir.get("scorers") or (self.results.get("environment") or {}).get("scorers") or {})
        arms = list(self.ir.get("arms") or self.results.get("arms") or {})
        rank = lambda xs, x: xs.index(x) if x in xs else len(xs)  # noqa: E731
        return (rank(scorers, row.get("scorer")), rank(arms, row.get("arm")))

    def measures_unit(self, measure: str | None) -> str:
        """A measure plugin's declared unit (registry meta), or the measure's name."""
        m = (self.ir.get("measures") or {}).get(measure or "") or {}
        plugin = (m.get("call") or {}).get("plugin")
        try:
            from scoreaudit.registry import load_plugins

            reg = load_plugins(entry_points=False)
            for kind in ("measure", "covariate"):
                if plugin and plugin in reg[kind]:
                    return str(reg[kind].get(plugin).meta.get("unit") or measure or "")
        except Exception:  # noqa: BLE001 - the report must render even when a plugin module is broken
            pass
        return measure or ""

    @cached_property
    def operators(self) -> dict:
        return dict(self.ir.get("operators") or {})

    def dose_unit(self, operator: str) -> str:
        """The operator plugin's declared dose unit (registry meta), or "dose"."""
        op = self.operators.get(operator) or {}
        plugin = (op.get("call") or {}).get("plugin")
        if not plugin:
            return "dose"
        try:
            from scoreaudit.registry import load_plugins

            reg = load_plugins(entry_points=False)["operator"]
            if plugin in reg:
                return str(reg.get(plugin).meta.get("unit") or "dose")
        except Exception:  # noqa: BLE001 - the report must render even when a plugin module is broken
            return "dose"
        return "dose"

    @cached_property
    def tests(self) -> dict[str, dict]:
        """cell id → its test (kind, threshold, low, high), from the cell or else the IR."""
        out: dict[str, dict] = {}
        for h in self.ir.get("hypotheses") or []:
            for c in h.get("cells") or []:
                if c.get("test"):
                    out[c["id"]] = c["test"]
        for c in self.results.get("cells") or []:
            if c.get("test"):
                out[c["id"]] = c["test"]
        return out

    @cached_property
    def hypothesis_titles(self) -> dict[str, str]:
        titles = {h.get("name"): h.get("title", "") for h in self.ir.get("hypotheses") or []}
        titles.update({h.get("name"): h.get("title", "") for h in self.results.get("hypotheses") or []})
        return titles

    def label(self, kind: str, name) -> str:
        """How the report names a scorer, arm or operator: its `label: "..."` when the spec gave one."""
        if name is None:
            return ""
        decl = (self.ir.get({"scorer": "scorers", "arm": "arms", "operator": "operators"}[kind]) or {}).get(name) or {}
        return str(decl.get("label") or name)

    def arm_text(self, cell: dict) -> str:
        """A cell's arm, by label: `source → target` for a transfer over two arms, `A vs B` for a comparison
        of readings on two arms (`difference`/`ratio`: neither is a source)."""
        if cell.get("arm"):
            return self.label("arm", cell["arm"])
        join = " vs " if cell.get("statistic") in ("difference", "ratio") else " \u2192 "
        return join.join(self.label("arm", a) for a in cell.get("arms") or [])

    def cells_for(self, statistic: str) -> list[dict]:
        return [c for c in self.results.get("cells") or [] if c.get("statistic") == statistic]
