"""`scoreaudit weights`: every file a model scorer needs, where it is, and fetching the missing ones.

Listing imports nothing heavy (no torch): the files come from each scorer's `hub_files`
hook and are looked up with huggingface_hub's own cache resolution. `--download` is the
only place scoreaudit touches the network: `hf_hub_download` into the Hugging Face cache
($HF_HUB_CACHE), which is exactly where `run` looks; runs themselves never download.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scoreaudit.plugins.base import ScorerUnavailable
from scoreaudit.plugins.probe_clip import CLIP_FILES
from scoreaudit.registry import load_plugins, scorers
from scoreaudit.runtime.generation import PIPELINE_FILES


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
class FolderFiles:
    """A whole model folder a spec loads (listed by `weights SPEC`): a generated arm's or probe's
    diffusers pipeline (kind "pipeline"), or a probe's `clip_attribute` CLIP model (kind "clip_model")."""

    target: str  # `spec.audit:NAME` (every arm and probe that loads it, comma-separated)
    repo: str  # a folder under the spec's folder, or a Hugging Face id
    revision: str | None = None
    kind: str = "pipeline"
    local: bool = False  # a folder under the spec's folder: nothing to fetch
    path: str | None = None  # the folder or cached snapshot, when complete
    problem: str | None = None  # why it cannot load here

    @property
    def ready(self) -> bool:
        return self.problem is None

    def fetch(self) -> list[str]:
        if self.ready or self.local:
            return []
        from scoreaudit.plugins.scorers.model_weights import hf_include_line

        return [hf_include_line(self.repo, FOLDER_KINDS[self.kind].include)]


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


def collect(targets: Sequence[str], spec_ir: Callable[[str], Any]) -> list[ScorerFiles | FolderFiles]:
    """Targets: scorer names (default arguments) or .audit files (their scorers, as declared, and the
    model folders their generated arms and probes load: diffusers pipelines, clip_attribute's CLIP).

    `spec_ir(path)` is the checked IR of a spec (the facade's: this layer never parses). Raises
    ValueError naming an unknown scorer; an unreadable or invalid spec raises what `spec_ir` raises.
    """
    load_plugins()
    out: list[ScorerFiles | FolderFiles] = []
    for t in targets or model_scorer_names():
        if t.endswith(".audit"):
            out.extend(_from_spec(t, spec_ir(t)))
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


def _from_spec(path: str, ir) -> list[ScorerFiles | FolderFiles]:
    """The scorers and model folders of one checked spec."""
    from scoreaudit.runtime.scorers import resolve_paths

    base = Path(path).resolve().parent
    out = []
    for s in ir.scorers.values():
        entry = scorers.get(s.call.plugin)
        if not hasattr(entry.impl, "hub_files"):
            continue
        params = entry.params.model_validate(resolve_paths(dict(s.call.params), base))
        out.append(_files_for(f"{path}:{s.name}", s.call.plugin, params))
    return out + _folders(path, ir, base)


def _folders(path: str, ir, base: Path) -> list[FolderFiles]:
    """Each distinct model folder the spec's generated arms and probes load (pipelines; clip_attribute's
    CLIP model, an anchor's), found or not."""
    from scoreaudit.registry import fact, probe_measures

    users: dict[tuple[str, str, str | None], list[tuple[str, str]]] = {}
    for name, arm in ir.arms.items():
        if arm.call.plugin == "generate":
            p = arm.call.params
            users.setdefault(("pipeline", p["pipeline"], p.get("revision")), []).append((name, "arm"))
    for name, probe in ir.probes.items():
        p = probe.call.params
        users.setdefault(("pipeline", p["pipeline"], p.get("revision")), []).append((name, "probe"))
        for m in p.get("measures", []):
            if fact("probe_measure", m["measure"], "clip_model"):  # clip_attribute, anchor
                params = probe_measures.get(m["measure"]).params.model_validate(m["params"])
                model = params.model  # type: ignore[attr-defined]  # every clip_model measure declares `model`
                users.setdefault(("clip_model", model, None), []).append((name, "probe"))
    out = []
    for (kind, repo, rev), names in users.items():
        target = f"{path}:{','.join(dict.fromkeys(n for n, _ in names))}"
        local = (base / repo).is_dir()  # both kinds look under the spec's folder first
        try:
            folder = FOLDER_KINDS[kind].find(repo, rev, base, names[0])
        except _Missing:
            out.append(FolderFiles(target, repo, rev, kind, problem="missing (not in the Hugging Face cache, "
                                   "not a folder under the spec's folder)"))
        except ScorerUnavailable as e:  # an incomplete folder or snapshot: the message names the files
            out.append(FolderFiles(target, repo, rev, kind, local=local, problem=str(e)))
        else:
            out.append(FolderFiles(target, repo, rev, kind, local=local, path=str(folder)))
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


