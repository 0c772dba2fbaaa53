"""The `probe` declaration in the editor features and the formatter; `check` stays torch-free."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scoreaudit import api
from scoreaudit.compiler.fmt import format_module
from scoreaudit.grammar import ast
from scoreaudit.lsp import features
from scoreaudit.lsp.index import Index, scan_declarations

ROOT = Path(__file__).resolve().parents[2]
TEXT = ('audit "t" { version: 1 }\nscorer pick = pickscore(prompt: "a photo")\n'
        'probe   reno_p=reno( pick ,pipeline:"sd",prompts:"p.txt",seeds:0..3,'
        'measures:[ita,clip_attribute(labels:["man","woman"])]) label: "ReNO on PickScore"\n'
        'hypothesis P1 "t" {\n  abs(probe_drift(reno_p, measure: ita)) < 2 for pick\n}\n')


def test_probe_parses_formats_and_checks():
    module, diags = api.parse(TEXT)
    assert not diags
    probe = module.decls[2]
    assert isinstance(probe, ast.ProbeDecl) and probe.label.value == "ReNO on PickScore"
    out = format_module(module)
    assert ('probe reno_p = reno(pick, pipeline: "sd", prompts: "p.txt", seeds: 0..3, '
            'measures: [ita, clip_attribute(labels: ["man", "woman"])]) label: "ReNO on PickScore"') in out
    again, _ = api.parse(out)
    assert ast.strip_spans(again) == ast.strip_spans(module)
    checked = api.check("t.audit", source=TEXT, tables=False)
    assert checked.ok and checked.ir.probes["reno_p"].label == "ReNO on PickScore"


def test_probe_names_are_definitions_and_references():
    module, _ = api.parse(TEXT)
    ix = Index(module)
    occ = ix.of_name("reno_p")
    assert [o.role for o in occ] == ["definition", "reference"] and occ[0].kind == "probe"
    assert {o.name for o in ix.occurrences if o.role == "plugin"} >= {"reno", "clip_attribute", "probe_drift"}
    assert [d.name for d in scan_declarations(TEXT) if d.kind == "probe"] == ["reno_p"]
    outline = {s.name: s.kind for s in features.symbols(features.Document(TEXT))}
    assert outline["reno_p"] == "probe"
    doc = features.Document(TEXT)
    edits = features.rename(doc, TEXT.index("reno_p") + 1, "reno_pick")
    assert len(edits) == 2


def test_probe_keyword_completion_and_hover():
    text = 'audit "t" { version: 1 }\nscorer pick = pickscore()\nprobe r = '
    _, items = features.complete(text, len(text))
    assert "reno" in {c.label for c in items}
    assert "probe" in features.KEYWORD_DOCS
    text += 'reno(pick, pipeline: "sd", prompts: "p.txt", measures: ['
    _, items = features.complete(text, len(text))
    assert {"ita", "skin_exposure", "clip_attribute"} <= {c.label for c in items}
    text2 = ('audit "t" { version: 1 }\nscorer pick = pickscore()\n'
             'probe r = reno(pick, pipeline: "sd", prompts: "p.txt", measures: [ita])\n'
             'hypothesis P "t" {\n  probe_drift(')
    _, items = features.complete(text2, len(text2))
    assert "r" in {c.label for c in items}


def test_check_of_a_probe_spec_imports_no_torch(tmp_path):
    spec = tmp_path / "p.audit"
    spec.write_text(TEXT)
    code = ("import sys; from scoreaudit import api; c = api.check(sys.argv[1], tables=False); "
            "assert c.ok, c.diagnostics; "
            "bad = [m for m in ('torch', 'diffusers', 'transformers', 'cv2') if m in sys.modules]; "
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
