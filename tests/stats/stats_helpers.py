"""Helpers for the statistics tests: compile the normative examples, tweak settings."""

from __future__ import annotations

from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]


def compile_example(name: str):
    from scoreaudit import api

    checked = api.check(ROOT / "examples" / name)
    assert checked.ok, [d.message for d in checked.diagnostics]
    return checked.ir


def with_settings(ir, **kw):
    return ir.model_copy(update={"settings": ir.settings.model_copy(update=kw)})


def only_hypotheses(ir, *names):
    return ir.model_copy(update={"hypotheses": tuple(h for h in ir.hypotheses if h.name in names)})


