"""Near-instant cached re-runs: one memo per image replays its rows without decoding anything."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from runtime_helpers import hypothesis, make_images, make_ir, run_steps, table_bytes, fake_log  # noqa: F401 (fixture)
from scoreaudit.runtime import arm_runner
from scoreaudit.runtime.executor import execute


def _run(spec, ir, out, **kw):
    return execute(ir, None, spec_path=spec, out_dir=out, progress=False, **kw)


def _counting_decoder(monkeypatch):
    seen: list[str] = []
    real = arm_runner.decode_record

    def counting(rec, *a, **k):
        seen.append(rec.image_id)
        return real(rec, *a, **k)

    monkeypatch.setattr(arm_runner, "decode_record", counting)
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


def test_replayed_log_lines_and_first_score_time_are_those_of_the_steps(tmp_path, fake_log):
    """A replay writes the very run.log lines a step-by-step cached run writes, and run.json's
    first_score_at is the earliest `created_at` of the scores read (queried here independently)."""
    import sqlite3

    spec = make_images(tmp_path)
    cache = tmp_path / "c.sqlite"
    _run(spec, make_ir(), tmp_path / "o1", cache_path=cache)
    _run(spec, make_ir(), tmp_path / "o2", cache_path=cache)  # every image replayed from its memo
    db = sqlite3.connect(cache)
    db.execute("DELETE FROM entries WHERE kind = 'image'")  # no memos: each step looked up one by one
    db.commit()
    _run(spec, make_ir(), tmp_path / "o3", cache_path=cache)
    replayed, stepwise = run_steps(tmp_path / "o2"), run_steps(tmp_path / "o3")
    assert sorted(map(str, replayed)) == sorted(map(str, stepwise)) and {s["status"] for s in replayed} == {"cached"}
    keys = [s["key"] for s in stepwise if s["kind"] == "score"]
    (earliest,) = db.execute(f"SELECT MIN(created_at) FROM entries WHERE key IN ({','.join('?' * len(keys))})",
                             keys).fetchone()
    db.close()
    times = [json.loads((tmp_path / o / "run.json").read_text())["first_score_at"] for o in ("o1", "o2", "o3")]
    assert times == [earliest] * 3


def test_unchanged_files_are_not_probed_again(tmp_path, fake_log, monkeypatch):
    """The header probe runs once per file version: an unchanged file is not opened again, an edited
    or replaced one is (and a corrupt replacement is still caught before any decoding)."""
    from scoreaudit.runtime import manifests

    spec = make_images(tmp_path)
    probed: list[str] = []
    real = manifests._probe_header

    def counting(path, max_pixels, *root):
        probed.append(path.stem)
        return real(path, max_pixels, *root)

    monkeypatch.setattr(manifests, "_probe_header", counting)
    _run(spec, make_ir(), tmp_path / "o1")
    assert sorted(probed) == ["astro", "r0", "r1", "r2", "r3", "r4"]
    probed.clear()
    _run(spec, make_ir(), tmp_path / "o2")
    assert probed == []
    (tmp_path / "data" / "imgs" / "r3.png").write_bytes(b"not a png any more")
    _run(spec, make_ir(), tmp_path / "o3")
    assert probed == ["r3"]
    excl = __import__("pandas").read_parquet(tmp_path / "o3" / "tables" / "exclusions.parquet")
    assert list(excl["image_id"]) == ["r3"] and list(excl["stage"]) == ["manifest"]
    assert "not a readable image file" in excl["reason"][0]


def test_memos_are_read_a_window_at_a_time_with_the_same_bundle(tmp_path, fake_log, monkeypatch):
    """A replay holds one window of decoded memos, not the arm's (issue 33): reads stay bulk, bytes the same."""
    spec = make_images(tmp_path)
    _run(spec, make_ir(), tmp_path / "o1")
    sizes: list[int] = []
    real = arm_runner.intact_memos

    def counting(cache, keys):
        keys = list(keys)
        sizes.append(len(keys))
        return real(cache, keys)

    monkeypatch.setattr(arm_runner, "intact_memos", counting)
    monkeypatch.setattr(arm_runner, "MEMO_WINDOW", 2)
    seen = _counting_decoder(monkeypatch)
    _run(spec, make_ir(), tmp_path / "o2")
    assert seen == []  # every image replayed from its memo
    assert max(sizes) <= 2 and sum(sizes) == 6  # six images, read two at a time
    assert table_bytes(tmp_path / "o1") == table_bytes(tmp_path / "o2")
