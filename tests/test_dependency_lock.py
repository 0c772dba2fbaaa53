"""The committed lock and pyproject.toml say the same thing, and the test venv holds the lock.

`make demo` and `make test` install lock/main.txt's exact versions (scripts/bootstrap.sh), so an
install that passed yesterday passes today; `pip install scoreaudit[...]` keeps pyproject.toml's
ranges. A dependency added to one and not the other, or a lock not refreshed after a range
changed, fails here; `make lock` refreshes it (scripts/lock.sh).
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from share_site import canonical, pins  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

LOCK = ROOT / "lock" / "main.txt"


def _project_requirements() -> list[tuple[str, Requirement]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    out = [("core", Requirement(r)) for r in project["dependencies"]]
    for extra, reqs in project["optional-dependencies"].items():
        out += [(extra, Requirement(r)) for r in reqs]
    return out


def _direct_in_lock() -> set[str]:
    """The lock's entries that uv annotates as asked for by pyproject.toml itself."""
    text = LOCK.read_text(encoding="utf-8")
    out, name = set(), None
    for line in text.splitlines():
        if m := re.match(r"([A-Za-z0-9_.\-]+)==", line):
            name = canonical(m.group(1))
        elif name and re.search(r"#\s+(via\s+)?scoreaudit \(pyproject\.toml\)", line):
            out.add(name)
    return out


def _applies(req: Requirement) -> bool:
    env = default_environment() | {"python_version": "3.11", "sys_platform": "linux", "platform_machine": "x86_64"}
    return req.marker is None or req.marker.evaluate(env | {"extra": ""})


def test_every_pyproject_requirement_is_pinned_in_the_lock_inside_its_range():
    lock = pins(LOCK)
    missing, outside = [], []
    for where, req in _project_requirements():
        if not _applies(req):
            continue
        name = canonical(req.name)
        if name not in lock:
            missing.append(f"{req} ({where})")
        elif not req.specifier.contains(lock[name], prereleases=True):
            outside.append(f"{req} ({where}): lock has {lock[name]}")
    assert not missing, f"in pyproject.toml, not in lock/main.txt (run `make lock`): {missing}"
    assert not outside, f"lock/main.txt pins outside pyproject.toml's range (run `make lock`): {outside}"


def test_the_lock_asks_for_nothing_pyproject_dropped():
    asked = {canonical(r.name) for _, r in _project_requirements()}
    stale = _direct_in_lock() - asked
    assert _direct_in_lock(), "lock/main.txt has no entry annotated 'via scoreaudit (pyproject.toml)'"
    assert not stale, f"lock/main.txt pins these for pyproject.toml, which no longer asks for them: {sorted(stale)}"


def test_the_lock_holds_the_extra_pins_it_was_resolved_under():
    lock = pins(LOCK)
    for line in (ROOT / "lock" / "pins.in").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            assert req.specifier.contains(lock[canonical(req.name)], prereleases=True), line


def test_shared_lock_agrees_with_the_main_lock():
    main, shared = pins(LOCK), pins(ROOT / "lock" / "shared.txt")
    assert {"torch", "torchvision"} <= set(shared)
    assert {n: v for n, v in shared.items() if main.get(n) != v} == {}


def test_this_venv_holds_the_lock():
    """make test installs lock/main.txt: every pinned distribution is here, at its pinned version."""
    wrong = {}
    for name, version in pins(LOCK).items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = None
        if have != version:
            wrong[name] = (have, version)
    assert not wrong, f"(installed, locked) differ; run scripts/bootstrap.sh test: {wrong}"
