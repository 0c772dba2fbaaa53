"""`scoreaudit check` of a spec whose data files do not exist says so (W0621), instead of "ok, no errors" (issue 30).

Each missing manifest, image folder, prompts file (and a template column's file)
and statistic table is one warning at the string that names it (file, line,
column), naming the file and what was not checked; the exit code stays 0. Once
the files exist, the warnings go and the summary says "ok" again.
"""

from __future__ import annotations

import json

from scoreaudit import cli
from scoreaudit.exitcodes import Exit

SPEC = '''audit "m" { version: 1 seed: 1 bootstrap: 100 }
scorer sharp = sharpness()
scorer inc = incompressibility()
arm real = images("data/real", manifest: "data/real.csv", kind: real, strata: race)
arm loose = images("data/loose", kind: synthetic)
arm wide = pairs("data/pairs.csv", preferred: faithful, other: polished)
arm syn = images("data/syn", manifest: "data/syn.csv", kind: synthetic, cluster: prompt_id, factors: [tone])
arm gen = generate("some/pipeline", prompts: template("a photo of a {job}", job: column(job, "prompts/jobs.csv")), seeds: 2)
probe pr = reno(scorer: inc, pipeline: "some/turbo", prompts: "prompts/neutral.txt", iterations: 2, measures: [ita])
hypothesis C "c" { correlate(group_gap(tone, light, dark), by: tone, table: "tables/jobs.csv", column: v) > 0 on syn for each scorer }
hypothesis R "r" { spearman(score, column: race) > 0 on real for each scorer }
'''

# (the path as written, words the message must hold)
EXPECTED = {
    "data/real.csv": ("manifest", "arm `real`", "columns (race", "row count and ids", "were not checked"),
    "data/real": ("image folder", "arm `real`", "image files", "were not checked"),
    "data/loose": ("image folder", "arm `loose`", "images, ids and row count", "were not checked"),
    "data/pairs.csv": ("manifest", "arm `wide`", "faithful", "polished", "row count and ids", "were not checked"),
    "data/syn.csv": ("manifest", "arm `syn`", "prompt_id", "tone", "were not checked"),
    "data/syn": ("image folder", "arm `syn`", "were not checked"),
    "prompts/jobs.csv": ("column `job`", "factor `job`", "arm `gen`", "were not checked"),
    "prompts/neutral.txt": ("prompts file", "probe `pr`", "were not checked"),
    "tables/jobs.csv": ("table", "hypothesis `C`", "were not checked"),
}


def _where(text: str, needle: str) -> tuple[int, int]:
    """1-based (line, column) of the string literal `"needle"` (its opening quote), found independently."""
    offset = text.index(f'"{needle}"')
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _check(capsys, *argv):
    capsys.readouterr()
    rc = cli.main(["check", *argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


def test_each_missing_data_file_is_a_located_warning(tmp_path, capsys, monkeypatch):
    (tmp_path / "m.audit").write_text(SPEC, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    rc, out, _ = _check(capsys, "m.audit", "--format", "json")
    assert rc == Exit.OK  # warnings only: the documented exit code for a spec without errors
    diags = [d for d in json.loads(out) if d["code"] == "W0621"]
    by_file = {}
    for d in diags:
        assert d["severity"] == "warning"
        named = [p for p in EXPECTED if f"'{p}'" in d["message"]]
        assert len(named) == 1, d["message"]
        by_file[named[0]] = d
    assert set(by_file) == set(EXPECTED)  # every missing file, none twice, nothing else
    for path, words in EXPECTED.items():
        d = by_file[path]
        for w in words:
            assert w in d["message"], (w, d["message"])
        assert (d["span"]["line"], d["span"]["column"]) == _where(SPEC, path), (path, d)
        assert d["path"].endswith("m.audit")


def test_the_text_summary_is_not_ok_while_data_is_missing_and_ok_once_it_exists(tmp_path, capsys, monkeypatch):
    spec = SPEC.split("arm loose")[0] + 'hypothesis R "r" { spearman(score, column: race) > 0 on real for each scorer }\n'
    (tmp_path / "m.audit").write_text(spec, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    rc, _, err = _check(capsys, "m.audit")
    line, col = _where(spec, "data/real.csv")
    assert rc == Exit.OK
    assert f"m.audit:{line}:{col}: warning[W0621]: manifest 'data/real.csv' of arm `real` does not exist" in err, err
    assert "no errors" in err and "2 data file(s) not found" in err and "ok:" not in err, err

    (tmp_path / "data" / "real").mkdir(parents=True)
    (tmp_path / "data" / "real.csv").write_text("id,path,race\na,a.png,x\nb,b.png,y\n", encoding="utf-8")
    rc, _, err = _check(capsys, "m.audit")
    assert rc == Exit.OK and "W0621" not in err and err.strip().endswith("ok: 1 file(s) checked, no errors, 1 warning(s)"), err  # W0250


def test_an_existing_manifest_is_read_not_warned_about(tmp_path, capsys, monkeypatch):
    """The manifest exists but lacks a column the spec names: the column error (E0702), no W0621 for it."""
    spec = SPEC.split("arm loose")[0] + 'hypothesis R "r" { spearman(score, column: race) > 0 on real for each scorer }\n'
    (tmp_path / "m.audit").write_text(spec, encoding="utf-8")
    (tmp_path / "data" / "real").mkdir(parents=True)
    (tmp_path / "data" / "real.csv").write_text("id,path\na,a.png\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    rc, out, _ = _check(capsys, "m.audit", "--format", "json")
    codes = [d["code"] for d in json.loads(out)]
    assert rc == Exit.SPEC and "E0702" in codes and "W0621" not in codes, codes
