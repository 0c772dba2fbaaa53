"""Resolve `--device auto|cpu|cuda` once per run, importing torch only when a plugin needs it."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from scoreaudit.plugins.base import ScorerUnavailable


class DeviceUnavailable(ScorerUnavailable):
    """The requested device cannot be used here (the CLI prints it and exits 3, no traceback)."""


def _cuda_available() -> tuple[bool, str]:
    if importlib.util.find_spec("torch") is None:
        return False, "torch is not installed (pip install 'scoreaudit[models]')"
    import torch  # only when a plugin or the user asked for a GPU

    if not torch.cuda.is_available():
        return False, "torch reports no usable CUDA device (torch.cuda.is_available() is False)"
    return True, ""


def resolve_device(requested: str, needs_torch: bool) -> str:
    """`auto` → cuda when a plugin needs torch and CUDA works, else cpu; `cuda` → cuda or an error."""
    if requested not in ("auto", "cpu", "cuda"):
        raise DeviceUnavailable(f"unknown device {requested!r}: use auto, cpu or cuda")
    if requested == "cpu":
        return "cpu"
    if requested == "auto":
        if not needs_torch:
            return "cpu"
        ok, _ = _cuda_available()
        return "cuda" if ok else "cpu"
    ok, why = _cuda_available()
    if not ok:
        raise DeviceUnavailable(f"--device cuda was requested but {why}; run with --device cpu or auto")
    return "cuda"


def needs_torch(requires: Iterable[Iterable[str]]) -> bool:
    """True when any plugin's `requires` meta lists torch."""
    return any("torch" in tuple(r or ()) for r in requires)