def render(reports: Sequence[ScorerFiles | FolderFiles]) -> str:
    from scoreaudit.plugins.scorers.model_weights import hf_cache_dir

    lines = [f"Hugging Face cache: {hf_cache_dir()} (set HF_HUB_CACHE to use another folder)", ""]
    for r in reports:
        state = "ready" if r.ready else "NOT READY"
        lines.append(f"{r.target}  [{state}]")
        if isinstance(r, FolderFiles):
            lines += _folder_lines(r)
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
    total = missing_total(reports)
    if total is not None:
        n, size, unknown = total
        lines.append(f"missing: {n} file{'s' if n != 1 else ''}, about {_size(size)} to download"
                     + (f" ({unknown} of unknown size)" if unknown else ""))
    return "\n".join(lines)


_ABOUT = re.compile(r"about\s+([\d.]+)\s*(KB|MB|GB)", re.IGNORECASE)
_SCALE = {"kb": 1e3, "mb": 1e6, "gb": 1e9}


def about_bytes(about: str) -> int | None:
    """A scorer's documented size ("about 3.9 GB", "a few KB") in bytes, or None when it gives none."""
    m = _ABOUT.search(about or "")
    if m:
        return int(float(m.group(1)) * _SCALE[m.group(2).lower()])
    return 5_000 if "few kb" in (about or "").lower() else None


def missing_total(reports) -> tuple[int, int, int] | None:
    """(missing files, their documented bytes, how many have no documented size) over every report,
    each (repo, file) once; None when nothing is missing."""
    seen: dict[tuple[str, str], int | None] = {}
    for r in reports:
        if isinstance(r, ScorerFiles) and not r.builtin and r.error is None and r.local is None:
            for f in r.missing():
                seen.setdefault((f.repo, f.names[0]), about_bytes(f.about))
    if not seen:
        return None
    sizes = [v for v in seen.values() if v is not None]
    return len(seen), sum(sizes), len(seen) - len(sizes)


def _folder_lines(r: FolderFiles) -> list[str]:
    what = f"{FOLDER_KINDS[r.kind].label} {r.repo}" + (f" (revision {r.revision})" if r.revision else "")
    if r.ready:
        where = "folder under the spec's folder" if r.local else "cached"
        return [f"    {what}: {where}: {r.path}"]
    lines = [f"    {what}: {r.problem}"]
    if r.fetch():
        again = r.target.rsplit(":", 1)[0]
        lines += [f"    fetch what it loads with `scoreaudit weights --download {again}`, or:"]
        lines += [f"      {cmd}" for cmd in r.fetch()]
    return lines


def to_json(reports: Sequence[ScorerFiles | FolderFiles]) -> str:
    rows = []
    for r in reports:
        d = asdict(r)
        d["ready"] = r.ready
        d["fetch"] = r.fetch() if isinstance(r, FolderFiles) else fetch_lines(r.missing())
        rows.append(d)
    return json.dumps(rows, indent=2)


@dataclass
class Fetched:
    repo: str
    name: str  # "" for a whole folder (a pipeline, a CLIP model)
    path: str | None = None
    error: str | None = None
    tried: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.repo}/{self.name}" if self.name else self.repo


