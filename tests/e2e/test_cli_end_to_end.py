"""The demo audit through the command line, as a user runs it: run, fail-on, report, verify, paths."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from scoreaudit import cli

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import make_demo_data  # noqa: E402


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("demo")
    make_demo_data.build(d / "data" / "demo", n_real=8, n_prompts=4)
    text = (ROOT / "examples" / "demo.audit").read_text()
    text = text.replace("bootstrap: 2000", "bootstrap: 300").replace("min_real_clusters: 20", "min_real_clusters: 5")
    (d / "demo.audit").write_text(text.replace("formats: html, pdf", "formats: html"))
    return d


@pytest.fixture(scope="module")
def bundle(project) -> Path:
    out = project / "out"
    rc = cli.main(["run", str(project / "demo.audit"), "--out", str(out), "--quiet"])
    assert rc == 0
    return out


def test_run_writes_bundle_and_every_cell_has_an_outcome(bundle):
    res = json.loads((bundle / "results.json").read_text())
    assert res["cells"] and all(c["outcome"] in {"supported", "refuted", "inconclusive"} for c in res["cells"])
    assert (bundle / "report.html").exists()
    # planted_dir prefers lighter skin (asymmetry 0.5): the equivalence claim on it cannot be supported
    h2 = [c for c in res["cells"] if c["hypothesis"] == "H2" and c["scorer"] == "planted_dir"]
    assert h2 and h2[0]["estimate"] > 0 and h2[0]["outcome"] != "supported"


def test_fail_on_refuted_exits_2_only_when_a_cell_is_refuted(project, bundle):
    res = json.loads((bundle / "results.json").read_text())
    refuted = any(c["outcome"] == "refuted" for c in res["cells"])
    rc = cli.main(["run", str(project / "demo.audit"), "--out", str(bundle), "--quiet", "--fail-on", "refuted"])
    assert rc == (4 if refuted else 0)


def test_report_rerenders_and_verify_passes_then_catches_an_edit(bundle, tmp_path):
    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    (copy / "report.html").unlink()
    assert cli.main(["report", str(copy)]) == 0 and (copy / "report.html").exists()
    assert cli.main(["verify", str(copy)]) == 0
    res = json.loads((copy / "results.json").read_text())
    res["cells"][0]["estimate"] = (res["cells"][0]["estimate"] or 0) + 1.0
    (copy / "results.json").write_text(json.dumps(res))
    assert cli.main(["verify", str(copy)]) == 5


def test_data_outside_the_project_needs_a_flag(tmp_path, capsys):
    inner = tmp_path / "proj"
    inner.mkdir()
    make_demo_data.build(tmp_path / "shared", n_real=3, n_prompts=1)
    (inner / "a.audit").write_text('''audit "outside" { version: 1 seed: 1 bootstrap: 100 }
scorer sharp = sharpness()
arm real = images("../shared/real", manifest: "../shared/real.csv", kind: real)
hypothesis H1 "h" { curve(light) > 0 on real for each scorer }
operator light = lab_shift(channel: L) doses -5, 0, 5
''')
    rc = cli.main(["run", str(inner / "a.audit"), "--out", str(inner / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 1 and "E0707" in err
    rc = cli.main(["run", str(inner / "a.audit"), "--out", str(inner / "out"), "--quiet", "--allow-outside"])
    assert rc == 0


def test_family_setting_splits_the_multiplicity_family(project, bundle):
    """`family: hypothesis` adjusts each hypothesis's cells separately (statsmodels multipletests)."""
    from statsmodels.stats.multitest import multipletests

    spec = project / "demo_family.audit"
    spec.write_text((project / "demo.audit").read_text().replace("correction: bh", "correction: bh\n  family: hypothesis"))
    out = project / "out_family"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0  # scores come from the cache
    cells = json.loads((out / "results.json").read_text())["cells"]
    by_h: dict[str, list[dict]] = {}
    for c in cells:
        assert c["family"] == c["hypothesis"]
        by_h.setdefault(c["hypothesis"], []).append(c)
    checked = 0
    for group in by_h.values():
        live = [c for c in group if c["p"] is not None and c["statistic"] not in ("transfers",)]
        if len(live) < 2:
            continue
        ref = multipletests([c["p"] for c in live], method="fdr_bh")[1]
        if len(live) == len(group):
            assert [c["q"] for c in live] == pytest.approx(list(ref), abs=1e-12)
            checked += 1
    assert checked >= 3
    one = json.loads((bundle / "results.json").read_text())["cells"]
    assert {c["family"] for c in one} == {"audit"}


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="pdftotext (poppler-utils) not installed")
def test_verify_checks_the_pdf_too(bundle, tmp_path):
    pytest.importorskip("weasyprint")
    from scoreaudit import api
    from scoreaudit.reports.verify import verify

    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    api.render(copy, formats=["html", "pdf"])
    assert verify(copy) == []
    # a PDF rendered from edited numbers, next to the true results: verify names it
    true = (copy / "results.json").read_text()
    res = json.loads(true)
    res["cells"][0]["estimate"] = (res["cells"][0]["estimate"] or 0) + 5.0
    (copy / "results.json").write_text(json.dumps(res))
    api.render(copy, formats=["pdf"])
    (copy / "results.json").write_text(true)
    problems = verify(copy)
    assert any(p.startswith("report.pdf") and res["cells"][0]["id"] in p for p in problems), problems



