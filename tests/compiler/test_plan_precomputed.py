"""The plan counts no model forward passes for scores read from data."""

from scoreaudit import api
from scoreaudit.compiler.plan import build_plan


def test_precomputed_scorers_cost_no_forward_passes(tmp_path):
    (tmp_path / "m.csv").write_text("id,path,s\na,a.png,1\nb,b.png,2\nc,c.png,3\n")
    spec = tmp_path / "p.audit"
    spec.write_text('''audit "p" { version: 1 }
scorer given = precomputed(column: s)
scorer sharp = sharpness()
arm a = images("imgs", manifest: "m.csv", kind: synthetic)
operator light = lab_shift(channel: L) doses -5, 0, 5
hypothesis H1 "h" { fidelity_index(light) > 0 on a for each scorer }
''')
    checked = api.check(spec)
    assert checked.ok, checked.diagnostics
    plan = build_plan(checked.ir, base_dir=tmp_path)
    assert plan.images["a"] == 3
    assert plan.forward_passes["given"] == 0
    assert plan.forward_passes["sharp"] == 3 * 3  # originals + two non-identity doses
    given = [s for s in plan.steps if s.kind == "score" and s.id.startswith("score/a/given/")]
    assert given and all(s.forward_passes == 0 for s in given)
