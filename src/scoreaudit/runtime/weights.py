"""`scoreaudit weights`: every file a model scorer needs, where it is, and fetching the missing ones.

Listing imports nothing heavy (no torch): the files come from each scorer's `hub_files`
hook and are looked up with huggingface_hub's own cache resolution. `--download` is the
only place scoreaudit touches the network: `hf_hub_download` into the Hugging Face cache
($HF_HUB_CACHE), which is exactly where `run` looks; runs themselves never download.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from scoreaudit.plugins.base import ScorerUnavailable
from scoreaudit.registry import load_plugins, scorers


@dataclass(frozen=True)
class FileState:
    repo: str
    names: tuple[str, ...]
    role: str
    about: str
    path: str | None = None  # the cached file when present
    size: int | None = None  # bytes, when present
    problem: str | None = None  # present but not a usable file (checkpoint_problem)

    @property
    def ready(self) -> bool:
        return self.path is not None and self.problem is None


@dataclass(frozen=True)
class ScorerFiles:
    target: str  # what the user named: a scorer, or `spec.audit:scorer`
    scorer: str  # the plugin
    files: tuple[FileState, ...] = ()
    local: str | None = None  # readiness detail when the spec gives `weights:` (local files, nothing to fetch)
    local_ready: bool = False
    error: str | None = None
    builtin: bool = False  # a scorer that reads no weight files: ready wherever scoreaudit runs
    kind: str = "scorer"

    @property
    def ready(self) -> bool:
        if self.builtin:
            return True
        if self.error is not None:
            return False
        if self.local is not None:
            return self.local_ready
        return all(f.ready for f in self.files)

    def missing(self) -> list[FileState]:
        return [f for f in self.files if not f.ready]


@dataclass(frozen=True)
class PipelineFiles:
    """A diffusers pipeline that a spec's generated arms or probes load (listed by `weights SPEC`)."""

    target: str  # `spec.audit:arm` (every arm and probe that loads it, comma-separated)
    pipeline: str  # a folder under the spec's folder, or a Hugging Face id
    revision: str | None = None
    local: bool = False  # a folder under the spec's folder: nothing to fetch
    path: str | None = None  # the folder or cached snapshot, when complete
    problem: str | None = None  # why it cannot load here
    kind: str = "pipeline"

    @property
    def ready(self) -> bool:
        return self.problem is None

    def fetch(self) -> list[str]:
        if self.ready or self.local:
            return []
        return [f'hf download {self.pipeline} --include "*.json" "*.txt" "*.fp16.safetensors"']


def _state(needed) -> FileState:
    from scoreaudit.plugins.scorers.model_weights import checkpoint_problem

    path = needed.cached()
    if path is None:
        return FileState(needed.repo, tuple(needed.names), needed.role, needed.about)
    return FileState(needed.repo, tuple(needed.names), needed.role, needed.about, path=str(path),
                     size=Path(path).stat().st_size, problem=checkpoint_problem(Path(path)))


def _files_for(target: str, plugin: str, params: Any) -> ScorerFiles:
    from scoreaudit.runtime.scorers import readiness

    entry = scorers.get(plugin)
    hook = getattr(entry.impl, "hub_files", None)
    if hook is None:
        return ScorerFiles(target, plugin, builtin=True)
    if getattr(params, "weights", None) is not None or str(getattr(params, "model", "")).startswith("local-dir:"):
        ready, detail = readiness(entry, params)
        return ScorerFiles(target, plugin, local=detail, local_ready=ready)
    try:
        needed = hook(params)
    except ScorerUnavailable as e:
        return ScorerFiles(target, plugin, error=str(e))
    return ScorerFiles(target, plugin, files=tuple(_state(n) for n in needed))


def model_scorer_names() -> list[str]:
    load_plugins()
    return [e.name for e in scorers if hasattr(e.impl, "hub_files")]


def collect(targets: Sequence[str]) -> list[ScorerFiles | PipelineFiles]:
    """Targets: scorer names (default arguments) or .audit files (their scorers, as declared, and the
    diffusers pipelines of their generated arms and probes).

    Raises ValueError naming an unknown scorer; an unreadable or invalid spec raises the
    facade's own errors.
    """
    load_plugins()
    out: list[ScorerFiles | PipelineFiles] = []
    for t in targets or model_scorer_names():
        if t.endswith(".audit"):
            out.extend(_from_spec(t))
            continue
        if t not in scorers:
            close = difflib.get_close_matches(t, [e.name for e in scorers], n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"no scorer called {t!r}; {hint}(model scorers: {', '.join(model_scorer_names())})")
        entry = scorers.get(t)
        try:
            params = entry.params.model_validate({})
        except Exception:  # noqa: BLE001 - a required argument
            out.append(ScorerFiles(t, t, error=f"{t} has required arguments: name it through a .audit file"))
            continue
        out.append(_files_for(t, t, params))
    return out


