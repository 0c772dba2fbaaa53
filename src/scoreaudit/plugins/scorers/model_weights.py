"""Where model weights come from, how they are checked, and their hashes.

Light to import (no torch at module level): `scoreaudit scorers` calls the
readiness checks here without loading anything.

Policy (documented in `scoreaudit describe`): weights are read from a local
path (the scorer's `weights:` argument) or from the Hugging Face cache
($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub) under the
official repo ids and file names. Nothing is ever downloaded at run time: the
error message gives the one `hf download` command that fetches the missing
file, so a run is reproducible and never stalls on the network.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from scoreaudit.plugins.base import ScorerUnavailable

INSTALL_HINT = "pip install 'scoreaudit[models]'"


class WeightsError(ScorerUnavailable):
    """A weight file exists but cannot be used (wrong keys, unsafe pickle, unreadable)."""


@dataclass(frozen=True)
class HubFile:
    """One official file: a Hugging Face repo id and a file name inside it."""

    repo: str
    filename: str

    def hint(self) -> str:
        return f"hf download {self.repo} {self.filename}"


def hf_include_line(repo: str, patterns: Sequence[str]) -> str:
    """`hf download REPO --include "P" ...`: only the files that load, not the whole repository."""
    return f"hf download {repo} --include " + " ".join(f'"{p}"' for p in patterns)


def hf_cache_dir() -> Path:
    """The hub cache huggingface_hub itself uses (same environment variables)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return Path(os.environ["HUGGINGFACE_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "huggingface"
    )
    return Path(home).expanduser() / "hub"


def find_in_hf_cache(repo: str, filename: str, revision: str = "main") -> Path | None:
    """The cached file of `repo` at `revision`, or None; never touches the network.

    huggingface_hub's own resolution (`try_to_load_from_cache`, the lookup `hf_hub_download(...,
    local_files_only=True)` does), on the cache folder `hf_cache_dir()` reads from the
    environment at each call (huggingface_hub freezes it at import).
    """
    cache = hf_cache_dir()
    if not (cache / f"models--{repo.replace('/', '--')}").is_dir():
        return None  # huggingface_hub would find nothing either; not importing it keeps `check` light
    try:
        from huggingface_hub import try_to_load_from_cache  # light, no torch
    except ImportError:
        return None
    found = try_to_load_from_cache(repo, filename, cache_dir=str(cache), revision=revision)
    return Path(found) if isinstance(found, str) and Path(found).is_file() else None


# ---------------------------------------------------------------- cheap validity checks

_LEGACY_TORCH_MAGIC = b"\x80\x02\x8a\x0a"  # pickle protocol 2, then torch's 10-byte magic number


def checkpoint_problem(path: Path) -> str | None:
    """Why `path` is not a usable weights/config file, or None; reads headers only, imports nothing heavy.

    safetensors: the JSON header parses and its tensors end exactly at the end of the file.
    torch files (.pt/.pth/.bin/.ckpt): a complete zip archive holding a data.pkl (the format
    torch.save has written since 1.6), or the legacy pickle format's magic bytes. JSON: it parses.
    A truncated download, an HTML error page saved under the file's name, or an empty file fails.
    """
    import struct
    import zipfile

    path = Path(path)
    try:
        size = path.stat().st_size
        if size == 0:
            return f"{path} is empty"
        suffix = path.suffix.lower()
        with open(path, "rb") as f:
            if suffix == ".safetensors":
                if size < 8:
                    return f"{path} is not a safetensors file (too short)"
                (n,) = struct.unpack("<Q", f.read(8))
                if n > size - 8:
                    return f"{path} is not a complete safetensors file (header larger than the file)"
                header = json.loads(f.read(n))
                ends = [int(v["data_offsets"][1]) for k, v in header.items() if k != "__metadata__"]
                if 8 + n + max(ends, default=0) != size:
                    return f"{path} is not a complete safetensors file (its tensors end at byte " \
                           f"{8 + n + max(ends, default=0)}, the file has {size})"
                return None
            if suffix in (".pt", ".pth", ".bin", ".ckpt"):
                head = f.read(4)
                if head == _LEGACY_TORCH_MAGIC:
                    return None
                if not zipfile.is_zipfile(path):
                    return f"{path} is not a torch checkpoint (neither a torch zip archive nor the legacy format)"
                with zipfile.ZipFile(path) as z:
                    names = z.namelist()
                    if not any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
                        return f"{path} is a zip archive but not a torch checkpoint (no data.pkl)"
                    last = max(z.infolist(), key=lambda i: i.header_offset)
                    if last.header_offset + last.compress_size > size:
                        return f"{path} is truncated"
                return None
            if suffix == ".json":
                json.loads(f.read())
                return None
    except (OSError, ValueError, KeyError, TypeError, IndexError, struct.error, zipfile.BadZipFile) as e:
        return f"{path} is not a valid {path.suffix or 'weights'} file ({type(e).__name__}: {e})"
    return None


@dataclass(frozen=True)
class NeededFile:
    """One file a scorer needs from the Hugging Face Hub (`scoreaudit weights` lists and fetches these).

    `names`: the file name, or equivalent alternatives in order of preference (any one will do;
    --download tries them in turn). `about`: the approximate size of the official file
    (parameter count × bytes per parameter), shown when the file is not on this machine.
    """

    repo: str
    names: tuple[str, ...]
    role: str
    about: str = ""

    def cached(self) -> Path | None:
        for n in self.names:
            found = find_in_hf_cache(self.repo, n)
            if found is not None:
                return found
        return None

    def hint(self) -> str:
        return f"hf download {self.repo} {self.names[0]}"


def missing_message(what: str, tried: Sequence[str], hub: Sequence[HubFile], param_hint: str) -> str:
    """One message: what is missing, where we looked, how to provide it.

    `hub` lists alternatives in order of preference (any one will do), so the message asks for the
    first and names the others as fallbacks rather than asking for all of them.
    """
    fetch = hub[0].hint() + "".join(f" (or: {h.hint()})" for h in hub[1:])
    return (
        f"{what}: not found (looked in {', '.join(tried)}). Provide it with {param_hint}, "
        f"or put the official files in the Hugging Face cache ({hf_cache_dir()}; set HF_HUB_CACHE to use "
        f"another folder) with: {fetch} (or `scoreaudit weights --download {what.split()[0]}`). scoreaudit never "
        "downloads weights at run time."
    )


@dataclass(frozen=True)
class Located:
    """Resolved weight files (name → path) or why they are missing."""

    files: Mapping[str, Path]
    problem: str | None = None

    @property
    def ready(self) -> bool:
        return self.problem is None

    def require(self) -> Mapping[str, Path]:
        if self.problem is not None:
            raise ScorerUnavailable(self.problem)
        return self.files

    def describe(self) -> str:
        if self.problem is not None:
            return self.problem
        return "weights found: " + ", ".join(f"{k}={v}" for k, v in self.files.items())


def locate_one(
    label: str,
    weights: str | None,
    candidates: Sequence[str],
    hub: Sequence[HubFile],
    param_hint: str = "`weights: \"path\"`",
) -> Located | Path:
    """A single weight file: `weights` (file, or dir holding one of `candidates`) or the HF cache.

    Returns the path, or a Located carrying the problem.
    """
    tried: list[str] = []
    if weights is not None:
        p = Path(weights).expanduser()
        if p.is_file():
            return _valid(label, p)
        if p.is_dir():
            for name in candidates:
                if (p / name).is_file():
                    return _valid(label, p / name)
            return Located({}, f"{label}: {p} holds none of {', '.join(candidates)}")
        return Located({}, f"{label}: weights path {p} does not exist")
    for h in hub:
        found = find_in_hf_cache(h.repo, h.filename)
        if found is not None:
            return _valid(label, found)
        tried.append(f"{h.repo}/{h.filename} in the HF cache")
    return Located({}, missing_message(label, tried, hub, param_hint))


def _valid(label: str, path: Path) -> Located | Path:
    """`path`, or a Located problem when it is not a usable checkpoint (see checkpoint_problem)."""
    problem = checkpoint_problem(path)
    if problem is None:
        return path
    return Located({}, f"{label}: {problem}; fetch it again (delete the file first) or pass a valid one")


def locate_snapshot(repo: str, required: Sequence[str], any_of: Sequence[str]) -> Path | None:
    """The snapshot folder of a cached repo having every `required` file and one of `any_of`."""
    first = find_in_hf_cache(repo, required[0]) if required else None
    if first is None:
        return None
    snap = first.parent
    if all((snap / r).is_file() for r in required) and (not any_of or any((snap / a).is_file() for a in any_of)):
        return snap
    return None


def snapshot_problems(folder: Path, names: Sequence[str]) -> list[str]:
    """checkpoint_problem of each named file present in `folder`."""
    return [p for p in (checkpoint_problem(Path(folder) / n) for n in names if (Path(folder) / n).is_file()) if p]


# ---------------------------------------------------------------- hashing


def _hash_cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "scoreaudit" / "weights-sha256.json"


def sha256_file(path: Path) -> str:
    """sha256 of a file, remembered per (real path, size, mtime) across runs."""
    real = Path(os.path.realpath(path))
    st = real.stat()
    key = f"{real}|{st.st_size}|{st.st_mtime_ns}"
    cache_path = _hash_cache_file()
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    if isinstance(cache.get(key), str):
        return cache[key]
    h = hashlib.sha256()
    with open(real, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    digest = h.hexdigest()
    cache[key] = digest
    try:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=0, sort_keys=True))
        os.replace(tmp, cache_path)
    except OSError:
        pass  # a read-only cache dir only costs a recomputation next run
    return digest


