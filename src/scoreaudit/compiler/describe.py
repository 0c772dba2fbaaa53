"""`scoreaudit describe NAME`: the documentation of a registered entry or a setting.

Generated from the registries (docstring, pydantic parameter model, meta), so
it cannot drift from what the checker accepts.
"""

from __future__ import annotations

import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from scoreaudit import registry
from scoreaudit.compiler import settings as setting_defs
from scoreaudit.compiler.params import fields_of

META_LABELS = {
    "identity": "identity dose",
    "dose_range": "dose range",
    "pixel_local": "pixel-local",
    "on_device": "runs on the GPU in a CUDA run",
    "takes_tensors": "scores device tensors on the tensor path (--tensor-path)",
    "unit": "unit",
    "needs": "needs",
    "returns": "returns",
    "scope": "scope",
    "needs_prompt": "needs a prompt",
    "uses_item": "score depends on which image, operator and dose it is (cached per item)",
    "reads_data": "scores read from data (no forward passes)",
    "data_params": "parameters naming manifest columns (none given: tables only)",
    "requires": "requires packages",
    "validation": "validation check",
}

# setting → what it means, read from its one definition (compiler/settings.py)
SETTING_DOCS = {name: setting_defs.doc(name) for name in setting_defs.NAMES}


def type_text(annotation: Any) -> str:
    """A reader's rendering of a parameter type (`region name`, `'L' | 'a' | 'b'`, `[column, ...]`)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        for m in args[1:]:
            if isinstance(m, registry.Ref):
                return {"column": "column name", "statistic": "statistic call"}.get(m.kind, f"{m.kind} name")
        return type_text(args[0])
    if origin is typing.Literal:  # the language writes these as bare words or numbers
        return " | ".join(str(a) for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        parts = [type_text(a) for a in args if a is not type(None)]
        out = " | ".join(dict.fromkeys(parts))
        return out + (" | none" if type(None) in args else "")
    if origin in (list, tuple):
        return f"[{type_text(args[0]) if args else 'any'}, ...]"
    if annotation is typing.Any:
        return "any"
    if isinstance(annotation, type):
        if issubclass(annotation, registry.ColumnValue):
            return "column(name)"
        if issubclass(annotation, BaseModel):
            return annotation.__name__
        return {"str": "string", "int": "integer", "float": "number", "bool": "true | false"}.get(
            annotation.__name__, annotation.__name__)
    return str(annotation)


def param_rows(entry: registry.PluginEntry) -> list[tuple[str, str, str]]:
    """(name, type, default) per parameter, positional ones marked."""
    rows = []
    seen = set()
    for spec in fields_of(entry.params).values():
        if spec.name in seen:
            continue
        seen.add(spec.name)
        info = entry.params.model_fields[spec.name]
        if info.is_required():
            default = "required"
        else:
            d = info.default if info.default is not PydanticUndefined else None
            default = "none" if d is None else repr(d)
        name = spec.spelled
        if spec.name in entry.positional:
            name += f" (positional {entry.positional.index(spec.name) + 1})"
        rows.append((name, param_type(entry, spec.name), default))
    return rows


def param_type(entry: registry.PluginEntry, field: str) -> str:
    """One parameter's type in the language's words (`region name`, `string | none`)."""
    info = entry.params.model_fields[field]
    ref = next((m for m in info.metadata if isinstance(m, registry.Ref)), None)
    return type_text(typing.Annotated[info.annotation, ref] if ref is not None else info.annotation)


def _meta_text(meta: dict) -> list[str]:
    out = []
    for k, v in meta.items():
        if callable(v):  # a check the compiler runs (param_problems, arm_problem): the docstring says it
            continue
        if isinstance(v, (tuple, list)):
            v = ", ".join(map(str, v)) if k != "dose_range" else f"[{v[0]:g}, {v[1]:g}]"
        out.append(f"{META_LABELS.get(k, k)}: {v}")
    return out


def describe_entry(entry: registry.PluginEntry) -> str:
    lines = [f"{entry.name}  ({entry.kind}, version {entry.version})", ""]
    lines.append(entry.doc.strip() or "(no documentation)")
    rows = param_rows(entry)
    lines.append("")
    if rows:
        lines.append("parameters:")
        w = max(len(r[0]) for r in rows)
        for name, typ, default in rows:
            lines.append(f"  {name:<{w}}  {typ}  (default: {default})")
    else:
        lines.append("parameters: none")
    meta = _meta_text(dict(entry.meta))
    if meta:
        lines.append("")
        lines.extend(meta)
    return "\n".join(lines)


def describe(name: str) -> str | None:
    """Documentation of every entry called `name` (and of the audit setting), or None."""
    parts = [describe_entry(e) for e in registry.lookup(name)]
    if name in setting_defs.NAMES:
        info = setting_defs.Settings.model_fields[name]
        bounds = setting_defs.range_of(name)
        parts.append(f"{name}  (audit setting)\n\n{setting_defs.doc(name)}\n\n"
                     f"type: {type_text(info.annotation)}  (default: {info.default!r})"
                     + (f"\nrange: {bounds.text()}" if bounds else ""))
    return "\n\n---\n\n".join(parts) if parts else None
