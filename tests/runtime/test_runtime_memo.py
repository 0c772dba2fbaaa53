"""Near-instant cached re-runs: one memo per image replays its rows without decoding anything."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from runtime_helpers import hypothesis, make_images, make_ir, run_steps, table_bytes, fake_log  # noqa: F401 (fixture)
from scoreaudit.runtime import executor as ex
from scoreaudit.runtime.executor import execute


def _run(spec, ir, out, **kw):
    return execute(ir, None, spec_path=spec, out_dir=out, progress=False, **kw)


def _counting_decoder(monkeypatch):
    seen: list[str] = []
    real = ex.decode_record

    def counting(rec, *a, **k):
        seen.append(rec.image_id)
        return real(rec, *a, **k)

    monkeypatch.setattr(ex, "decode_record", counting)
    return seen


def test_cached_rerun_decodes_nothing_and_gives_the_same_bundle(tmp_path, fake_log, monkeypatch):
    spec = make_images(tmp_path)
    seen = _counting_decoder(monkeypatch)
    _run(spec, make_ir(hypotheses=(hypothesis("H1", 0.0),)), tmp_path / "o1")
    assert sorted(seen) == ["astro", "r0", "r1", "r2", "r3", "r4"]
    seen.clear()
    _run(spec, make_ir(hypotheses=(hypothesis("H1", 0.5),)), tmp_path / "o2")  # only a hypothesis changed
    assert seen == []
    assert table_bytes(tmp_path / "o1") == table_bytes(tmp_path / "o2")
    first = json.loads((tmp_path / "o1" / "run.json").read_text())["counts"]
    second = json.loads((tmp_path / "o2" / "run.json").read_text())["counts"]
    assert {k: sum(v.values()) for k, v in second["steps"].items()} == \
        {k: sum(v.values()) for k, v in first["steps"].items()}  # every step logged, as cached
    assert all(s["status"] == "cached" for s in run_steps(tmp_path / "o2"))
    assert second["rows"] == first["rows"] and second["excluded"] == first["excluded"]


def test_an_edited_image_alone_is_decoded_again(tmp_path, fake_log, monkeypatch):
    spec = make_images(tmp_path)
    _run(spec, make_ir(), tmp_path / "o1")
    img = tmp_path / "data" / "imgs" / "r2.png"
    arr = np.asarray(Image.open(img)).copy()
    arr[0, 0] = 255 - arr[0, 0]
    Image.fromarray(arr).save(img)
    seen = _counting_decoder(monkeypatch)
    _run(spec, make_ir(), tmp_path / "o2")
    assert seen == ["r2"]
    ran = {s["slot"].split(" ")[2 if s["kind"] in ("score", "measure") else 1].split("/")[-1]
           for s in run_steps(tmp_path / "o2") if s["status"] == "ran"}
    assert ran == {"r2"}
    _run(spec, make_ir(), tmp_path / "o3", cache_path=tmp_path / "fresh.sqlite")
    assert table_bytes(tmp_path / "o2") == table_bytes(tmp_path / "o3")


def test_a_new_scorer_reruns_the_steps_and_reuses_cached_ones(tmp_path, fake_log, monkeypatch):
    from runtime_helpers import call
    from scoreaudit.compiler.ir import ScorerIR

    spec = make_images(tmp_path)
    _run(spec, make_ir(), tmp_path / "o1")
    two = {"s": ScorerIR(name="s", call=call("fake_mean")), "t": ScorerIR(name="t", call=call("fake_mean", gain=2.0))}
    _run(spec, make_ir(scorers=two), tmp_path / "o2")
    ran = [s for s in run_steps(tmp_path / "o2") if s["status"] == "ran"]
    assert ran and all(s["kind"] == "score" and s["slot"].startswith("score t ") for s in ran)
