"""Invalid specs: golden rendered diagnostics, one file at least per code, docs complete."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from scoreaudit.compiler.codes import BY_CODE, CATALOGUE
from scoreaudit.diagnostics import render_all

from compiler_testutil import ROOT, check_text, golden

INVALID = ROOT / "tests" / "compiler" / "invalid"
FILES = sorted(INVALID.glob("*.audit"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_invalid_golden(path):
    source = path.read_text(encoding="utf-8")
    checked = check_text(source, f"invalid/{path.name}")
    assert checked.diagnostics, "an invalid file must produce diagnostics"
    if re.fullmatch(r"E\d{4}", path.stem):
        assert path.stem in {d.code for d in checked.diagnostics}
    if path.stem.startswith("E"):
        assert not checked.ok and checked.ir is None
    golden(path.with_suffix(".expected"), render_all(checked.diagnostics, source) + "\n")


def test_every_compiler_code_has_a_corpus_file():
    for c in CATALOGUE:
        if c.stage == "compiler" and c.example:
            assert (INVALID / f"{c.code}.audit").exists(), c.code


@pytest.mark.parametrize("code", [c for c in CATALOGUE if c.example and c.stage in ("compiler", "grammar")],
                         ids=lambda c: c.code)
def test_catalogue_examples_produce_their_code(code):
    checked = check_text(code.example_source())
    assert code.code in {d.code for d in checked.diagnostics}


def test_every_code_in_src_is_documented():
    codes = set()
    for p in (ROOT / "src").rglob("*.py"):
        codes |= set(re.findall(r"\b[EW]\d{4}\b", p.read_text(encoding="utf-8")))
    doc = (ROOT / "spec" / "diagnostics.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^## ([EW]\d{4}):", doc, flags=re.M))
    missing = sorted(codes - documented)
    assert not missing, f"codes used in src/ but not in spec/diagnostics.md: {missing}"
    assert documented == set(BY_CODE)


def test_docs_are_current():
    from scoreaudit.compiler.docs import diagnostics_reference, language_reference

    assert (ROOT / "spec" / "language.md").read_text(encoding="utf-8") == language_reference(), \
        "spec/language.md is stale: python -m scoreaudit.compiler.docs"
    assert (ROOT / "spec" / "diagnostics.md").read_text(encoding="utf-8") == diagnostics_reference(), \
        "spec/diagnostics.md is stale: python -m scoreaudit.compiler.docs"


def test_language_reference_lists_every_plugin():
    from scoreaudit import registry

    text = (ROOT / "spec" / "language.md").read_text(encoding="utf-8")
    for kind, reg in registry.load_plugins().items():
        if kind == "section":  # report sections are not names a spec can call
            continue
        for e in reg:
            assert f"### `{e.name}`" in text


def test_several_errors_all_reported():
    source = (INVALID / "multi_errors.audit").read_text()
    diags = check_text(source).diagnostics
    codes = [d.code for d in diags]
    assert codes.count("E0202") == 1 and "E0203" in codes and "E0205" in codes
    assert len([d for d in diags if d.is_error]) >= 4


@pytest.mark.parametrize("snippet,wanted", [
    ("operator warm = lab_shfit(channel: b) doses -5, 0, 5\n", "lab_shift"),
    ('hypothesis H "t" {\n  fidelty_index(light) > 0 on real for each scorer\n}\n', "fidelity_index"),
    ('hypothesis H "t" {\n  fidelity_index(light) > 0 on reel for each scorer\n}\n', "real"),
    ("operator warm = lab_shift(chanel: b) doses -5, 0, 5\n", "channel"),
    ("operator warm = lab_shift(channel: l) doses -5, 0, 5\n", "L"),
    ("measure tone = ita(region: skn)\n", "skin"),
])
def test_did_you_mean(snippet, wanted):
    from scoreaudit.compiler.codes import PRELUDE

    diags = check_text(PRELUDE + snippet).diagnostics
    assert any(d.help == f"did you mean '{wanted}'?" for d in diags), [(d.code, d.help) for d in diags]


def test_spans_point_at_the_argument():
    from scoreaudit.compiler.codes import PRELUDE

    source = PRELUDE + "operator blur = gaussian_blur(region: skin) doses 0, 1, 60\n"
    (d,) = check_text(source).diagnostics
    line = source.splitlines()[d.span.line - 1]
    assert d.code == "E0401" and line[d.span.column - 1:d.span.end_column - 1] == "60"


def test_doses_expand_and_warn():
    from scoreaudit.compiler.codes import PRELUDE

    c = check_text(PRELUDE + "operator q = jpeg(region: skin) doses 60..90 step 10\n"
                   "operator b = gaussian_blur(region: skin) doses 0.1..0.3 step 0.1\n")
    assert c.ok and [d.code for d in c.diagnostics] == ["W0401", "W0401"]
    assert c.ir.operators["q"].doses == (60.0, 70.0, 80.0, 90.0, 100.0) and c.ir.operators["q"].identity == 100
    assert c.ir.operators["b"].doses == (0.0, 0.1, 0.2, 0.3)


def test_check_never_imports_torch():
    code = ("import sys; from scoreaudit import api; from scoreaudit.compiler.plan import build_plan, render_plan;"
            "from scoreaudit.compiler.describe import describe;"
            "[render_plan(build_plan(api.check(p, tables=False).ir)) for p in sys.argv[1:]]; describe('pickscore');"
            "heavy = [m for m in ('torch', 'open_clip', 'transformers', 'diffusers', 'cv2') if m in sys.modules];"
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code, *map(str, sorted((ROOT / "examples").glob("*.audit")))],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_check_never_raises_on_odd_but_parsed_input():
    from scoreaudit.grammar import ast
    from scoreaudit.compiler.check import check

    module = ast.Module(decls=(ast.OperatorDecl(name=ast.Ident("x"), call=ast.Call(ast.Ident("blur"), ()), doses=None),))
    ir, diags = check(module, "", "<hand>")
    assert ir is None and {"E0207", "E0202", "E0404"} <= {d.code for d in diags}