def _from_spec(path: str) -> list[ScorerFiles | PipelineFiles]:
    from scoreaudit.compiler.check import check
    from scoreaudit.diagnostics import DiagnosticError, has_errors
    from scoreaudit.grammar.parser import parse
    from scoreaudit.runtime.scorers import resolve_paths

    source = Path(path).read_text(encoding="utf-8")
    module, diags = parse(source, path)
    ir = None
    if module is not None and not has_errors(diags):
        ir, more = check(module, source, path)
        diags = list(diags) + list(more)
    if ir is None or has_errors(diags):
        raise DiagnosticError(diags, source)
    base = Path(path).resolve().parent
    out = []
    for s in ir.scorers.values():
        entry = scorers.get(s.call.plugin)
        if not hasattr(entry.impl, "hub_files"):
            continue
        params = entry.params.model_validate(resolve_paths(dict(s.call.params), base))
        out.append(_files_for(f"{path}:{s.name}", s.call.plugin, params))
    return out + _pipelines(path, ir, base)


def _pipelines(path: str, ir, base: Path) -> list[PipelineFiles]:
    """Each distinct (pipeline, revision) of the spec's generated arms and probes, found or not."""
    from scoreaudit.runtime.generation import GenerationUnavailable, PipelineMissing, find_pipeline

    users: dict[tuple[str, str | None], list[tuple[str, str]]] = {}
    loaders = [(n, "arm", a.call.params) for n, a in ir.arms.items() if a.call.plugin == "generate"]
    loaders += [(n, "probe", p.call.params) for n, p in ir.probes.items()]
    for name, kind, params in loaders:
        users.setdefault((params["pipeline"], params.get("revision")), []).append((name, kind))
    out = []
    for (pipe, rev), names in users.items():
        target = f"{path}:{','.join(n for n, _ in names)}"
        try:
            folder, local = find_pipeline(names[0][0], {"pipeline": pipe, "revision": rev}, base, kind=names[0][1])
        except PipelineMissing:
            out.append(PipelineFiles(target, pipe, rev, problem="missing (not in the Hugging Face cache, "
                                     "not a folder under the spec's folder)"))
        except GenerationUnavailable as e:  # an incomplete folder or snapshot: the message names the files
            out.append(PipelineFiles(target, pipe, rev, local=(base / pipe).is_dir(), problem=str(e)))
        else:
            out.append(PipelineFiles(target, pipe, rev, local=local, path=str(folder)))
    return out


def fetch_lines(files: Sequence[FileState]) -> list[str]:
    """One `hf download REPO FILE...` per repo, in order of first appearance."""
    by_repo: dict[str, list[str]] = {}
    for f in files:
        by_repo.setdefault(f.repo, []).append(f.names[0])
    return [f"hf download {repo} {' '.join(names)}" for repo, names in by_repo.items()]


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


def render(reports: Sequence[ScorerFiles | PipelineFiles]) -> str:
    from scoreaudit.plugins.scorers.model_weights import hf_cache_dir

    lines = [f"Hugging Face cache: {hf_cache_dir()} (set HF_HUB_CACHE to use another folder)", ""]
    for r in reports:
        state = "ready" if r.ready else "NOT READY"
        lines.append(f"{r.target}  [{state}]")
        if isinstance(r, PipelineFiles):
            lines += _pipeline_lines(r)
        elif r.builtin:
            lines.append(f"    {r.scorer} is built in: it reads no weight files (nothing to fetch)")
        elif r.error is not None:
            lines.append(f"    {r.error}")
        elif r.local is not None:
            lines.append(f"    weights: given in the spec (local files, nothing to fetch): {r.local}")
        else:
            for f in r.files:
                name = f.names[0] + (f" (or {' or '.join(f.names[1:])})" if len(f.names) > 1 else "")
                if f.ready:
                    where = f"cached, {_size(f.size or 0)}: {f.path}"
                elif f.path is not None:
                    where = f"INVALID: {f.problem}"
                else:
                    where = f"missing ({f.about or 'size unknown'})"
                lines.append(f"    {f.repo}/{name}  [{f.role}]  {where}")
            missing = r.missing()
            if missing:
                again = r.target.rsplit(":", 1)[0] if ".audit:" in r.target else r.scorer
                lines.append(f"    fetch the {len(missing)} missing file{'s' if len(missing) > 1 else ''} with "
                             f"`scoreaudit weights --download {again}`, or:")
                lines += [f"      {cmd}" for cmd in fetch_lines(missing)]
        lines.append("")
    ready = sum(r.ready for r in reports)
    lines.append(f"{ready} of {len(reports)} ready on this machine")
    return "\n".join(lines)


def _pipeline_lines(r: PipelineFiles) -> list[str]:
    rev = f" (revision {r.revision})" if r.revision else ""
    if r.ready:
        where = "folder under the spec's folder" if r.local else "cached"
        return [f"    diffusers pipeline {r.pipeline}{rev}: {where}: {r.path}"]
    lines = [f"    diffusers pipeline {r.pipeline}{rev}: {r.problem}"]
    if r.fetch():
        again = r.target.rsplit(":", 1)[0]
        lines += [f"    fetch what it loads with `scoreaudit weights --download {again}`, or:"]
        lines += [f"      {cmd}" for cmd in r.fetch()]
    return lines


