"""`scheduler:` of a generated arm, checked at `check` time without importing diffusers.

diffusers lists its scheduler classes in `diffusers/schedulers/__init__.py`; the
names are read from that file's text (importing diffusers costs seconds and
pulls in torch, which `check` must not need). Without diffusers installed the
name is checked at run time instead (E0853 either way).
"""

from __future__ import annotations

import importlib.util
import re
from functools import lru_cache
from pathlib import Path

_NAME = re.compile(r'"([A-Z][A-Za-z0-9]*Scheduler)"')


@lru_cache(maxsize=1)
def known_schedulers() -> frozenset[str] | None:
    """Scheduler class names of the installed diffusers, or None when diffusers is not installed."""
    try:
        spec = importlib.util.find_spec("diffusers")  # finds the package without importing it
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        text = (Path(next(iter(spec.submodule_search_locations))) / "schedulers" / "__init__.py").read_text("utf-8")
    except OSError:
        return None
    names = frozenset(_NAME.findall(text))
    return names or None


def check_scheduler(name: str, node, sink, what: str) -> bool:
    """E0853 when `name` is not a scheduler of the installed diffusers (True when fine or not checkable)."""
    known = known_schedulers()
    if known is None or name in known:
        return True
    from scoreaudit.diagnostics import did_you_mean

    guess = did_you_mean(name, sorted(known))
    sink.emit("E0853", node, f"unknown scheduler `{name}` in {what}: diffusers has no scheduler class of that name",
              f"did you mean '{guess}'?" if guess else
              "name a diffusers scheduler class, e.g. DDIMScheduler or EulerDiscreteScheduler, or leave it out")
    return False
