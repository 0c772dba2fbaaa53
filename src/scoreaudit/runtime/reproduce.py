"""What run.json records so a reader can reproduce a bundle: the command line and the tool's git commit.

The command names only what changes results (device, executor, tensor path, allow-outside) and no
machine folders: it is run from the spec's folder, the spec by its file name, the output folder
relative to the spec's folder when it lies inside it, else `OUT` (a results folder of the reader's).
The git commit is read from the `.git` of the source tree scoreaudit is imported from (a checkout
with the src layout; None for an installed wheel) without running git; only the dirty flag asks
`git status` (read-only, no index lock, short timeout; None when git cannot say).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

from scoreaudit.safeio import final_path

HEX40 = re.compile(r"^[0-9a-f]{40}$")
GIT_TIMEOUT_S = 3.0


def run_command(spec_path: Path, out_dir: Path, *, device: str = "auto", executor: str = "local",
                tensor_path: str = "auto", allow_outside: bool = False) -> str:
    """`scoreaudit run SPEC --out OUT [options]`, run from the spec's folder; defaults are left out."""
    spec = Path(spec_path).resolve()
    out = Path(final_path(Path(out_dir).resolve()))  # the bundle's place, not its staging folder
    try:
        shown_out = out.relative_to(spec.parent).as_posix() or "."
    except ValueError:  # outside the project: no local folder in a file that travels with the bundle
        shown_out = "OUT"
    argv = ["scoreaudit", "run", spec.name, "--out", shown_out]
    for flag, value, default in (("--device", device, "auto"), ("--executor", executor, "local"),
                                 ("--tensor-path", tensor_path, "auto")):
        if value != default:
            argv += [flag, str(value)]
    if allow_outside:
        argv.append("--allow-outside")
    return shlex.join(argv)


def source_checkout() -> Path | None:
    """The git work tree scoreaudit's source is imported from (…/src/scoreaudit), else None."""
    pkg = Path(__file__).resolve().parents[1]
    root = pkg.parents[1]
    if pkg.parent.name != "src" or not (root / "pyproject.toml").is_file() or not os.path.lexists(root / ".git"):
        return None
    return root


def _git_dir(root: Path) -> Path | None:
    dot = root / ".git"
    if dot.is_dir():
        return dot
    try:  # a worktree or submodule: `gitdir: PATH`
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:"):].strip())
    return target if target.is_absolute() else (root / target)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def head_commit(git_dir: Path) -> str | None:
    """HEAD's commit as 40 hex digits: a detached HEAD, a loose ref, or packed-refs; None otherwise."""
    head = _read(git_dir / "HEAD")
    if head is None:
        return None
    if HEX40.match(head):
        return head
    if not head.startswith("ref:"):
        return None
    ref = head[4:].strip()
    common = git_dir
    if (git_dir / "commondir").is_file():  # a linked worktree keeps its refs in the main .git
        common = (git_dir / (_read(git_dir / "commondir") or ".")).resolve()
    for d in (git_dir, common):
        loose = _read(d / ref)
        if loose and HEX40.match(loose):
            return loose
    for d in (git_dir, common):
        for line in (_read(d / "packed-refs") or "").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[1] == ref and HEX40.match(parts[0]):
                return parts[0]
    return None


def dirty(root: Path) -> bool | None:
    """Whether tracked files differ from HEAD (`git status`, untracked files ignored); None if git can't say."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}
    try:
        proc = subprocess.run(["git", "--no-optional-locks", "-C", str(root), "status", "--porcelain",
                               "--untracked-files=no"], capture_output=True, timeout=GIT_TIMEOUT_S, env=env,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(proc.stdout.strip()) if proc.returncode == 0 else None


def git_provenance() -> dict | None:
    """{"commit": 40 hex, "dirty": bool or None} when scoreaudit runs from a git checkout, else None."""
    root = source_checkout()
    git_dir = _git_dir(root) if root is not None else None
    commit = head_commit(git_dir) if git_dir is not None else None
    if commit is None:
        return None
    return {"commit": commit, "dirty": dirty(root)}
