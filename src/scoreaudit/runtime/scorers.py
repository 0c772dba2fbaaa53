"""Scorer factory and the `scoreaudit scorers` listing.

Availability is decided without importing heavy libraries: a scorer's
`requires` meta names the modules it imports (checked with
`importlib.util.find_spec`, which does not run them), and a scorer class may
offer the readiness hook documented in `plugins/base.py` to say whether its
weights are on this machine.
"""

from __future__ import annotations

import importlib.util
import io
import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scoreaudit.plugins.base import ScorerUnavailable
from scoreaudit.registry import PluginEntry, load_plugins, scorers

MODELS_EXTRA = "pip install 'scoreaudit[models]'"

# How to get each module a scorer may require (module import name -> install hint).
INSTALL_HINTS: dict[str, str] = {
    "torch": MODELS_EXTRA,
    "torchvision": MODELS_EXTRA,
    "open_clip": MODELS_EXTRA,
    "transformers": MODELS_EXTRA,
    "safetensors": MODELS_EXTRA,
    "huggingface_hub": MODELS_EXTRA,
    "skvideo": "pip install 'scoreaudit[niqe]'",
}


def module_available(name: str) -> bool:
    """True when `name` can be imported here; nothing is imported (only the top-level package is located)."""
    try:
        return importlib.util.find_spec(name.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def missing_requirements(entry: PluginEntry) -> list[str]:
    return [m for m in entry.meta.get("requires", ()) if not module_available(m)]


def install_hint(modules: list[str]) -> str:
    hints = sorted({INSTALL_HINTS.get(m, f"pip install {m}") for m in modules})
    return " and ".join(hints)


def missing_message(entry: PluginEntry, missing: list[str]) -> str:
    what = ", ".join(missing)
    if all(INSTALL_HINTS.get(m) == MODELS_EXTRA for m in missing):
        return f"{entry.name} needs the models extra ({what} not installed): {MODELS_EXTRA}"
    return f"{entry.name} needs {what}, which is not installed: {install_hint(missing)}"


def _default_params(entry: PluginEntry):
    try:
        return entry.params.model_validate({})
    except Exception:  # noqa: BLE001 - a required argument: the defaults alone do not validate
        return None


def readiness(entry: PluginEntry, params: Any = None) -> tuple[bool, str]:
    """(ready, detail) for one scorer on this machine, importing nothing heavy."""
    missing = missing_requirements(entry)
    if missing:
        return False, missing_message(entry, missing)
    hook = getattr(entry.impl, "readiness", None)
    if callable(hook):
        try:
            ready, detail = hook(params if params is not None else _default_params(entry))
        except ScorerUnavailable as e:
            return False, str(e)
        return bool(ready), str(detail)
    needs = entry.meta.get("requires", ())
    return True, ("installed: " + ", ".join(needs)) if needs else "built in, no weights"


def resolve_paths(params: dict, base_dir: str | Path | None) -> dict:
    """Scorer arguments with relative local paths (`weights:`, `model: "local-dir:..."`) made absolute
    against `base_dir`, the spec's folder, as every other path in a spec is; ~ is expanded."""
    if base_dir is None:
        return dict(params)
    out = dict(params)

    def absolute(p: str) -> str:
        q = Path(p).expanduser()
        return str(q if q.is_absolute() else Path(base_dir) / q)

    if isinstance(out.get("weights"), str):
        out["weights"] = absolute(out["weights"])
    model = out.get("model")
    if isinstance(model, str) and model.startswith("local-dir:"):
        out["model"] = "local-dir:" + absolute(model[len("local-dir:"):])
    return out


def make_scorer(scorer_ir, device: str, precision: str = "auto", base_dir: str | Path | None = None):
    """Instantiate the scorer a ScorerIR names, or raise ScorerUnavailable saying what is missing.

    `scorer_ir.call.params` are the validated parameters as plain data; they are
    re-validated into the plugin's model so implementations get typed params.
    Relative weight paths resolve against `base_dir` (the spec's folder).
    """
    load_plugins()
    name = scorer_ir.call.plugin
    if name not in scorers:
        raise ScorerUnavailable(
            f"no scorer called {name!r} is registered here (known: {', '.join(scorers.names())}); "
            "a third-party scorer must be installed so that its `scoreaudit.plugins` entry point loads"
        )
    entry = scorers.get(name)
    params = entry.params.model_validate(resolve_paths(dict(scorer_ir.call.params), base_dir))
    ready, detail = readiness(entry, params)
    if not ready:
        raise ScorerUnavailable(f"scorer {scorer_ir.name!r}: {detail}")
    return entry.impl(params, device=device, precision=precision)


def readiness_diagnostics(ir, spec_dir: str | Path | None, path: str | None = None) -> list:
    """W0810 for every declared scorer that cannot run here, naming everything it lacks (at `path`, the spec;
    located by the span each scorer carries in the IR).

    Scorers whose scores a precomputed table gives on every arm are skipped (they never run).
    Light: locates files, imports no model library.
    """
    from scoreaudit.compiler.coverage import is_table_only
    from scoreaudit.diagnostics import Diagnostic

    load_plugins()
    out = []
    for s in ir.scorers.values():
        if s.call.plugin not in scorers or is_table_only(ir, s.name):
            continue
        entry = scorers.get(s.call.plugin)
        try:
            params = entry.params.model_validate(resolve_paths(dict(s.call.params), spec_dir))
        except Exception:  # noqa: BLE001 - the compiler already reported bad arguments
            continue
        ready, detail = readiness(entry, params)
        if ready:
            continue
        fetch = (f"run `scoreaudit weights --download {s.call.plugin}` (or the `hf download` commands in the message) "
                 "with internet access, or give `weights:` a local path")
        if missing_requirements(entry):
            fetch = install_hint(missing_requirements(entry))
        out.append(Diagnostic("W0810", "warning", f"scorer `{s.name}` ({s.call.plugin}) cannot run here: {detail}",
                              span=s.span, help=fetch, path=path))
    return out


# ------------------------------------------------------------------ listing


@dataclass(frozen=True)
class ParamInfo:
    name: str
    type: str
    default: Any
    required: bool


@dataclass(frozen=True)
class ScorerInfo:
    name: str
    version: str
    summary: str
    needs_prompt: bool
    requires: tuple[str, ...]
    ready: bool
    detail: str
    params: tuple[ParamInfo, ...]
    official: str = ""  # the official implementation the scorer's numbers are tested against
    tolerance: str = ""  # how closely (tests/models)
    gpu_precision: str = ""  # the precision used on a GPU


def value_text(value: Any) -> str:
    """A default as the language writes it: `none`, `true`, `"text"`, `2.5`, `[a, b]`."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return str(value)


def _param_infos(entry: PluginEntry) -> tuple[ParamInfo, ...]:
    """Parameters with their types in the language's words (`string | none`, `column(name)`), not Python's."""
    from scoreaudit.compiler.describe import param_type
    from scoreaudit.compiler.params import fields_of

    out, seen = [], set()
    for spec in fields_of(entry.params).values():
        if spec.name in seen:
            continue
        seen.add(spec.name)
        field = entry.params.model_fields[spec.name]
        required = field.is_required()
        default = None if required else field.get_default(call_default_factory=True)
        out.append(ParamInfo(name=spec.spelled, type=param_type(entry, spec.name), default=default, required=required))
    return tuple(out)


def scorer_infos() -> list[ScorerInfo]:
    load_plugins()
    infos = []
    for entry in scorers:
        ready, detail = readiness(entry)
        infos.append(ScorerInfo(
            name=entry.name,
            version=entry.version,
            summary=entry.summary,
            needs_prompt=bool(entry.fact("needs_prompt")),
            requires=tuple(entry.meta.get("requires", ())),
            ready=ready,
            detail=detail,
            params=_param_infos(entry),
            official=str(entry.meta.get("official", "")),
            tolerance=str(entry.meta.get("tolerance", "")),
            gpu_precision=str(entry.meta.get("gpu_precision", "")),
        ))
    return infos


def _param_text(p: ParamInfo) -> str:
    return f"{p.name}: {p.type}" + (" (required)" if p.required else f" = {value_text(p.default)}")


def _plain(infos: list[ScorerInfo]) -> str:
    lines = []
    for s in infos:
        state = "ready" if s.ready else "NOT READY"
        prompt = "needs a prompt" if s.needs_prompt else "no prompt"
        lines.append(f"{s.name}  [{state}]  ({prompt}, version {s.version})")
        lines.append(f"    {s.summary}")
        lines.append(f"    params: {', '.join(_param_text(p) for p in s.params) or 'none'}")
        lines.append(f"    {s.detail}")
        if s.official:
            lines.append(f"    matches: {s.official}")
            lines.append(f"    tolerance: {s.tolerance}")
            lines.append(f"    GPU precision: {s.gpu_precision}")
        lines.append("")
    ready = sum(s.ready for s in infos)
    lines.append(f"{ready} of {len(infos)} scorers ready on this machine")
    return "\n".join(lines)


def _rich(infos: list[ScorerInfo], width: int | None = None) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="Scorers", show_lines=True)
    table.add_column("scorer", style="bold")
    table.add_column("parameters")
    table.add_column("prompt")
    table.add_column("ready")
    for s in infos:
        state = "[green]ready[/green]" if s.ready else "[red]not ready[/red]"
        official = (f"\n[dim]matches: {escape(s.official)}\ntolerance: {escape(s.tolerance)}\n"
                    f"GPU precision: {escape(s.gpu_precision)}[/dim]") if s.official else ""
        table.add_row(
            f"{escape(s.name)}\n[dim]{escape(s.summary)}[/dim]{official}",
            escape("\n".join(_param_text(p) for p in s.params) or "-"),
            "yes" if s.needs_prompt else "no",
            f"{state}\n[dim]{escape(s.detail)}[/dim]",
        )
    buf = io.StringIO()
    Console(file=buf, force_terminal=True, width=width).print(table)
    return buf.getvalue().rstrip("\n")


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        return repr(value)


def list_scorers(as_json: bool = False, tty: bool | None = None) -> str:
    """Every registered scorer, its parameters, whether it needs a prompt and whether it is ready here.

    JSON when `as_json`; a rich table when stdout is a terminal; plain text
    (no colour codes) otherwise. Imports nothing heavy, so it is quick and
    works without torch.
    """
    infos = scorer_infos()
    if as_json:
        rows = []
        for s in infos:
            d = asdict(s)
            d["requires"] = list(s.requires)
            d["params"] = [{**asdict(p), "default": _jsonable(p.default)} for p in s.params]
            rows.append(d)
        return json.dumps(rows, indent=2)
    if tty is None:
        tty = sys.stdout.isatty()
    return _rich(infos) if tty else _plain(infos)
