"""Bind a call's arguments to a plugin's pydantic parameter model.

Positional arguments fill `entry.positional` in order; named arguments match a
field's name or alias. Values are converted from the syntax tree (numbers,
strings, bare names, lists, `column(x)`, `a * b`), names annotated with
`Ref(kind)` are resolved against the spec's declarations, and pydantic's
errors become diagnostics that point at the offending argument.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from scoreaudit import registry
from scoreaudit.compiler.resolve import REF_KINDS, Decls, Sink
from scoreaudit.compiler.values import number, product_names, text
from scoreaudit.diagnostics import did_you_mean
from scoreaudit.grammar import ast
from scoreaudit.registry import ColumnValue, PluginEntry, Ref


@dataclass(frozen=True)
class FieldSpec:
    """What the checker needs to know about one parameter."""

    name: str  # python field name (the key in the validated params)
    key: str  # the key pydantic accepts (alias when there is one)
    spelled: str  # how a spec writes it (alias when there is one)
    ref: str | None
    accepts_str: bool
    choices: tuple[str, ...]
    required: bool
    annotation: Any


def _walk(annotation: Any):
    """Every type inside an annotation (through Optional, Union, list, Annotated)."""
    yield annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        yield from _walk(typing.get_args(annotation)[0])
        return
    for arg in typing.get_args(annotation):
        if not isinstance(arg, (str, int, float)):
            yield from _walk(arg)


def ref_kind(annotation: Any, metadata: list | tuple = ()) -> str | None:
    for m in metadata:
        if isinstance(m, Ref):
            return m.kind
    for t in _walk(annotation):
        if typing.get_origin(t) is typing.Annotated:
            for m in typing.get_args(t)[1:]:
                if isinstance(m, Ref):
                    return m.kind
    return None


def literal_choices(annotation: Any) -> tuple[str, ...]:
    out: list[str] = []
    for t in _walk(annotation):
        if typing.get_origin(t) is Literal:
            out.extend(str(v) for v in typing.get_args(t))
    return tuple(out)


def accepts_str(annotation: Any) -> bool:
    return any(t is str or t is Any or typing.get_origin(t) is Literal for t in _walk(annotation))


@functools.cache
def fields_of(model: type[BaseModel]) -> dict[str, FieldSpec]:
    """Spelled argument name → FieldSpec (field names also work when the model populates by name)."""
    out: dict[str, FieldSpec] = {}
    by_name = bool(model.model_config.get("populate_by_name"))
    for fname, info in model.model_fields.items():
        alias = info.alias or fname
        spec = FieldSpec(
            name=fname,
            key=alias,
            spelled=alias,
            ref=ref_kind(info.annotation, info.metadata),
            accepts_str=accepts_str(info.annotation),
            choices=literal_choices(info.annotation),
            required=info.is_required(),
            annotation=info.annotation,
        )
        out[alias] = spec
        if by_name and alias != fname:
            out[fname] = spec
    return out


@dataclass
class Bound:
    """A validated call: params (JSON-able, by field name) and what the checker needs later."""

    entry: PluginEntry
    call: ast.Call
    params: dict[str, Any]
    args: dict[str, ast.Arg] = field(default_factory=dict)  # field name → the argument as written
    inner: Any = None  # lowered nested statistic (Ref("statistic")): the first one
    inners: dict[str, Any] = field(default_factory=dict)  # every nested statistic by field name
    factors: list[tuple[str, Any]] = field(default_factory=list)  # (factor name, node) to check per arm

    def arg_node(self, fname: str) -> Any:
        arg = self.args.get(fname)
        return arg if arg is not None else self.call


# A hook that lowers a nested statistic call; returns (lowered, ok).
StatLowering = Callable[[ast.Call], tuple[Any, bool]]


class _Bad(Exception):
    """A value already reported; its field is left out of validation."""


def bind(call: ast.Call, entry: PluginEntry, decls: Decls, sink: Sink,
         lower_stat: StatLowering | None = None, what: str | None = None) -> Bound | None:
    """Validate `call` against `entry`; None when any argument was wrong (all reported)."""
    specs = fields_of(entry.params)
    what = what or f"`{entry.name}`"
    ok = True
    given: dict[str, tuple[FieldSpec, ast.Arg]] = {}
    seen_named = False
    for i, arg in enumerate(call.args):
        if arg.name is None:
            if seen_named:
                sink.emit("E0304", arg, f"positional argument after a named one in {what}",
                          "write positional arguments first, then `name: value` ones")
                ok = False
                continue
            if i >= len(entry.positional):
                takes = (f"takes {len(entry.positional)} positional argument(s) "
                         f"({', '.join(entry.positional)})" if entry.positional
                         else "takes no positional arguments")
                names = ", ".join(f"{s.spelled}:" for s in _unique(specs))
                sink.emit("E0304", arg, f"too many positional arguments: {what} {takes}",
                          f"name the argument: {names}" if names else "remove the argument")
                ok = False
                continue
            spec = _spec_by_field(specs, entry.positional[i])
        else:
            seen_named = True
            spec = specs.get(arg.name.name)
            if spec is None:
                cands = [s.spelled for s in _unique(specs)]
                guess = did_you_mean(arg.name.name, cands)
                help = (f"did you mean '{guess}'?" if guess else
                        (f"{what} takes: {', '.join(cands)}" if cands else f"{what} takes no arguments"))
                sink.emit("E0301", arg.name, f"unknown argument `{arg.name.name}` for {what}", help)
                ok = False
                continue
        if spec.name in given:
            sink.emit("E0305", arg, f"argument `{spec.spelled}` of {what} is given twice",
                      "keep one of them")
            ok = False
            continue
        given[spec.name] = (spec, arg)

    data: dict[str, Any] = {}
    bound = Bound(entry=entry, call=call, params={})
    for fname, (spec, arg) in given.items():
        bound.args[fname] = arg
        try:
            data[spec.key] = _convert(arg.value, spec, arg, entry, what, decls, sink, lower_stat, bound)
        except _Bad:
            ok = False
    try:
        model = entry.params.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = err.get("loc") or ()
            key = str(loc[0]) if loc else ""
            spec = specs.get(key)
            if err["type"] == "missing":
                ok = False
                if spec is not None and spec.name in given:
                    continue  # given, but its value was reported already
                example = spec.spelled if spec else key
                sink.emit("E0302", call.func, f"{what} needs the argument `{example}`",
                          f"add `{example}: ...` to the call"
                          + (f" (one of: {', '.join(spec.choices)})" if spec and spec.choices else ""))
                continue
            ok = False
            if spec is None or spec.name not in given:
                sink.emit("E0303", call, f"invalid arguments for {what}: {err['msg']}")
                continue
            _, arg = given[spec.name]
            help = None
            if spec.choices:
                guess = closest_choice(_plain(arg.value), spec.choices)
                help = (f"did you mean '{guess}'?" if guess else
                        f"`{spec.spelled}` is one of: {', '.join(spec.choices)}")
            sink.emit("E0303", arg.value, f"invalid value `{text(arg.value)}` for `{spec.spelled}` "
                      f"of {what}: {_pyd_msg(err)}", help)
        return None
    if not ok:
        return None
    check = entry.fact("param_problems")
    for fname, msg, help in (check(model.model_dump()) if check else ()):
        node = given[fname][1] if fname in given else call
        sink.emit("E0303", node, f"invalid arguments for {what}: {msg}", help)
        ok = False
    if not ok:
        return None
    bound.params = model.model_dump(mode="json")
    for fname, (spec, _) in given.items():
        if spec.ref == "statistic" and fname in bound.inners:
            bound.params[fname] = bound.inners[fname].name
    return bound


def closest_choice(value: str, choices) -> str | None:
    """Did-you-mean for a fixed set of choices: a case-only difference first (`l` → `L`)."""
    for c in choices:
        if c.lower() == value.lower():
            return c
    return did_you_mean(value, choices)


def _unique(specs: dict[str, FieldSpec]) -> list[FieldSpec]:
    seen, out = set(), []
    for s in specs.values():
        if s.name not in seen:
            seen.add(s.name)
            out.append(s)
    return out


def _spec_by_field(specs: dict[str, FieldSpec], fname: str) -> FieldSpec:
    for s in specs.values():
        if s.name == fname:
            return s
    raise KeyError(fname)  # a registry bug: positional names a missing field


def _plain(v: Any) -> str:
    if isinstance(v, (ast.Name, ast.Ident)):
        return v.name
    if isinstance(v, ast.String):
        return v.value
    return text(v)


def _pyd_msg(err: Mapping[str, Any]) -> str:
    msg = str(err.get("msg", "invalid value"))
    return msg[0].lower() + msg[1:] if msg else msg


def _convert(v: Any, spec: FieldSpec, arg: ast.Arg, entry: PluginEntry, what: str, decls: Decls,
             sink: Sink, lower_stat: StatLowering | None, bound: Bound) -> Any:
    """AST value → the Python value pydantic validates; resolves Ref names."""
    if isinstance(v, ast.ListValue):
        return [_convert(item, spec, arg, entry, what, decls, sink, lower_stat, bound) for item in v.items]
    if isinstance(v, ast.Range):
        return _range(v, spec, what, sink)
    if spec.ref == "statistic":
        if not isinstance(v, ast.Call):
            sink.emit("E0608", v, f"`{spec.spelled}` of {what} must be a statistic call, not `{text(v)}`",
                      "write the statistic as a call, e.g. `asymmetry(light)`")
            raise _Bad
        if lower_stat is None:
            sink.emit("E0608", v, f"a statistic cannot appear inside {what}")
            raise _Bad
        lowered, good = lower_stat(v)
        if not good:
            raise _Bad
        if bound.inner is None:
            bound.inner = lowered
        bound.inners[spec.name] = lowered
        return v.func.name
    if spec.ref == "probe_measure":  # `measures: [ita, clip_attribute(labels: [...])]` of a probe
        return _probe_measure(v, decls, sink)
    if isinstance(v, ast.Call) and spec.ref == "prompts":
        from scoreaudit.compiler.prompts import BadPrompts, lower_template

        try:
            return lower_template(v, sink)
        except BadPrompts:
            raise _Bad from None
    if isinstance(v, ast.Call):
        sink.emit("E0303", v, f"a call is not a valid value for `{spec.spelled}` of {what}",
                  "only statistics take a nested call (e.g. `transfers(asymmetry(light), ...)`)")
        raise _Bad
    if isinstance(v, ast.Product):
        terms = product_names(v)
        for t in terms:
            if not isinstance(t, (ast.Name, ast.String)):
                sink.emit("E0303", t, f"a model formula is made of factor names, not `{text(t)}`",
                          "write e.g. `model: race * gender`")
                raise _Bad
        if not spec.accepts_str:
            sink.emit("E0303", v, f"`{spec.spelled}` of {what} does not take a model formula")
            raise _Bad
        for t in terms:
            bound.factors.append((_plain(t), t))
        return " * ".join(_plain(t) for t in terms)
    if isinstance(v, ast.Column):
        if spec.ref == "column":
            return v.name.name
        return ColumnValue(column=v.name.name).model_dump()
    if isinstance(v, ast.Number):
        return number(v)
    if isinstance(v, ast.String):
        if not spec.accepts_str:
            sink.emit("E0303", v, f"`{spec.spelled}` of {what} takes {_type_word(spec)}, not a string",
                      "write the value without quotes" if spec.ref else None)
            raise _Bad
        name = v.value
    elif isinstance(v, (ast.Name, ast.Ident)):
        name = v.name
    else:  # pragma: no cover - the grammar produces no other values
        sink.emit("E0303", v, f"unsupported value for `{spec.spelled}` of {what}")
        raise _Bad
    if spec.ref in REF_KINDS:
        resolved = decls.resolve(v, spec.ref, sink, f"(argument `{spec.spelled}` of {what})")
        if resolved is None:
            raise _Bad
        return resolved
    if spec.ref == "factor":
        bound.factors.append((name, v))
    return name


def _probe_measure(v: Any, decls: Decls, sink: Sink) -> dict:
    """`ita` or `clip_attribute(labels: [...])` in a probe's `measures:` → {"measure": name, "params": {...}}.

    E0856 for anything that is not a probe measure (spec/probes.md); a call's arguments are bound
    against the measure's own parameter model like any plugin call.
    """
    reg = registry.probe_measures
    if isinstance(v, (ast.Name, ast.Ident, ast.String)):
        name, node, call = (v.value if isinstance(v, ast.String) else v.name), v, None
    elif isinstance(v, ast.Call):
        name, node, call = v.func.name, v.func, v
    else:
        sink.emit("E0856", v, f"`{text(v)}` is not a probe measure",
                  f"write a probe measure's name or call: {', '.join(reg.names())}")
        raise _Bad
    if name not in reg:
        guess = did_you_mean(name, reg.names())
        sink.emit("E0856", node, f"unknown probe measure `{name}`",
                  f"did you mean '{guess}'?" if guess else f"probe measures: {', '.join(reg.names())}")
        raise _Bad
    if call is None:
        call = ast.Call(ast.Ident(name, v.span), (), v.span)
    bound = bind(call, reg.get(name), decls, sink, what=f"probe measure `{name}`")
    if bound is None:
        raise _Bad
    unavailable = reg.get(name).meta.get("unavailable")  # W0859: its extra is not installed here
    missing = unavailable(bound.params) if unavailable is not None else None
    if missing:
        sink.emit("W0859", node, f"probe measure `{name}` cannot run here: {missing}",
                  "install the extra the message names; `check` passes, `run` stops at this probe without it")
    return {"measure": name, "params": bound.params}


MAX_RANGE = 100_000  # whole numbers a `a..b` value may expand to


def _range(v: ast.Range, spec: FieldSpec, what: str, sink: Sink) -> list[int]:
    """`0..4` → [0, 1, 2, 3, 4] (both ends included); E0854 unless it is a short run of whole numbers."""
    if not (v.start.is_int and v.stop.is_int):
        sink.emit("E0854", v, f"the range `{text(v)}` for `{spec.spelled}` of {what} must run between whole numbers",
                  f"write e.g. `{spec.spelled}: 0..4`")
        raise _Bad
    lo, hi = int(number(v.start)), int(number(v.stop))  # whole numbers (checked above)
    if hi < lo:
        sink.emit("E0854", v, f"the range `{text(v)}` for `{spec.spelled}` of {what} runs backwards",
                  f"write the smaller number first: `{v.stop.text}..{v.start.text}`")
        raise _Bad
    if hi - lo + 1 > MAX_RANGE:
        sink.emit("E0854", v, f"the range `{text(v)}` for `{spec.spelled}` of {what} holds {hi - lo + 1:,} numbers "
                  f"(at most {MAX_RANGE:,})", "use a shorter range")
        raise _Bad
    return list(range(lo, hi + 1))


def _type_word(spec: FieldSpec) -> str:
    ann = spec.annotation
    kinds = set()
    for t in _walk(ann):
        if t in (int, float):
            kinds.add("a number")
        elif t is bool:
            kinds.add("true or false")
        elif isinstance(t, type) and issubclass(t, BaseModel):
            kinds.add("column(...)")
        elif typing.get_origin(t) in (list, tuple):
            kinds.add("a list")
    return " or ".join(sorted(kinds)) or "another type"

