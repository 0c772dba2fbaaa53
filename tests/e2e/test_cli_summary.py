"""After `run`: a short outcome summary in the terminal; `--fail-on` with a list prints what triggered it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from scoreaudit import cli
from scoreaudit.exitcodes import Exit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import make_demo_data  # noqa: E402


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("summary")
    make_demo_data.build(d / "data" / "demo", n_real=6, n_prompts=3)
    text = (ROOT / "examples" / "demo.audit").read_text().replace("bootstrap: 2000", "bootstrap: 100")
    (d / "demo.audit").write_text(text.replace("formats: html, pdf", "formats: html"))
    return d


def test_run_prints_counts_refuted_sentences_verdicts_and_paths(demo, capsys):
    out = demo / "out"
    assert cli.main(["run", str(demo / "demo.audit"), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    res = json.loads((out / "results.json").read_text())
    counts = {o: sum(c["outcome"] == o for c in res["cells"]) for o in ("supported", "refuted", "inconclusive")}
    assert (f"{len(res['cells'])} cells: {counts['supported']} supported, {counts['refuted']} refuted, "
            f"{counts['inconclusive']} inconclusive") in printed
    for c in res["cells"]:
        assert (c["sentence"] in printed) == (c["outcome"] == "refuted")
    for v in res["verdicts"]:
        assert f"verdict {v['measure']} x {v['operator']}: " in printed
    assert f"HTML report: {out / 'report.html'}" in printed
    # the statistics' warnings (W0421: few clusters under `scale: sd`) are said too, not only written to JSON
    assert res["warnings"], "the small demo has few clusters: W0421 expected"
    for w in res["warnings"]:
        assert f"warning[{w['code']}]: {w['message']}" in printed


def test_fail_on_list_exits_4_and_names_the_cells(demo, capsys):
    out = demo / "out"
    rc = cli.main(["run", str(demo / "demo.audit"), "--out", str(out), "--quiet", "--fail-on", "refuted,inconclusive"])
    res = json.loads((out / "results.json").read_text())
    hit = [c for c in res["cells"] if c["outcome"] in ("refuted", "inconclusive")]
    err = capsys.readouterr().err
    assert rc == (Exit.FAIL_ON if hit else Exit.OK)
    for c in hit:
        assert f"{c['outcome']}: {c['id']}" in err
    supported = [c for c in res["cells"] if c["outcome"] == "supported"]
    assert all(f": {c['id']}:" not in err for c in supported)


def test_run_format_json(demo, capsys):
    out = demo / "out"
    assert cli.main(["run", str(demo / "demo.audit"), "--out", str(out), "--quiet", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    res = json.loads((out / "results.json").read_text())
    assert sum(doc["outcomes"].values()) == len(res["cells"])
    assert doc["reports"] == [str(out / "report.html")]
    assert doc["warnings"] == res["warnings"]
