"""A re-run whose statistics' inputs did not change reuses them (issue 33, stats/results_cache.py).

Observable: the statistics engine is never entered on the unchanged re-run (it is replaced by one that
fails), the bundle's results.json and derived tables are the same bytes, and an edit of a hypothesis,
of a file the statistics read or of results.json itself makes the next run analyse again."""

from __future__ import annotations

import hashlib
import json

import pytest
from e2e_helpers import COMPUTED, face_images, run, write_spec

import scoreaudit.stats.engine as engine
from scoreaudit.stats import results_cache


def _hashes(folder):
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name not in ("run.log", "manifest.json", "run.json")}


def _no_analyse(monkeypatch):
    def fail(*a, **k):
        raise AssertionError("the statistics were computed again")

    monkeypatch.setattr(engine, "analyse", fail)


@pytest.fixture
def project(tmp_path):
    face_images(tmp_path)
    spec = write_spec(tmp_path, COMPUTED)
    first = run(spec, tmp_path / "out")
    return spec, tmp_path / "out", first


def test_an_unchanged_rerun_reuses_the_statistics(project, monkeypatch):
    spec, out, first = project
    before = _hashes(out)
    assert "stats.json" in before and "tables/cells.parquet" in before
    with monkeypatch.context() as m:
        _no_analyse(m)
        again = run(spec, out)
    assert _hashes(out) == before
    assert [c["estimate"] for c in again["cells"]] == [c["estimate"] for c in first["cells"]]
    assert again["bundle"] == str(out)


