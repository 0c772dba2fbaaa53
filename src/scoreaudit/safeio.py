"""Safe file access: the one containment check, regular files only, outputs written without following links.

Every layer reads user-named files through `inside` and `read_regular`, and
writes its outputs through `write_atomic`, so three guarantees hold in one
place (README, "Reliability"):

- containment: a path a spec, manifest, table or bundle names must resolve
  (symlinks followed) under the allowed root, or it is refused;
- only regular files are opened: a FIFO, device or directory is refused
  before anything blocks on it (the open itself is non-blocking);
- outputs go to a temporary file in the target's folder and are renamed over
  the target, so a crash never leaves half a file and a symlink planted at the
  target is replaced, never followed; an output folder that is a symlink, or
  holds symlinks, is refused.

No project imports: every layer may use this module.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


class UnsafePath(OSError):
    """A path the tool refuses to read or write; `str(e)` says which and why."""

    def __init__(self, message: str, what: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.what = what or message

    def __str__(self) -> str:
        return self.message


def inside(path: str | Path, root: str | Path | None) -> bool:
    """Whether `path` lies under `root` after resolving links (None: anywhere is allowed)."""
    if root is None:
        return True
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
        return True
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop
        return False


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def file_problem(path: str | Path) -> str | None:
    """None when `path` is an existing regular file (links followed), else what it is instead."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "not found"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(st.st_mode):
        return None
    return f"is {_kind(st.st_mode)}, not a regular file"


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of a regular file; `UnsafePath` for anything else, `FileNotFoundError` when absent.

    The file is opened non-blocking and checked with fstat on the open handle,
    so a FIFO swapped in after a check still cannot hang the read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = f"is {_kind(st.st_mode)}, not a regular file"
            raise UnsafePath(f"{path} {what}", what)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        chunks = []
        remaining = limit
        while True:
            chunk = os.read(fd, 1 << 20 if remaining is None else min(1 << 20, remaining))
            if not chunk:
                break
            chunks.append(chunk)
            if remaining is not None:
                remaining -= len(chunk)
                if remaining <= 0:
                    break
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_regular(path: str | Path) -> str:
    """A regular file's text as UTF-8 (a leading BOM dropped); UnicodeDecodeError on other encodings."""
    return read_regular(path).decode("utf-8-sig")


RUN_SUBFOLDERS = ("tables", "inputs", "generated")  # what `run` writes below its output folder


def check_output_dir(out_dir: str | Path) -> Path:
    """Refuse an output folder that is a symlink, an existing non-folder, or holds symlinks; create it.

    Raises `UnsafePath` (message names the path and what to do); permission
    problems surface as `PermissionError`.
    """
    out = Path(out_dir)
    if out.is_symlink():
        raise UnsafePath(f"output folder {out} is a symbolic link (to {os.readlink(out)}); "
                         "refusing to write through it: give a real folder with --out")
    if out.exists() and not out.is_dir():
        raise UnsafePath(f"output folder {out} exists and is not a folder: give another --out")
    out.mkdir(parents=True, exist_ok=True)
    # its entries and, links not followed, every subfolder a run writes into
    entries = [e.path for e in os.scandir(out)]
    for sub in RUN_SUBFOLDERS:
        if os.path.isdir(out / sub) and not os.path.islink(out / sub):
            for dirpath, dirnames, filenames in os.walk(out / sub, followlinks=False):
                entries += [os.path.join(dirpath, name) for name in dirnames + filenames]
    for entry in entries:
        if os.path.islink(entry):
            raise UnsafePath(f"{Path(entry)} in the output folder is a symbolic link (to "
                             f"{os.readlink(entry)}); refusing to write through it: remove it "
                             "or give another --out")
    if not os.access(out, os.W_OK | os.X_OK):
        raise PermissionError(13, "the output folder is not writable", str(out))
    return out


def write_atomic(path: str | Path, data: bytes | str) -> Path:
    """Write `data` to a temporary file beside `path`, then rename it over `path`.

    A crash leaves the old file or the new one, never half of one; a symlink at
    `path` is replaced, not followed. The folder must not itself be a symlink.
    """
    path = Path(path)
    parent = path.parent
    if parent.is_symlink():
        raise UnsafePath(f"{parent} is a symbolic link; refusing to write {path.name} through it")
    parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def temp_path(path: str | Path) -> Path:
    """A fresh temporary name beside `path` (for writers that need a file name, e.g. parquet)."""
    path = Path(path)
    if path.parent.is_symlink():
        raise UnsafePath(f"{path.parent} is a symbolic link; refusing to write {path.name} through it")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    return Path(tmp)


def links_outside(folder: str | Path, max_entries: int = 10_000) -> list[str]:
    """Entries of `folder` (recursively) that are symlinks resolving outside it: a bundle must not have any."""
    root = Path(folder)
    out: list[str] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            seen += 1
            if seen > max_entries:
                return out
            p = Path(dirpath) / name
            if p.is_symlink() and not inside(p, root):
                out.append(p.relative_to(root).as_posix())
    return sorted(out)
