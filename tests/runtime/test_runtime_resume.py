"""Caching across runs: determinism, what a change recomputes, and why (run.log)."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from runtime_helpers import call, fake_calls, hypothesis, make_images, make_ir, run_steps, table_bytes, fake_log  # noqa: F401 (fixture)
from scoreaudit.compiler.ir import ReportIR, ScorerIR
from scoreaudit.runtime.executor import execute


def _run(spec, ir, out, **kw):
    return execute(ir, None, spec_path=spec, out_dir=out, progress=False, **kw)


def _ran(out):
    return [s for s in run_steps(out) if s["status"] == "ran"]


def test_byte_identical_across_runs_and_batch_sizes(tmp_path, fake_log):
    spec = make_images(tmp_path)
    outs = []
    for k, bs in enumerate((1, 4, 16)):
        out = tmp_path / f"out{bs}"
        _run(spec, make_ir(batch_size=bs), out, cache_path=tmp_path / f"cache{k}.sqlite")
        outs.append(table_bytes(out))
    _run(spec, make_ir(batch_size=3), tmp_path / "again", cache_path=tmp_path / "cache0.sqlite")
    outs.append(table_bytes(tmp_path / "again"))
    assert len(outs[0]) == 5
    assert all(o == outs[0] for o in outs)


def test_changing_hypotheses_or_report_recomputes_nothing(tmp_path, fake_log):
    spec = make_images(tmp_path)
    _run(spec, make_ir(hypotheses=(hypothesis("H1", 0.0),)), tmp_path / "o1")
    n_calls = len(fake_calls(fake_log))
    assert n_calls > 0 and _ran(tmp_path / "o1")
    first = json.loads((tmp_path / "o1" / "run.json").read_text())
    ir2 = make_ir(hypotheses=(hypothesis("H1", 0.5), hypothesis("H2", 1.0))).model_copy(
        update={"report": ReportIR(title="changed", formats=("html", "pdf"))})
    _run(spec, ir2, tmp_path / "o2")
    assert _ran(tmp_path / "o2") == []
    assert len(fake_calls(fake_log)) == n_calls
    assert table_bytes(tmp_path / "o1") == table_bytes(tmp_path / "o2")
    second = json.loads((tmp_path / "o2" / "run.json").read_text())
    assert second["first_score_at"] == first["first_score_at"]
    assert first["started_at"] <= first["first_score_at"] <= first["finished_at"]
    assert second["counts"]["steps"]["score"] == {"cached": sum(first["counts"]["steps"]["score"].values())}


def test_adding_a_dose_adds_only_that_dose(tmp_path, fake_log):
    spec = make_images(tmp_path)
    _run(spec, make_ir(doses=(-10.0, 0.0, 10.0)), tmp_path / "o1")
    before = len(fake_calls(fake_log))
    _run(spec, make_ir(doses=(-10.0, 0.0, 5.0, 10.0)), tmp_path / "o2")
    ran = _ran(tmp_path / "o2")
    assert ran and all(s["slot"].endswith("@5.0") for s in ran)
    assert {s["kind"] for s in ran} == {"variant", "measure", "score"}
    assert all(s["reason"] == "new" for s in ran)
    new_calls = fake_calls(fake_log)[before:]
    assert new_calls and all(c[3] == "5.0" for c in new_calls)


def test_run_log_says_why_steps_ran(tmp_path, fake_log):
    spec = make_images(tmp_path, n_random=2)
    _run(spec, make_ir(), tmp_path / "o1")
    assert {s["reason"] for s in _ran(tmp_path / "o1")} == {"new"}

    _run(spec, make_ir(scorers={"s": ScorerIR(name="s", call=call("fake_mean", gain=2.0))}), tmp_path / "o2")
    ran = _ran(tmp_path / "o2")
    assert ran and {s["kind"] for s in ran} == {"score"}
    assert {s["reason"] for s in ran} == {"parameters changed"}

    _run(spec, make_ir(scorers={"s": ScorerIR(name="s", call=call("fake_mean", version="2", gain=2.0))}),
         tmp_path / "o3")
    assert {s["reason"] for s in _ran(tmp_path / "o3")} == {"plugin version changed"}

    # change one image's pixels: only that image's steps run, as "input changed"
    p = tmp_path / "data" / "imgs" / "r1.png"
    arr = np.asarray(Image.open(p)).copy()
    arr[0, 0] ^= 0xFF
    Image.fromarray(arr).save(p)
    _run(spec, make_ir(scorers={"s": ScorerIR(name="s", call=call("fake_mean", version="2", gain=2.0))}),
         tmp_path / "o4")
    ran = _ran(tmp_path / "o4")
    assert ran and all(" a/r1 " in s["slot"] or s["slot"].endswith(" a/r1") for s in ran)
    assert {s["reason"] for s in ran} == {"input changed"}
    assert {s["kind"] for s in ran} == {"regions", "variant", "measure", "score"}
    lines = (tmp_path / "o4" / "run.log").read_text().splitlines()
    assert lines[0].startswith("# started") and lines[-1].startswith("# finished")


def test_run_json(tmp_path, fake_log):
    spec = make_images(tmp_path, n_random=1)
    summary = _run(spec, make_ir(), tmp_path / "o")
    run = json.loads((tmp_path / "o" / "run.json").read_text())
    assert run["device"] == "cpu" == summary.device
    assert run["scorers"] == {"s": {"plugin": "fake_mean", "version": "1", "weights_sha256": "0" * 64}}
    assert run["counts"]["images"] == {"a": 2} and run["counts"]["excluded"] == {"a": 0}
    assert run["first_score_at"] == summary.first_score_at
    assert summary.cache_path == tmp_path / ".scoreaudit" / "cache.sqlite" and summary.cache_path.exists()
    # a fully cached run never builds the scorer, yet still names its weights
    _run(spec, make_ir(), tmp_path / "o2")
    run2 = json.loads((tmp_path / "o2" / "run.json").read_text())
    assert run2["scorers"]["s"]["weights_sha256"] == "0" * 64
    for name in ("spec.audit", "ir.json", "run.log"):
        assert (tmp_path / "o" / name).exists()
    assert (tmp_path / "o" / "spec.audit").read_bytes() == spec.read_bytes()