def test_plan_forward_passes_equal_the_runs(tmp_path):
    """issue 26: `scoreaudit plan`'s forward passes per scorer are the score steps a first run computes."""
    from plan_forward import assert_forward_passes_match

    make_demo_data.build(tmp_path / "data" / "demo", n_real=4, n_prompts=2)
    text = (ROOT / "examples" / "demo.audit").read_text().replace("formats: html, pdf", "formats: html")
    (tmp_path / "demo.audit").write_text(text.replace("bootstrap: 2000", "bootstrap: 200"))
    out = tmp_path / "out"
    assert cli.main(["run", str(tmp_path / "demo.audit"), "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "run.json").read_text())["counts"]["excluded"] == {"real": 0, "synthetic": 0}
    made = assert_forward_passes_match(tmp_path / "demo.audit", out)
    assert all(n > 0 for n in made.values())


@pytest.mark.slow
def test_run_formats_html_skips_the_pdf_and_report_writes_it_later(project, tmp_path, capsys):
    """Iterating on hypotheses: `run --formats html` leaves the spec's PDF out (and says how to get it), a
    re-run never carries an old PDF into the new bundle, and `report --formats pdf` writes it afterwards."""
    pytest.importorskip("weasyprint")
    from scoreaudit.reports.manifest import MANIFEST as MANIFEST_NAME

    spec = tmp_path / "demo.audit"
    spec.write_text((project / "demo.audit").read_text().replace("formats: html", "formats: html, pdf"))
    shutil.copytree(project / "data", tmp_path / "data")
    out = tmp_path / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    assert (out / "report.pdf").is_file()
    capsys.readouterr()
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet", "--formats", "HTML"]) == 0
    err = capsys.readouterr().err
    assert not (out / "report.pdf").exists() and (out / "report.html").is_file()
    assert "report.pdf: not written (--formats html)" in err and f"scoreaudit report {out} --formats pdf" in err
    assert "report.pdf" not in json.loads((out / MANIFEST_NAME).read_text())["files"]
    assert cli.main(["verify", str(out)]) == 0
    assert cli.main(["report", str(out), "--formats", "pdf", "--quiet"]) == 0
    assert (out / "report.pdf").is_file()
    assert "report.pdf" in json.loads((out / MANIFEST_NAME).read_text())["files"]
    assert cli.main(["verify", str(out)]) == 0
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet", "--formats", "html,docx"]) == 2
    assert "unknown report format(s) docx" in capsys.readouterr().err
    # a spec that asks for no PDF: nothing to say about one
    assert cli.main(["run", str(project / "demo.audit"), "--out", str(tmp_path / "html"), "--quiet",
                     "--formats", "html"]) == 0
    assert "report.pdf" not in capsys.readouterr().err
