"""What a pre-registration lock commits to: every item of an audit that can change an outcome.

`lock_items(ir, spec_dir)` maps an item ("setting alpha", "scorer laion",
"arm real", "data data/real.csv", "operator light", "hypothesis H1", ...)
to a canonical one-line text built from the IR, so comments and layout never
count as changes while any changed setting, scorer parameter, dose, region,
placebo, measure, selection, validation, claim or data file does. Data files
(manifests, score/measure tables, `correlate` tables) are committed by
content hash when they exist at lock time; an image folder without a
manifest by a hash of its file names and sizes.

`reports/lock.py` writes and judges the lock file; the spec is parsed and
checked here (`checked_items`), in the compiler layer.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from scoreaudit.compiler import ir as irm

ITEMS_VERSION = 3  # 3: hypothesis titles verbatim; `data files of arm` items (runtime/datafiles.py)
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n]*|[^"#]+|["#]')


def normalise(text: str) -> str:
    """Drop comments (outside strings), collapse whitespace and drop it around punctuation.

    Strings are kept verbatim, so formatting never counts as a change but any
    changed word, number or string does.
    """
    out: list[str] = []
    code: list[str] = []

    def flush() -> None:
        c = re.sub(r"\s+", " ", "".join(code))
        out.append(re.sub(r"\s*([(),:\[\]{}<>=*|&!+-])\s*", r"\1", c))
        code.clear()

    for m in _TOKEN.finditer(text):
        tok = m.group(0)
        if tok.startswith('"') and len(tok) > 1:
            flush()
            out.append(tok)
        else:
            code.append(" " if tok.startswith("#") else tok)
    flush()
    return "".join(out).strip()


def _value(v: Any) -> str:
    if isinstance(v, dict) and {"name", "version", "params"} <= set(v):  # a nested statistic
        return _call(v["name"], v["version"], v.get("params") or {})
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_value(x)}" for k, x in sorted(v.items())) + "}"
    if isinstance(v, float) and v.is_integer():
        return repr(v)
    return json.dumps(v, ensure_ascii=False) if isinstance(v, str) else str(v).lower() if isinstance(v, bool) \
        else "none" if v is None else str(v)


def _call(plugin: str, version: str, params: dict) -> str:
    args = ", ".join(f"{k}: {_value(v)}" for k, v in sorted(params.items()))
    return f"{plugin}@{version}({args})"


def call_text(call: irm.PluginCall) -> str:
    return _call(call.plugin, call.version, call.model_dump(mode="json")["params"])


def region_text(expr) -> str:
    if expr.op == "call":
        return call_text(expr.call)
    if expr.op == "ref":
        return expr.name
    if expr.op == "not":
        return f"not ({region_text(expr.operand)})"
    return f"({region_text(expr.left)}) {'&' if expr.op == 'and' else '|'} ({region_text(expr.right)})"


from scoreaudit.compiler.ir import table_params  # noqa: E402 - defined beside the IR; used here and by the run


def data_paths(ir: irm.AuditIR) -> list[str]:
    """Every data file or folder the spec names, as written (relative to the spec's folder)."""
    out: list[str] = []
    for arm in ir.arms.values():
        p = arm.call.params
        for key in ("manifest", "scores", "measures"):
            if isinstance(p.get(key), str):
                out.append(p[key])
        if arm.source == "images" and not p.get("manifest") and isinstance(p.get("folder"), str):
            out.append(p["folder"])
    for key in ("scores", "measures"):
        v = getattr(ir.settings, key)
        if isinstance(v, str):
            out.append(v)
    out += list(table_params(ir.model_dump(mode="json")["hypotheses"]))
    return list(dict.fromkeys(out))


def data_hash(path: Path, root: Path) -> str | None:
    """'sha256 HEX' of a file (a folder: of its file names and sizes); None when absent or outside `root`."""
    from scoreaudit.safeio import inside, read_regular

    if not inside(path, root):
        return None
    try:
        if path.is_dir():
            h = hashlib.sha256()
            for f in sorted(path.iterdir()):
                if f.is_file():
                    h.update(f"{f.name}\0{f.stat().st_size}\n".encode("utf-8", "surrogateescape"))
            return f"folder listing sha256 {h.hexdigest()}"
        return f"sha256 {hashlib.sha256(read_regular(path)).hexdigest()}"
    except OSError:
        return None


def lock_items(ir: irm.AuditIR, spec_dir: Path | None = None) -> dict[str, str]:
    """item → canonical text of everything that can change an outcome (see the module docstring)."""
    items: dict[str, str] = {}
    for key, value in ir.settings.model_dump(mode="json").items():
        if key != "title":
            items[f"setting {key}"] = _value(value)
    for name, s in ir.scorers.items():
        items[f"scorer {name}"] = call_text(s.call)
    for name, arm in ir.arms.items():
        items[f"arm {name}"] = f"{arm.source} {arm.kind} " + call_text(arm.call)
    for name, r in ir.regions.items():
        items[f"region {name}"] = region_text(r.expr)
    for name, m in ir.measures.items():
        items[f"{m.role} {name}"] = call_text(m.call)
    for name, op in ir.operators.items():
        doses = ", ".join(_value(float(d)) for d in op.doses)
        kw = "placebo" if op.placebo_of else "operator"
        of = f" of {op.placebo_of}" if op.placebo_of else ""
        items[f"{kw} {name}"] = f"{call_text(op.call)}{of} doses {doses}"
    for v in ir.validations:
        items[f"validate {v.measure} under {v.operator}"] = ", ".join(f"{s} {o} {_value(x)}" for s, o, x in v.checks)
    for name, sel in ir.selections.items():
        under = f" under {sel.operator}" if sel.operator else ""
        items[f"select {name}"] = f"best_of {sel.n}{under} by {sel.measure}"
    for h in ir.hypotheses:
        # the title is a string: kept verbatim (normalising it dropped the space after a `:` in it)
        items[f"hypothesis {h.name}"] = f"{json.dumps(h.title, ensure_ascii=False)} {{ {normalise(h.text)} }}"
    if spec_dir is not None:
        root = Path(spec_dir)
        for rel in data_paths(ir):
            digest = data_hash(root / rel, root)
            if digest is not None:
                items[f"data {rel}"] = digest
    return items


def items_sha256(items: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(sorted(items.items()), ensure_ascii=False).encode("utf-8")).hexdigest()


def checked_items(spec_path: Path) -> tuple[irm.AuditIR, dict[str, str], str]:
    """Parse and check a spec; (IR, lock items, source). Raises DiagnosticError when it has errors."""
    from scoreaudit.compiler.check import check
    from scoreaudit.diagnostics import DiagnosticError, has_errors
    from scoreaudit.grammar.parser import parse
    from scoreaudit.safeio import read_regular

    spec_path = Path(spec_path)
    source = read_regular(spec_path).decode("utf-8")
    module, diags = parse(source, str(spec_path))
    ir = None
    if module is not None and not has_errors(diags):
        ir, more = check(module, source, str(spec_path))
        diags = list(diags) + list(more)
    if ir is None or has_errors(diags):
        raise DiagnosticError(diags, source)
    return ir, lock_items(ir, spec_path.resolve().parent), source


def deviations(locked: dict[str, str], current: dict[str, str]) -> list[dict[str, Any]]:
    """Item by item: added / removed / changed, with the locked and the current text.

    A data file absent at lock time was not committed, so only data items the
    lock holds are compared.
    """
    out = []
    for item in sorted(set(locked) | set(current)):
        a, b = locked.get(item), current.get(item)
        if a == b or (a is None and item.startswith("data ")):
            continue
        change = "added" if a is None else "removed" if b is None else "changed"
        kind, _, name = item.partition(" ")
        out.append({"item": item, "kind": kind, "hypothesis": name if kind == "hypothesis" else item,
                    "change": change, "locked": a, "current": b})
    return out