def download(reports: Sequence[ScorerFiles | FolderFiles], echo=print) -> list[Fetched]:
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

    done: dict[tuple, Fetched] = {}
    pending = {(f.repo, f.names): f for r in reports if isinstance(r, ScorerFiles) for f in r.missing()}
    folders = {(r.kind, r.repo, r.revision): r for r in reports if isinstance(r, FolderFiles) and r.fetch()}
    total = len(pending) + len(folders)
    if total and hub_constants.HF_HUB_OFFLINE:  # hf_hub_download would refuse each file in turn
        first = [Fetched(f.repo, f.names[0]) for f in pending.values()] + \
            [Fetched(r.repo, "") for r in folders.values()]
        first[0].error = _unreachable("HF_HUB_OFFLINE is set in this environment: unset it to download", total)
        return first[:1]
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
    for key, r in folders.items():
        kind = FOLDER_KINDS[r.kind]
        result = Fetched(r.repo, "")
        echo(f"fetching {kind.label} {r.repo}: {kind.fetching} ...")
        try:
            result.path = kind.download(r.repo, r.revision, str(hf_cache_dir()))
        except LocalEntryNotFoundError as e:
            result.error = _unreachable(f"offline or no network: {e}", total - len(done))
            return list(done.values()) + [result]
        except ImportError as e:
            result.error = f"fetching a {kind.label} needs {e.name}: pip install 'scoreaudit[generate]'"
        except Exception as e:  # noqa: BLE001 - no such repo, gated, network: reported per folder
            result.error = f"{type(e).__name__}: {e}"
        done[key] = result
    return list(done.values())


class _Missing(Exception):
    """A model folder that is neither under the spec's folder nor in the Hugging Face cache."""


def _find_pipeline(repo: str, revision: str | None, base: Path, user: tuple[str, str]) -> Path:
    from scoreaudit.runtime.generation import PipelineMissing, find_pipeline

    try:
        return find_pipeline(user[0], {"pipeline": repo, "revision": revision}, base, kind=user[1])[0]
    except PipelineMissing:
        raise _Missing from None


def _find_clip(repo: str, revision: str | None, base: Path, user: tuple[str, str]) -> Path:
    from scoreaudit.plugins.probe_clip import ClipMissing, locate_clip

    try:
        return locate_clip(repo, base)
    except ClipMissing:
        raise _Missing from None


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


def _download_clip(repo: str, revision: str | None, cache_dir: str) -> str:
    """Config, tokenizer, image processor and safetensors weights (not the TF, Flax or .bin copies)."""
    from huggingface_hub import snapshot_download

    return str(snapshot_download(repo, revision=revision, cache_dir=cache_dir, allow_patterns=list(CLIP_FILES)))


@dataclass(frozen=True)
class FolderKind:
    """How `weights` names, finds and fetches one kind of model folder."""

    label: str
    include: tuple[str, ...]  # the `hf download --include` patterns that fetch what loads
    fetching: str  # what the --download progress line says it fetches
    find: Callable[[str, str | None, Path, tuple[str, str]], Path]  # the complete folder, or raises
    download: Callable[[str, str | None, str], str]  # (repo, revision, cache dir) -> the snapshot folder


FOLDER_KINDS = {
    "pipeline": FolderKind("diffusers pipeline", PIPELINE_FILES,
                           "the configs, tokenizers and weights it loads (fp16 where the repo has them; several GB)",
                           _find_pipeline, _download_pipeline),
    "clip_model": FolderKind("CLIP model (clip_attribute, anchor)", CLIP_FILES,
                             "its config, tokenizer, image processor and safetensors weights",
                             _find_clip, _download_clip),
}


def _unreachable(why: str, missing: int) -> str:
    rest = f"; the {missing - 1} other missing download(s) were not tried" if missing > 1 else ""
    return f"cannot reach the Hugging Face Hub ({why}){rest}"
