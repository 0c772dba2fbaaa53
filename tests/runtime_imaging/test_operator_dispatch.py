"""Every built-in operator dispatches to its torch twin the same way, by its registered name (issue 29).

Before, each operator class repeated `if _cuda(self.device): return on_device("<its name>", ...)` and
on_device tested `name == "noise"` to decide whether to hash the image; now `TwinSwept.sweep` does it once and
the content seeding is the class's `content_seeded`.
"""

from __future__ import annotations

import numpy as np
import pytest

from scoreaudit import registry
from scoreaudit.plugins import operators as ops

registry.load_plugins(entry_points=False)
BUILTIN = sorted(e.name for e in registry.operators if e.impl.__module__ == ops.__name__)


def test_every_builtin_operator_is_twin_swept():
    assert BUILTIN and all(issubclass(registry.operators.get(n).impl, ops.TwinSwept) for n in BUILTIN)


@pytest.mark.parametrize("name", BUILTIN)
def test_cuda_sweep_runs_the_twin_of_the_same_name(name, monkeypatch):
    calls = []
    monkeypatch.setattr(ops, "on_device", lambda *a, **k: calls.append((a, k)) or ["twin"])
    entry = registry.operators.get(name)
    given = {"lab_shift": {"channel": "L"}, "torso_warp": {"region": "torso"}}.get(name, {})
    params = entry.params.model_validate(given)
    image = np.zeros((4, 4, 3), np.uint8)
    assert entry.impl(params, device="cuda:0").sweep(image, None, [entry.fact("identity")], 5) == ["twin"]
    (args, kw), = calls
    assert args[0] == name and args[2] == "cuda:0" and args[-1] == 5
    assert kw == {"content_seeded": name == "noise"}
    calls.clear()
    out = entry.impl(params, device="cpu").sweep(image, None, [entry.fact("identity")], 5)
    assert calls == [] and out[0].image is image  # the reference, here: the identity dose is the input