def test_a_hypothesis_edit_analyses_again(project, monkeypatch):
    spec, out, _first = project
    spec.write_text(spec.read_text(encoding="utf-8").replace("< 0.05 on real", "< 0.5 on real"), encoding="utf-8")
    calls = []
    real = engine.analyse
    monkeypatch.setattr(engine, "analyse", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = run(spec, out)
    assert calls == [1]
    h2 = [c for c in again["cells"] if c["hypothesis"] == "H2"]
    assert h2 and all(c["claim_text"] == "abs(asymmetry(light)) < 0.5" for c in h2), [c["claim_text"] for c in h2]
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["cells"] == again["cells"]


def test_a_hand_edited_results_file_is_not_adopted(project):
    spec, out, _first = project
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    res["title"] = "forged 4417"
    (out / "results.json").write_text(json.dumps(res), encoding="utf-8")
    again = run(spec, out)
    assert again["title"] != "forged 4417"
    assert "forged 4417" not in (out / "results.json").read_text(encoding="utf-8")


def test_the_key_counts_what_the_statistics_read(project):
    _, out, _ = project
    k0 = results_cache.inputs_key(out)
    run_json = json.loads((out / "run.json").read_text(encoding="utf-8"))
    (out / "run.json").write_text(json.dumps({**run_json, "started_at": "2001-01-01T00:00:00Z"}), encoding="utf-8")
    (out / "run.log").write_text("another log\n", encoding="utf-8")
    assert results_cache.inputs_key(out) == k0  # a re-run's clock and log are not inputs
    (out / "run.json").write_text(json.dumps({**run_json, "device": "cuda:7"}), encoding="utf-8")
    assert results_cache.inputs_key(out) != k0  # results.json names the device
    (out / "run.json").write_text(json.dumps(run_json), encoding="utf-8")
    (out / "tables" / "scores.parquet").write_bytes((out / "tables" / "scores.parquet").read_bytes() + b"\0")
    assert results_cache.inputs_key(out) != k0


def test_the_statistics_read_only_the_keyed_run_fields(project, monkeypatch):
    """Every run.json field `analyse` reads is in RUN_FIELDS (else a change of it would not re-analyse)."""
    _, out, _ = project
    seen: set[str] = set()

    class Recording(dict):
        def get(self, k, *d):
            seen.add(k)
            return super().get(k, *d)

        def __getitem__(self, k):
            seen.add(k)
            return super().__getitem__(k)

        def __contains__(self, k):
            seen.add(k)
            return super().__contains__(k)

    real = engine.read_json
    monkeypatch.setattr(engine, "read_json", lambda p: Recording(real(p)) if p.name == "run.json" else real(p))
    engine.analyse(out, progress=False)
    assert seen and seen <= set(results_cache.RUN_FIELDS), seen - set(results_cache.RUN_FIELDS)


# ---------------------------------------------------------------- the report's thumbnails (runtime/reuse.py)


def _no_thumbnails(monkeypatch):
    import scoreaudit.runtime.movers as movers
    import scoreaudit.runtime.thumbnails as thumbs

    def fail(*a, **k):
        raise AssertionError("thumbnails were made again")

    monkeypatch.setattr(thumbs, "make_thumbnails", fail)
    monkeypatch.setattr(movers, "make_mover_thumbnails", fail)


def test_an_unchanged_rerun_copies_the_thumbnails(project, monkeypatch):
    spec, out, _first = project
    before = _hashes(out)
    assert {"thumbnails.json", "mover_thumbnails.json", "reuse.json"} <= set(before)
    with monkeypatch.context() as m:
        _no_thumbnails(m)
        run(spec, out)
    assert _hashes(out) == before


def test_a_hypothesis_edit_keeps_the_dose_thumbnails_an_image_edit_remakes_them(project, monkeypatch):
    import numpy as np
    from PIL import Image

    import scoreaudit.runtime.thumbnails as thumbs

    spec, out, _first = project
    old = (out / "thumbnails.json").read_bytes()
    spec.write_text(spec.read_text(encoding="utf-8").replace("< 0.05 on real", "< 0.5 on real"), encoding="utf-8")
    with monkeypatch.context() as m:
        m.setattr(thumbs, "make_thumbnails", lambda *a, **k: (_ for _ in ()).throw(AssertionError("made again")))
        run(spec, out)  # the hypotheses are not what a dose thumbnail shows
    assert (out / "thumbnails.json").read_bytes() == old
    first = spec.parent / "data" / "real" / "img_000.png"
    arr = np.asarray(Image.open(first)).copy()
    arr[:, :, 0] = 255 - arr[:, :, 0]
    Image.fromarray(arr).save(first)
    calls = []
    real = thumbs.make_thumbnails
    monkeypatch.setattr(thumbs, "make_thumbnails", lambda *a, **k: calls.append(1) or real(*a, **k))
    run(spec, out)
    assert calls == [1] and (out / "thumbnails.json").read_bytes() != old


def test_a_forged_thumbnail_file_is_not_copied(project):
    spec, out, _first = project
    good = (out / "mover_thumbnails.json").read_bytes()
    (out / "mover_thumbnails.json").write_bytes(good.replace(b'"images":{', b'"images":{"forged":"x",', 1))
    run(spec, out)
    assert (out / "mover_thumbnails.json").read_bytes() == good


# ---------------------------------------------------------------- no tables, no table code (issue 33)


def test_an_audit_without_tables_never_enters_the_table_reader(project, monkeypatch):
    """The table code (reading, matching, rows: pandas frames) is for audits that declare tables; one that
    declares none runs, and re-runs, without it, and its bundle says it read no table."""
    import scoreaudit.runtime.precomputed.matching as matching

    spec, out, first = project

    def fail(*a, **k):
        raise AssertionError("the table reader ran for an audit without tables")

    monkeypatch.setattr(matching, "combine", fail)  # what every table load goes through, however imported
    monkeypatch.setattr(matching.TableSet, "matched", fail)
    spec.write_text(spec.read_text(encoding="utf-8").replace("< 0.05 on real", "< 0.5 on real"), encoding="utf-8")
    again = run(spec, out)
    assert again["cells"] and json.loads((out / "run.json").read_text(encoding="utf-8"))["precomputed"] == []
