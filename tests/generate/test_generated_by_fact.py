"""Whether an arm is generated is its arm source's registry fact (`source="generate"`), not the plugin's name
(issue 29). Before, the plan, the prompts check, the datafiles inventory, the runtime and the report tested
`plugin == "generate"`, so an arm source registered under another name with the same fact made no images.
"""

from __future__ import annotations

import pytest

from scoreaudit import api, registry

SPEC = '''audit "Generated" {{ seed: 1 }}
scorer p = planted(fidelity: 0.5, noise: 0.1)
arm gen = {source}("pipe", prompts: "prompts.txt", seeds: 2, steps: 2, guidance: 1.0, size: 32, kind: synthetic)
'''


@pytest.fixture
def copy_of_generate():
    registry.load_plugins(entry_points=False)
    e = registry.arms.get("generate")
    registry.arms.register("generate_copy", params=e.params, version=e.version, positional=e.positional,
                           **dict(e.meta))(type("GenerateCopy", (), {"__doc__": e.doc}))
    yield "generate_copy"
    registry.arms._entries.pop("generate_copy", None)


def _generate_steps(tmp_path, source: str):
    (tmp_path / "prompts.txt").write_text("a red car\na blue house\n")
    spec = tmp_path / f"{source}.audit"
    spec.write_text(SPEC.format(source=source))
    ir, plan = api.compile(spec)
    return [(s.id, s.images) for s in plan.steps if s.kind == "generate"]


def test_the_fact_not_the_name_makes_an_arm_generated(tmp_path, copy_of_generate):
    assert registry.generated_arm("generate") and registry.generated_arm(copy_of_generate)
    assert not registry.generated_arm("images") and not registry.generated_arm("no_such_source")
    assert _generate_steps(tmp_path, "generate") == [("generate/gen", 4)]  # 2 prompts x 2 seeds
    assert _generate_steps(tmp_path, copy_of_generate) == [("generate/gen", 4)]
