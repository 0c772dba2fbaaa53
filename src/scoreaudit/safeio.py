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

import contextlib
import hashlib
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


def opened_path(fd: int) -> str | None:
    """The real path of an open descriptor (Linux: /proc/self/fd), or None where the system cannot say."""
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None
    return target if target.startswith(os.sep) and not target.endswith(" (deleted)") else None


def _opened_inside(fd: int, path: str | Path, root: str | Path) -> bool:
    """Whether the file behind `fd` lies under `root`: the descriptor's own path where the system gives it,
    else its (device, inode) against the contained realpath of `path` (a link swapped in after
    `inside` was checked then no longer matches the descriptor)."""
    real_root = os.path.realpath(root)
    where = opened_path(fd)
    if where is None:
        real = os.path.realpath(path)
        try:
            a, b = os.fstat(fd), os.stat(real)
        except OSError:
            return False
        if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino):
            return False
        where = real
    return where == real_root or where.startswith(real_root.rstrip(os.sep) + os.sep)


def open_regular(path: str | Path, root: str | Path | None = None) -> int:
    """A non-blocking read descriptor of a regular file, contained in `root` (None: anywhere).

    Containment is checked on the descriptor actually opened (`_opened_inside`), so a file swapped
    for a link to an outside file between a check and this open is still refused; the kind of file
    is checked with fstat, so a FIFO swapped in cannot hang the read. Raises `UnsafePath` (outside,
    or not a regular file) and `FileNotFoundError`.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        if root is not None and not _opened_inside(fd, path, root):
            what = "leaves the project folder (it resolves outside the spec's folder)"
            raise UnsafePath(f"{path} {what}", what)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            what = f"is {_kind(st.st_mode)}, not a regular file"
            raise UnsafePath(f"{path} {what}", what)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | Path, limit: int | None = None, root: str | Path | None = None) -> bytes:
    """The bytes of a regular file; `UnsafePath` for anything else, `FileNotFoundError` when absent.

    The file is opened non-blocking and checked with fstat on the open handle,
    so a FIFO swapped in after a check still cannot hang the read; with `root`,
    the opened file itself must lie under it (`open_regular`).
    """
    fd = open_regular(path, root)
    try:
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
        with contextlib.suppress(OSError):
            os.unlink(tmp)
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


def links_outside(folder: str | Path) -> list[str]:
    """Entries of `folder` (recursively, every one of them) that would let a reader leave it: symlinks
    resolving outside it, and regular files with other hard links (a hard link's other names may lie
    anywhere on the file system, so its content is not the bundle's own). A bundle must have none."""
    root = Path(folder)
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                if not inside(p, root):
                    out.append(p.relative_to(root).as_posix())
            elif stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                out.append(p.relative_to(root).as_posix())
    return sorted(out)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def planted_link(target: str | Path, project: str | Path) -> str | None:
    """The first symbolic link on the way to `target` (itself included) that lives inside `project`.

    Every component of the target's absolute path is looked at, not only the folder and its parent:
    a link anywhere between the project folder and the target would carry a write outside. Links
    above the project (the user's own home layout) are not the project's and are followed.
    """
    real_project = os.path.realpath(project)
    # not os.path.abspath: it folds `link/..` away lexically, where the system would follow the link first
    parts = Path(os.path.join(os.getcwd(), target)).parts
    cur = parts[0]
    for part in parts[1:]:
        cur = os.path.join(cur, part)
        try:
            st = os.lstat(cur)
        except OSError:  # nothing below this exists yet: no link can be on the way
            return None
        if stat.S_ISLNK(st.st_mode) and _under(os.path.realpath(os.path.dirname(cur)), real_project):
            return cur
    return None


def refuse_planted_links(target: str | Path, project: str | Path | None, what: str) -> None:
    """`UnsafePath` when a symbolic link inside the project lies on the way to `target` (see `planted_link`)."""
    if project is None:
        return
    link = planted_link(target, project)
    if link is not None:
        try:
            to = os.readlink(link)
        except OSError:
            to = "?"
        raise UnsafePath(f"{what} {target}: {link} is a symbolic link inside the project folder (to {to}); "
                         "refusing to write through it: remove the link, or give a real folder outside "
                         "the project with --out / --cache", f"goes through the symbolic link {link}")


# ---------------------------------------------------------------- JSON of bounded depth

MAX_JSON_DEPTH = 200  # far deeper than anything scoreaudit writes; Python's parser recurses per level


class JSONTooDeep(ValueError):
    """A JSON document nested deeper than MAX_JSON_DEPTH: refused before the parser recurses into it."""


def json_depth_problem(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> str | None:
    """None when no array/object nests deeper than `limit`, else where it does (strings skipped)."""
    import re

    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text.count("[") + text.count("{") <= limit:  # cannot nest deeper: no scan
        return None
    depth = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', text):
        c = m.group(0)
        if c in "[{":
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, m.start()) + 1
                return f"nested deeper than {limit} levels (line {line})"
        elif c in "]}":
            depth -= 1
    return None


def loads_bounded(text: str | bytes, limit: int = MAX_JSON_DEPTH, **kwargs):
    """`json.loads` that refuses (JSONTooDeep) documents nested deeper than `limit` instead of a RecursionError."""
    import json

    problem = json_depth_problem(text, limit)
    if problem is not None:
        raise JSONTooDeep(f"the JSON document is {problem}: not a file scoreaudit writes")
    return json.loads(text, **kwargs)


# ---------------------------------------------------------------- replacing a folder whole


def _remove(path: Path) -> None:
    """Remove a leftover file, link or folder (links are removed, never followed)."""
    import shutil

    if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
        os.unlink(path)
    elif path.is_dir():
        shutil.rmtree(path)


def staging_for(target: str | Path, markers: tuple[str, ...] = ("manifest.json", "results.json", "run.json")
                ) -> Path:
    """Where to write a folder that replaces `target`: a fresh `.NAME.next` beside it when `target`
    holds an earlier output (one of `markers`), so an interrupted rewrite leaves the old folder whole
    (`swap_in` puts the new one in place at the end); else `target` itself (absent, empty, or a
    folder of the user's that is not an output: never replaced, its other files are kept)."""
    target = Path(target)
    if not target.is_dir() or target.is_symlink() or not any(os.path.lexists(target / m) for m in markers):
        return target
    stage = target.with_name(f".{target.name}.next")
    if os.path.lexists(stage):  # what an interrupted earlier rewrite left
        _remove(stage)
    return stage


def final_path(path: str | Path) -> str:
    """Where a path inside a staging folder (`staging_for`'s `.NAME.next`) will be once it is swapped in:
    a file's identity (runtime/memo.py) is that of its place in the bundle, not of the staging name."""
    parts = Path(path).parts
    return os.path.join(*[p[1:-len(".next")] if p.startswith(".") and p.endswith(".next") and len(p) > 6 else p
                          for p in parts]) if parts else os.fspath(path)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, exchange = -100, 2
    return fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), exchange) == 0


def swap_in(staged: str | Path, target: str | Path) -> Path:
    """Put the folder `staged` (from `staging_for`) at `target`, the old one removed afterwards.

    With RENAME_EXCHANGE the swap is one atomic step: at every instant `target` is the old folder
    or the new one. Elsewhere two renames, the old folder kept as `.NAME.old` in between.
    """
    staged, target = Path(staged), Path(target)
    if staged == target:
        return target
    if _exchange(staged, target):
        _remove(staged)  # now the old folder
        return target
    old = target.with_name(f".{target.name}.old")
    if os.path.lexists(old):
        _remove(old)
    os.rename(target, old)
    os.rename(staged, target)
    _remove(old)
    return target


def sha256_file(path: Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks: what the bundle's records of reused outputs (stats.json,
    render.json, reuse.json) hold, so that a copied file is vouched for by its bytes."""
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
