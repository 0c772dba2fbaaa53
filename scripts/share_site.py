"""Link the distributions lock/shared.txt names from this interpreter's site-packages into one folder.

usage: python scripts/share_site.py lock/shared.txt TARGET_DIR   (run by scripts/official_venvs.sh
with the main venv's Python)

The official venvs put TARGET_DIR on their path instead of the main venv's whole site-packages, so
they see torch, torchvision and their dependency closure (~5 GB, not installed twice) and nothing
else of the main venv: a package the main venv gains (transformers 5 pulled `kernels`, which the
official transformers 4.55.4 then imported) cannot leak in. Each top-level entry of a shared
distribution (package folder, module, .dist-info) becomes a symlink; a folder that another,
unshared distribution also writes into (a namespace package) is made a real folder and linked
inside, entry by entry, so the unshared part stays out. Fails when the main venv's version of a
shared distribution is not the lock's (the venvs would disagree about what they share).
"""

from __future__ import annotations

import re
import shutil
import sys
from collections import defaultdict
from importlib import metadata
from pathlib import Path, PurePosixPath


def pins(lock: Path) -> dict[str, str]:
    out = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        m = re.match(r"([A-Za-z0-9_.\-]+)==([^\s;#]+)", line)
        if m:
            out[canonical(m.group(1))] = m.group(2)
    return out


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def site_paths(dist: metadata.Distribution) -> set[PurePosixPath]:
    """The files a distribution installed, relative to its site-packages (scripts in bin/ left out)."""
    out = set()
    for f in dist.files or ():
        p = PurePosixPath(str(f))
        if p.parts and p.parts[0] != ".." and "__pycache__" not in p.parts:
            out.add(p)
    return out


def link(shared: dict[str, set[PurePosixPath]], others: set[PurePosixPath], site: Path, target: Path,
         prefix: PurePosixPath = PurePosixPath()) -> None:
    """Link the shared paths under `prefix`, one level at a time, never covering an unshared one."""
    children: dict[str, set[PurePosixPath]] = defaultdict(set)
    for p in set().union(*shared.values()):
        rel = p.relative_to(prefix)
        children[rel.parts[0]].add(p)
    for name, paths in sorted(children.items()):
        here = prefix / name
        mixed = any(o == here or here in o.parents for o in others)
        leaf = all(p == here for p in paths)
        dst = target / here
        if leaf or not mixed:
            dst.symlink_to(site / here)
        else:
            dst.mkdir()
            sub = {k: {p for p in v if here in p.parents} for k, v in shared.items()}
            link({k: v for k, v in sub.items() if v}, {o for o in others if here in o.parents}, site, target, here)


def main(lock: str, target: str) -> None:
    want = pins(Path(lock))
    dists = {canonical(d.metadata["Name"]): d for d in metadata.distributions()}
    missing = [n for n in want if n not in dists]
    wrong = [f"{n} {dists[n].version} (lock: {v})" for n, v in want.items() if n in dists and dists[n].version != v]
    if missing or wrong:
        sys.exit(f"{lock}: the main venv does not hold what the official venvs share: "
                 f"missing {missing}, other versions {wrong}; run scripts/bootstrap.sh test")
    site = Path(dists["torch"].locate_file("")).resolve()
    shared = {n: site_paths(dists[n]) for n in want}
    others = set().union(*(site_paths(d) for n, d in dists.items()
                           if n not in want and Path(d.locate_file("")).resolve() == site))
    out = Path(target)
    if out.exists() or out.is_symlink():
        shutil.rmtree(out) if out.is_dir() and not out.is_symlink() else out.unlink()
    out.mkdir(parents=True)
    link(shared, others, site, out)


if __name__ == "__main__":
    main(*sys.argv[1:3])
