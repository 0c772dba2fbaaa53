"""Display labels: `scorer ir = image_reward(...) label: "ImageReward v1.0"` (and arms, operators, placebos)."""

from __future__ import annotations

from scoreaudit import api
from scoreaudit.grammar import ast

SPEC = '''audit "t" { seed: 1 }
scorer ir = sharpness() label: "Sharpness (Laplacian)"
scorer p = colourfulness()
arm real = images("d", kind: real, label: "x") label: "Real faces"
operator blur = gaussian_blur() doses 0, 1, 2 label: "Gaussian blur"
hypothesis H1 "x" { curve(blur, 2) < 0 on real for each scorer }
'''


def test_labels_parse_into_the_ast_and_ir(tmp_path):
    module, diags = api.parse(SPEC.replace(', label: "x"', ""))
    assert not diags
    decls = {getattr(d, "name", None) and d.name.name: d for d in module.decls}
    assert isinstance(decls["ir"].label, ast.String) and decls["ir"].label.value == "Sharpness (Laplacian)"
    assert decls["p"].label is None
    (tmp_path / "a.audit").write_text(SPEC.replace(', label: "x"', ""))
    c = api.check(tmp_path / "a.audit", tables=False)
    assert c.ok, [d.message for d in c.diagnostics]
    assert c.ir.scorers["ir"].label == "Sharpness (Laplacian)" and c.ir.scorers["p"].label is None
    assert c.ir.arms["real"].label == "Real faces" and c.ir.operators["blur"].label == "Gaussian blur"


def test_label_inside_a_call_is_still_an_argument():
    _, diags = api.parse(SPEC)
    assert not [d for d in diags if d.is_error]  # `label: "x"` inside images(...) parses as a keyword argument


def test_fmt_keeps_labels_and_is_stable():
    out, diags = api.format_source(SPEC.replace(', label: "x"', ""))
    assert out is not None and 'label: "Sharpness (Laplacian)"' in out and 'label: "Gaussian blur"' in out
    again, _ = api.format_source(out)
    assert again == out


def test_label_needs_a_string():
    _, diags = api.parse(SPEC.replace('label: "Real faces"', "label: Real"))
    assert any(d.is_error for d in diags)