def combined_hash(files: Mapping[str, Path]) -> str:
    """One sha256 over the named files' sha256s (names sorted), so any changed file changes it."""
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(f"{name}={sha256_file(files[name])}\n".encode())
    return h.hexdigest()


# ---------------------------------------------------------------- strict loading


def load_state_dict(path: Path, label: str) -> dict:
    """Tensors from a .safetensors file or a torch file loaded with weights_only=True.

    A file that needs arbitrary unpickling is refused: loading it could run
    code. The message says how to convert it once, in a trusted session.
    """
    import torch

    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        try:
            return dict(load_file(str(path), device="cpu"))
        except Exception as e:  # noqa: BLE001 - any parse error is a bad file
            raise WeightsError(f"{label}: {path} is not a readable safetensors file ({e})") from None
    try:
        obj = torch.load(str(path), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001
        import pickle  # only to recognise the error type

        if isinstance(e, pickle.UnpicklingError) or "weights_only" in str(e):
            raise WeightsError(
                f"{label}: {path} needs full unpickling (it stores Python objects, not only tensors), and "
                "scoreaudit loads checkpoints only with torch.load(weights_only=True) because unpickling can "
                "run arbitrary code. Only for a file you trust (its author and where it came from), convert it once: "
                "torch.save(torch.load(path, weights_only=False)['state_dict' or model].state_dict(), new_path), "
                "or save it as .safetensors, and pass the new file as weights."
            ) from None
        raise WeightsError(f"{label}: cannot read {path} ({type(e).__name__}: {e})") from None
    if isinstance(obj, dict) and "state_dict" in obj and isinstance(obj["state_dict"], dict):
        obj = obj["state_dict"]
    if not isinstance(obj, dict) or not all(isinstance(k, str) for k in obj):
        raise WeightsError(f"{label}: {path} does not hold a state dict (found {type(obj).__name__})")
    if obj and all(k.startswith("module.") for k in obj):  # saved from DataParallel
        obj = {k[len("module."):]: v for k, v in obj.items()}
    return obj


def _few(keys: Iterable[str], n: int = 5) -> str:
    keys = sorted(keys)
    more = f" (and {len(keys) - n} more)" if len(keys) > n else ""
    return ", ".join(keys[:n]) + more


def load_strict(module, state: Mapping, label: str, path: Path | str, optional: Iterable[str] = ()) -> None:
    """load_state_dict(strict) with a message naming the wrong keys and the file.

    `optional` names keys the official module has but never uses for scoring
    (e.g. a position_ids buffer older checkpoints did or did not save); they
    may be absent. Every other key must match exactly, in name and shape.
    """
    own = module.state_dict()
    optional = set(optional)
    missing = [k for k in own if k not in state and k not in optional]
    unexpected = [k for k in state if k not in own]
    wrong_shape = [
        f"{k} {tuple(state[k].shape)}≠{tuple(own[k].shape)}"
        for k in own
        if k in state and hasattr(state[k], "shape") and tuple(state[k].shape) != tuple(own[k].shape)
    ]
    problems = []
    if missing:
        problems.append(f"missing keys: {_few(missing)}")
    if unexpected:
        problems.append(f"unexpected keys: {_few(unexpected)}")
    if wrong_shape:
        problems.append(f"wrong shapes: {_few(wrong_shape, 3)}")
    if problems:
        raise WeightsError(
            f"{label}: {path} does not match the official architecture ({'; '.join(problems)}). "
            "Pass the official checkpoint unchanged."
        )
    module.load_state_dict(dict(state), strict=False)
