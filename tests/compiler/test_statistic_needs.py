"""Statistic-specific checks read the statistic's registry entry (`needs`), never its name (issue 29).

Before, compiler/hypotheses.py tested `low.name == "transfers"` (E0425), `name == "directional_drift"`
(E0422/E0423) and `low.name == "homogeneous"` (W0420): a statistic registered with the same needs under
another name (a plugin's) was not checked. Each case here registers a copy of the built-in entry under a
new name and checks the same code fires, worded with the new name.
"""

from __future__ import annotations

import re

import pytest

from scoreaudit import registry

from compiler_testutil import ROOT, check_text

INVALID = ROOT / "tests" / "compiler" / "invalid"


@pytest.fixture
def clone():
    registry.load_plugins(entry_points=False)
    made = []

    def make(original: str, name: str) -> None:
        e = registry.statistics.get(original)
        registry.statistics.register(name, params=e.params, version=e.version, positional=e.positional,
                                     **dict(e.meta))(type(name, (), {"__doc__": e.doc}))
        made.append(name)

    yield make
    for name in made:
        registry.statistics._entries.pop(name, None)


@pytest.mark.parametrize(("code", "original"), [("E0422", "directional_drift"), ("E0423", "directional_drift"),
                                                 ("E0425", "transfers"), ("W0420", "homogeneous")])
def test_a_statistic_with_the_same_needs_gets_the_same_check(clone, code, original):
    source = (INVALID / f"{code}.audit").read_text(encoding="utf-8")
    assert code in {d.code for d in check_text(source).diagnostics}  # the built-in statistic
    clone(original, "plugin_stat")
    renamed = re.sub(rf"\b{original}\(", "plugin_stat(", source)
    found = [d for d in check_text(renamed).diagnostics if d.code == code]
    assert found, f"{code} not reported for a copy of {original}"
    assert original not in found[0].message
    if code != "E0425":  # E0425 names the nested statistic (`recall_best` has no null value)
        assert "plugin_stat" in found[0].message


def test_hypotheses_names_no_registered_statistic_in_a_test():
    registry.load_plugins(entry_points=False)
    text = (ROOT / "src" / "scoreaudit" / "compiler" / "hypotheses.py").read_text(encoding="utf-8")
    tests = re.findall(r'(?:==|!=)\s*"([a-z_]+)"|"([a-z_]+)"\s*(?:==|!=)', text)
    named = {a or b for a, b in tests} & set(registry.statistics._entries)
    assert not named, f"compiler/hypotheses.py tests statistics by name: {sorted(named)}"
