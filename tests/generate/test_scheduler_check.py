"""`scheduler:` is checked by `check` from diffusers' list of schedulers, without importing diffusers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scoreaudit import api
from scoreaudit.compiler import schedulers

ROOT = Path(__file__).resolve().parents[2]
SPEC = 'audit "g" {{ seed: 1 }}\narm gen = generate("sd", prompts: "p.txt", seeds: 0..1, scheduler: "{name}")\n'


def test_unknown_scheduler_is_a_check_error_with_a_suggestion():
    pytest.importorskip("diffusers")
    c = api.check("g.audit", source=SPEC.format(name="EulerDiscreteSchedular"), tables=False)
    (d,) = c.diagnostics
    assert d.code == "E0853" and "EulerDiscreteScheduler" in d.help and (d.span.line, d.span.column) == (2, 68)
    assert api.check("g.audit", source=SPEC.format(name="DDIMScheduler"), tables=False).ok


def test_the_names_match_what_diffusers_exports():
    diffusers = pytest.importorskip("diffusers")
    known = schedulers.known_schedulers()
    exported = {n for n in dir(diffusers) if n.endswith("Scheduler") and hasattr(getattr(diffusers, n), "from_config")}
    assert exported and exported <= known


def test_without_diffusers_the_name_is_left_to_the_run(monkeypatch):
    monkeypatch.setattr(schedulers, "known_schedulers", lambda: None)
    assert api.check("g.audit", source=SPEC.format(name="NoSuchScheduler"), tables=False).ok


def test_check_imports_neither_diffusers_nor_torch(tmp_path):
    spec = tmp_path / "g.audit"
    spec.write_text(SPEC.format(name="EulerDiscreteSchedular"))
    code = ("import sys; from scoreaudit import api; c = api.check(sys.argv[1], tables=False); "
            "print(sorted({d.code for d in c.diagnostics})); "
            "print([m for m in ('torch', 'diffusers') if m in sys.modules])")
    r = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[-1] == "[]"
