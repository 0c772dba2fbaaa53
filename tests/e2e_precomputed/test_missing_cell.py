"""Done-means 3: a table missing one (image, dose) cell fails `scoreaudit check` with a message naming
it, and `scoreaudit run` refuses before anything is scored (no bundle, no cache, no plugin called)."""

from __future__ import annotations

import pytest

from scoreaudit import api, cli
from scoreaudit.diagnostics import DiagnosticError
from scoreaudit.plugins.scorers.classical import Sharpness

from e2e_helpers import face_images, write_spec

SPEC = '''audit "Hole in the table" { version: 1 seed: 2 scale: raw bootstrap: 100 }
scorer ir = precomputed()
scorer sharp = sharpness()
arm real = images("data/real", manifest: "data/real.csv", kind: real, cluster: group,
                  scores: "results/scores.csv")
region skin = skin()
operator light = lab_shift(channel: L, region: skin) doses -10, -5, 0, 5, 10
hypothesis H1 "Fidelity" {
  fidelity_index(light) > 0 on real for each scorer
}
'''
DOSES = (-10, -5, 0, 5, 10)
HOLE = ("img_002", 5)
MESSAGE = "scores table results/scores.csv has no score for image img_002, operator light, dose 5, scorer ir"


def write_scores(folder, hole: tuple[str, int] | None) -> None:
    lines = ["id,operator,dose,scorer,score"]
    for k in range(12):
        image = f"img_{k:03d}"
        lines += [f"{image},light,{d},ir,{(k + 1) * 0.1 - abs(d) * 0.01:.6f}" for d in DOSES if (image, d) != hole]
    (folder / "results").mkdir(exist_ok=True)
    (folder / "results" / "scores.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def project(tmp_path, monkeypatch):
    face_images(tmp_path)
    write_scores(tmp_path, HOLE)
    monkeypatch.setattr(Sharpness, "_batch", lambda *a, **k: pytest.fail("a scorer ran before the check"))
    return write_spec(tmp_path, SPEC)


def test_check_exits_1_naming_the_cell(project, capsys):
    assert cli.main(["check", str(project)]) == 1
    err = capsys.readouterr().err
    assert "error[E0802]" in err and MESSAGE in err
    assert err.count("E0802") == 1  # exactly the one hole, nothing else
    assert "needed by H1/ir/real" in err


def test_check_passes_once_the_cell_is_there(project, capsys):
    write_scores(project.parent, None)
    assert cli.main(["check", str(project)]) == 0, capsys.readouterr().err


def test_run_refuses_before_anything_is_scored(project, capsys):
    out = project.parent / "out"
    assert cli.main(["run", str(project), "--out", str(out), "--device", "cpu", "--quiet"]) == 1
    assert MESSAGE in capsys.readouterr().err
    assert not out.exists()
    assert not (project.parent / ".scoreaudit").exists()  # no cache: nothing was decoded or scored


def test_the_runtime_checks_too(project):
    """The executor itself refuses (the IR compiled while the table was whole; the hole came later)."""
    from scoreaudit.runtime.executor import execute

    write_scores(project.parent, None)
    ir, plan = api.compile(project)
    write_scores(project.parent, HOLE)
    out = project.parent / "out"
    with pytest.raises(DiagnosticError) as err:
        execute(ir, plan, spec_path=project, out_dir=out, device="cpu", progress=False)
    assert [d.code for d in err.value.diagnostics] == ["E0802"]
    assert err.value.diagnostics[0].message == MESSAGE
    assert not out.exists() and not (project.parent / ".scoreaudit").exists()
