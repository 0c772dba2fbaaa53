"""Where model files may come from: the containment rule for `weights:`, `local-dir:` and pipeline folders.

A spec from someone else must not make scoreaudit load (and so read, and for
some formats execute the loader of) files anywhere on the machine. A local
model path a spec names is accepted when it resolves (links followed) under one
of the model roots:

- the spec's own folder;
- the Hugging Face cache (`HF_HUB_CACHE`, `HF_HOME`/hub, ~/.cache/huggingface/hub), where
  `scoreaudit weights --download` puts snapshots;
- each folder the user names in the environment variable `SCOREAUDIT_MODELS`
  (several separated by `:`), set once outside any spec.

Anything else is E0707 at `check`, `weights SPEC` and `run` (all three go
through `model_path_diagnostics` before anything is opened), unless the
command line says `--allow-outside`. A pipeline or CLIP model named by a
Hugging Face id (no local folder of that name under the spec's folder, not
absolute, no `..`) is looked up in the cache only and is not a path.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from scoreaudit import registry
from scoreaudit.diagnostics import Diagnostic, Span
from scoreaudit.safeio import inside

MODELS_ENV = "SCOREAUDIT_MODELS"


def model_roots(spec_dir: Path) -> list[Path]:
    """The folders model files may lie under (module docstring), the spec's folder first."""
    from scoreaudit.plugins.scorers.model_weights import hf_cache_dir

    roots = [Path(spec_dir), hf_cache_dir()]
    roots += [Path(p).expanduser() for p in os.environ.get(MODELS_ENV, "").split(os.pathsep) if p.strip()]
    return roots


def allowed(path: Path, spec_dir: Path) -> bool:
    return any(inside(path, r) for r in model_roots(spec_dir))


def _local(value: str, spec_dir: Path) -> Path:
    q = Path(value).expanduser()
    return q if q.is_absolute() else Path(spec_dir) / q


def _folder_like(value: str, spec_dir: Path) -> bool:
    """Whether a pipeline/model name is used as a local folder (find_pipeline/locate_clip look there first)."""
    v = value.strip()
    return v.startswith(("/", "~", ".")) or ".." in Path(v).parts or (Path(spec_dir) / v).is_dir()


def named_paths(ir, spec_dir: Path) -> Iterator[tuple[str, str, str]]:
    """(what, declaration name, value as written) for every local model path the spec names."""
    for name, s in ir.scorers.items():
        p = s.call.params
        if isinstance(p.get("weights"), str):
            yield "weights", name, p["weights"]
        model = p.get("model")
        if isinstance(model, str) and model.startswith("local-dir:"):
            yield "model folder", name, model[len("local-dir:"):]
    users = [(n, a.call.params) for n, a in ir.arms.items() if registry.generated_arm(a.call.plugin)]
    users += [(n, pr.call.params) for n, pr in ir.probes.items()]
    for name, p in users:
        if isinstance(p.get("pipeline"), str) and _folder_like(p["pipeline"], spec_dir):
            yield "pipeline folder", name, p["pipeline"]
        for m in p.get("measures", []) or []:
            model = (m.get("params") or {}).get("model") if isinstance(m, dict) else None
            if isinstance(model, str) and _folder_like(model, spec_dir):
                yield "CLIP model folder", name, model


def _span(ir, value: str, name: str) -> Span | None:
    """The string literal holding `value` in declaration `name` (else its name), from the IR's spans."""
    from scoreaudit.compiler.ir import locate

    decl = ir.scorers.get(name) or ir.arms.get(name) or ir.probes.get(name)
    if decl is None:
        return None
    literal = locate(decl, value)
    return literal if literal is not decl.span else locate(decl, f"local-dir:{value}")


def model_path_diagnostics(ir, spec_path: str | Path, allow_outside: bool = False) -> list[Diagnostic]:
    """E0707 for every local model path outside the model roots (see the module docstring)."""
    if allow_outside or ir is None:
        return []
    spec_dir = Path(spec_path).resolve().parent
    out = []
    for what, name, value in named_paths(ir, spec_dir):
        path = _local(value, spec_dir)
        if allowed(path, spec_dir):
            continue
        out.append(Diagnostic(
            "E0707", "error", f"{what} '{value}' of '{name}' is outside the spec's folder, the Hugging Face cache "
                              f"and the folders in {MODELS_ENV}",
            span=_span(ir, value, name), path=str(spec_path),
            help=f"move the files under the spec's folder, name their folder once in the environment variable "
                 f"{MODELS_ENV} (e.g. export {MODELS_ENV}=~/models), or run with --allow-outside"))
    return out
