"""`check` reads the manifests that exist: every missing or misspelled column (with did-you-mean) before any run;
W0620 when a manifest has no id column."""

from __future__ import annotations

from scoreaudit import api, cli
from scoreaudit.exitcodes import Exit

SPEC = """audit "t" { seed: 1 }
scorer s = sharpness()
arm real      = images("data", manifest: "data/real.csv", kind: real)
arm synthetic = images("data", manifest: "data/syn.csv", kind: synthetic, cluster: promptid, strata: tones)
operator blur = gaussian_blur() doses 0, 1, 2
hypothesis H1 "x" { curve(blur, 2) < 0 on real, synthetic for each scorer }
"""


def _project(tmp_path, real="id,path\na,a.png\n"):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "syn.csv").write_text("id,path,prompt_id,tone\na,a.png,1,light\n")
    (tmp_path / "data" / "real.csv").write_text(real)
    (tmp_path / "a.audit").write_text(SPEC)
    return tmp_path / "a.audit"


def test_every_misspelled_column_is_named_with_did_you_mean(tmp_path, capsys):
    spec = _project(tmp_path)
    checked = api.check(spec)
    bad = [d for d in checked.diagnostics if d.code == "E0702"]
    assert [d.help for d in bad] == ["did you mean 'prompt_id'?", "did you mean 'tone'?"]
    assert all(d.span is not None and d.span.line == 4 for d in bad)  # points at the arm declaration
    assert not checked.ok
    assert cli.main(["check", str(spec)]) == Exit.SPEC
    err = capsys.readouterr().err
    assert "a.audit:4:" in err and "promptid" in err and "tones" in err


def test_fixed_columns_pass_and_absent_data_is_left_to_run(tmp_path):
    spec = _project(tmp_path)
    spec.write_text(SPEC.replace("promptid", "prompt_id").replace("tones", "tone"))
    assert api.check(spec).ok
    (tmp_path / "data" / "syn.csv").unlink()  # data not there yet: not a check error
    assert api.check(spec).ok


def test_manifest_without_id_column_warns_how_ids_are_made(tmp_path):
    spec = _project(tmp_path, real="path\na.png\n")
    spec.write_text(SPEC.replace("promptid", "prompt_id").replace("tones", "tone"))
    checked = api.check(spec)
    assert checked.ok
    w = [d for d in checked.diagnostics if d.code == "W0620"]
    assert len(w) == 1 and w[0].severity == "warning"
    assert "arm 'real' has no 'id' column" in w[0].message and "used as image ids" in w[0].message
    assert w[0].span.line == 3