def to_json(reports: Sequence[ScorerFiles | PipelineFiles]) -> str:
    rows = []
    for r in reports:
        d = asdict(r)
        d["ready"] = r.ready
        d["fetch"] = r.fetch() if isinstance(r, PipelineFiles) else fetch_lines(r.missing())
        rows.append(d)
    return json.dumps(rows, indent=2)


@dataclass
class Fetched:
    repo: str
    name: str  # "" for a whole pipeline
    path: str | None = None
    error: str | None = None
    tried: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.repo}/{self.name}" if self.name else f"pipeline {self.repo}"


def download(reports: Sequence[ScorerFiles | PipelineFiles], echo=print) -> list[Fetched]:
    """Fetch every missing or invalid file, and every missing pipeline, into the HF cache.

    A file's alternatives are tried in order. When the Hub cannot be reached (HF_HUB_OFFLINE set,
    or no network) one failure is returned and nothing more is tried: every other file would fail
    the same way, and a screen of identical failures hides the one fix.
    """
    try:
        import huggingface_hub
        from huggingface_hub import constants as hub_constants
    except ImportError:
        raise ScorerUnavailable("--download needs huggingface_hub: pip install 'scoreaudit[models]'") from None
    try:
        from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError
    except ImportError:  # huggingface_hub < 0.23
        from huggingface_hub.utils import EntryNotFoundError, LocalEntryNotFoundError

    from scoreaudit.plugins.scorers.model_weights import checkpoint_problem, hf_cache_dir

    done: dict[tuple[str, tuple[str, ...]], Fetched] = {}
    pending = {(f.repo, f.names): f for r in reports if isinstance(r, ScorerFiles) for f in r.missing()}
    pipes = {(r.pipeline, r.revision): r for r in reports if isinstance(r, PipelineFiles) and r.fetch()}
    total = len(pending) + len(pipes)
    if total and hub_constants.HF_HUB_OFFLINE:  # hf_hub_download would refuse each file in turn
        first = next((Fetched(f.repo, f.names[0]) for f in pending.values()), None) or Fetched(next(iter(pipes))[0], "")
        first.error = _unreachable("HF_HUB_OFFLINE is set in this environment: unset it to download", total)
        return [first]
    for key, f in pending.items():
        result = Fetched(f.repo, f.names[0])
        for name in f.names:
            result.tried.append(name)
            echo(f"fetching {f.repo}/{name} ({f.about or 'size unknown'}) ...")
            try:
                path = huggingface_hub.hf_hub_download(f.repo, name, cache_dir=str(hf_cache_dir()),
                                                       force_download=f.path is not None)
            except LocalEntryNotFoundError as e:  # no network (or offline set meanwhile): a subclass
                result.error = _unreachable(f"offline or no network: {e}", total - len(done))
                return list(done.values()) + [result]
            except EntryNotFoundError:
                continue  # the repo has no file of this name: try the next equivalent name
            except Exception as e:  # noqa: BLE001 - offline, no such repo, network: reported per file
                result.error = f"{type(e).__name__}: {e}"
                break
            problem = checkpoint_problem(Path(path))
            result.name, result.path, result.error = name, str(path), problem
            break
        else:
            result.error = f"none of {', '.join(f.names)} exists in {f.repo}"
        done[key] = result
    for (pipe, rev), r in pipes.items():
        result = Fetched(pipe, "")
        echo(f"fetching pipeline {pipe}: the configs, tokenizers and weights it loads (fp16 where the repo has "
             "them; several GB) ...")
        try:
            result.path = _download_pipeline(pipe, rev, str(hf_cache_dir()))
        except LocalEntryNotFoundError as e:
            result.error = _unreachable(f"offline or no network: {e}", total - len(done))
            return list(done.values()) + [result]
        except ImportError as e:
            result.error = f"fetching a pipeline needs diffusers ({e.name}): pip install 'scoreaudit[generate]'"
        except Exception as e:  # noqa: BLE001 - no such repo, gated, network: reported per pipeline
            result.error = f"{type(e).__name__}: {e}"
        done[(pipe, (rev or "",))] = result
    return list(done.values())


def _download_pipeline(pipe: str, revision: str | None, cache_dir: str) -> str:
    """diffusers' own selection of what `from_pretrained` loads (no ONNX/Flax copies, no single-file
    checkpoints), the fp16 variant where the repo has one: half the bytes, and what a GPU run uses."""
    from diffusers import DiffusionPipeline

    kw = {"revision": revision, "cache_dir": cache_dir}
    try:
        return str(DiffusionPipeline.download(pipe, variant="fp16", **kw))
    except ValueError as e:  # the repo has no fp16 variant: its plain weights
        if "variant" not in str(e):
            raise
        return str(DiffusionPipeline.download(pipe, **kw))


def _unreachable(why: str, missing: int) -> str:
    rest = f"; the {missing - 1} other missing download(s) were not tried" if missing > 1 else ""
    return f"cannot reach the Hugging Face Hub ({why}){rest}"
