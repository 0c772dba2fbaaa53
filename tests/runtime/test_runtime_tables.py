"""The executor's tables against direct computation (fake scorers with known formulas)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest
import skimage.color

from runtime_helpers import call, fake_calls, make_images, make_ir, fake_log  # noqa: F401 (fixture)
from scoreaudit.compiler.ir import ORIGINAL, ScorerIR
from scoreaudit.registry import load_plugins, operators
from scoreaudit.runtime.executor import execute
from scoreaudit.runtime.images import content_hash, decode_image


def _run(spec, ir, out, **kw):
    return execute(ir, None, spec_path=spec, out_dir=out, progress=False, **kw)


def _decoded(root):
    return {p.stem: decode_image(p) for p in sorted((root / "data" / "imgs").glob("*.png"))}


def test_tables_match_direct_computation(tmp_path, fake_log):
    spec = make_images(tmp_path)
    ir = make_ir()
    _run(spec, ir, tmp_path / "out")
    tables = {n: pd.read_parquet(tmp_path / "out" / "tables" / f"{n}.parquet")
              for n in ("images", "scores", "measures", "regions", "exclusions")}
    images = _decoded(tmp_path)

    im = tables["images"].set_index("image_id")
    assert sorted(im.index) == sorted(images)
    for iid, arr in images.items():
        assert im.loc[iid, "content_hash"] == content_hash(arr)
        assert (im.loc[iid, "height"], im.loc[iid, "width"]) == arr.shape[:2]
    assert im.loc["astro", "prompt"] == "an astronaut" and im.loc["r3", "cluster"] == "g1"
    assert im.loc["r2", "row"] == 4  # 1-based data row (astro is row 1)

    load_plugins()
    light = operators.get("lab_shift").impl(operators.get("lab_shift").validate({"channel": "L"}))
    sc = tables["scores"]
    assert len(sc) == 6 * (1 + 2 * 3)
    for iid, arr in images.items():
        s = sc[sc.image_id == iid].set_index(["operator", "dose"])["score"]
        assert s[ORIGINAL, 0.0] == pytest.approx(arr.mean(), abs=1e-12)
        for op in ("light", "light_p"):
            assert s[op, 0.0] == s[ORIGINAL, 0.0]  # identity reuses the original's score
            for d in (-10.0, 10.0):
                variant = light.sweep(arr, None, [d], 0)[0].image
                assert s[op, d] == pytest.approx(variant.mean(), abs=1e-12)
        # independent reference for the measure: scikit-image's CIELAB
        m = tables["measures"]
        m = m[(m.image_id == iid) & (m.name == "ml")].set_index(["operator", "dose"])["value"]
        for d in (-10.0, 0.0, 10.0):
            variant = arr if d == 0 else light.sweep(arr, None, [d], 0)[0].image
            assert m["light", d] == pytest.approx(skimage.color.rgb2lab(variant)[..., 0].mean(), abs=0.05)
        assert m[ORIGINAL, 0.0] == pytest.approx(skimage.color.rgb2lab(arr)[..., 0].mean(), abs=0.05)

    me = tables["measures"]
    leak = me[me.role == "builtin"]
    assert set(leak.name) == {"leakage"} and len(leak) == 6 * 2 * 3
    assert (leak.value == 0).all()  # lab_shift over the whole image leaves nothing outside changed
    assert set(me[me.role == "covariate"].name) == {"clip"}
    assert len(tables["regions"]) == 6 and (tables["regions"].coverage == 1.0).all()
    assert tables["exclusions"].empty
    # sorted by key columns
    keys = ["arm", "image_id", "operator", "dose", "scorer"]
    assert sc[keys].equals(sc[keys].sort_values(keys).reset_index(drop=True))


def test_identical_images_and_variants_are_scored_once(tmp_path, fake_log):
    spec = make_images(tmp_path, extra_rows=["twin,twin.png,g0,an astronaut,1"])
    shutil.copy(tmp_path / "data" / "imgs" / "astro.png", tmp_path / "data" / "imgs" / "twin.png")
    _run(spec, make_ir(), tmp_path / "out")
    calls = fake_calls(fake_log)
    # 6 distinct images; light (whole-image region) and light_p (no region) make the same
    # pixels, so each distinct variant is scored once: 6 originals + 6 × 2 doses.
    assert len(calls) == 6 + 6 * 2
    assert not any(c[1] == "a/twin" for c in calls)
    sc = pd.read_parquet(tmp_path / "out" / "tables" / "scores.parquet")
    a = sc[sc.image_id == "astro"].score.to_numpy()
    t = sc[sc.image_id == "twin"].score.to_numpy()
    assert len(t) == 7 and np.array_equal(a, t)


def test_score_items_for_item_scorers(tmp_path, fake_log):
    spec = make_images(tmp_path, n_random=2)
    ir = make_ir(doses=(-10.0, -5.0, 0.0, 10.0),
                 scorers={"s": ScorerIR(name="s", call=call("fake_item", measure="ml"))})
    _run(spec, ir, tmp_path / "out")
    sc = pd.read_parquet(tmp_path / "out" / "tables" / "scores.parquet")
    me = pd.read_parquet(tmp_path / "out" / "tables" / "measures.parquet")
    ml = me[me.name == "ml"].set_index(["image_id", "operator", "dose"])["value"]
    for row in sc.itertuples():
        if row.operator == ORIGINAL or row.dose == 0.0:
            assert row.score == 0.0
            continue
        u = row.dose / 10.0  # (d − identity) / max|d − identity|
        placebo = 100.0 if row.operator == "light_p" else 0.0
        dm = ml[row.image_id, row.operator, row.dose] - ml[row.image_id, row.operator, 0.0]
        assert row.score == pytest.approx(10 * u + placebo + dm, abs=1e-9)
    # item scorers key on the item: every (image, operator, dose ≠ identity) and original is scored
    assert len(fake_calls(fake_log)) == 3 + 3 * 2 * 3


@pytest.mark.parametrize("scorer_prompt, arm_prompt, expected", [
    ({"column": "prompt"}, None, lambda row: row["prompt"]),
    ("a fixed prompt", None, lambda row: "a fixed prompt"),
    ({"column": "prompt"}, "group", lambda row: row["group"]),  # the arm's prompt column wins
])
def test_prompts(tmp_path, fake_log, scorer_prompt, arm_prompt, expected):
    spec = make_images(tmp_path, n_random=2)
    ir = make_ir(scorers={"p": ScorerIR(name="p", call=call("fake_prompt", prompt=scorer_prompt), needs_prompt=True)},
                 arm_params={"prompt": arm_prompt} if arm_prompt else None, operators={})
    _run(spec, ir, tmp_path / "out")
    images = _decoded(tmp_path)
    manifest = pd.read_csv(tmp_path / "data" / "m.csv", dtype=str).set_index("id")
    sc = pd.read_parquet(tmp_path / "out" / "tables" / "scores.parquet").set_index("image_id")["score"]
    for iid, arr in images.items():
        prompt = expected(manifest.loc[iid])
        assert sc[iid] == pytest.approx(len(prompt) + arr.mean() / 1000.0, abs=1e-12)
    assert {c[4] for c in fake_calls(fake_log)} == {expected(manifest.loc[i]) for i in images}


def test_real_classical_scorer_runs(tmp_path, fake_log):
    """S1's sharpness scorer through the executor: the original's score equals a direct call."""
    from scoreaudit.registry import scorers

    load_plugins()
    spec = make_images(tmp_path, n_random=2)
    ir = make_ir(scorers={"sharp": ScorerIR(name="sharp", call=call("sharpness"))})
    _run(spec, ir, tmp_path / "out")
    sc = pd.read_parquet(tmp_path / "out" / "tables" / "scores.parquet")
    impl = scorers.get("sharpness").impl(scorers.get("sharpness").validate({}))
    for iid, arr in _decoded(tmp_path).items():
        got = sc[(sc.image_id == iid) & (sc.operator == ORIGINAL)].score.item()
        assert got == impl.score([arr], None, [None])[0]


def test_new_scorer_reuses_cached_variants_and_measures(tmp_path, fake_log):
    """Adding a scorer re-creates the variants' pixels but recomputes no variant record or measure."""
    spec = make_images(tmp_path, n_random=2)
    _run(spec, make_ir(), tmp_path / "o1")
    two = {"s": ScorerIR(name="s", call=call("fake_mean")),
           "g": ScorerIR(name="g", call=call("fake_mean", gain=3.0))}
    _run(spec, make_ir(scorers=two), tmp_path / "o2")
    from runtime_helpers import run_steps

    ran = [s for s in run_steps(tmp_path / "o2") if s["status"] == "ran"]
    assert ran and {s["kind"] for s in ran} == {"score"} and all(" g " in s["slot"] for s in ran)
    sc = pd.read_parquet(tmp_path / "o2" / "tables" / "scores.parquet")
    s = sc[sc.scorer == "s"].score.to_numpy()
    g = sc[sc.scorer == "g"].score.to_numpy()
    assert np.allclose(g, 3 * s, rtol=1e-12, atol=0)


def test_pairs_arm(tmp_path, fake_log):
    from scoreaudit.compiler.ir import ArmIR

    spec = make_images(tmp_path, n_random=3)
    (tmp_path / "data" / "pairs.csv").write_text(
        "id,preferred,other,wide_prompt\np1,imgs/r0.png,imgs/r1.png,a b\np2,imgs/astro.png,imgs/r2.png,abc\n")
    arm = ArmIR(name="w", source="pairs", call=call("pairs", manifest="data/pairs.csv", preferred="preferred",
                                                     other="other", prompt="wide_prompt"))
    ir = make_ir(scorers={"p": ScorerIR(name="p", call=call("fake_prompt", prompt={"column": "prompt"}),
                                        needs_prompt=True)})
    ir = ir.model_copy(update={"arms": {**ir.arms, "w": arm}})
    _run(spec, ir, tmp_path / "out")
    images = pd.read_parquet(tmp_path / "out" / "tables" / "images.parquet")
    w = images[images.arm == "w"].set_index("image_id")
    assert sorted(w.index) == ["p1:other", "p1:preferred", "p2:other", "p2:preferred"]
    assert w.loc["p2:preferred", "side"] == "preferred" and w.loc["p2:other", "pair_id"] == "p2"
    sc = pd.read_parquet(tmp_path / "out" / "tables" / "scores.parquet")
    ws = sc[sc.arm == "w"]
    assert set(ws.operator) == {ORIGINAL} and len(ws) == 4
    dec = _decoded(tmp_path)
    got = ws.set_index("image_id").score
    assert got["p2:preferred"] == pytest.approx(3 + dec["astro"].mean() / 1000)  # prompt "abc"
    assert got["p1:other"] == pytest.approx(3 + dec["r1"].mean() / 1000)  # prompt "a b"
    regions = pd.read_parquet(tmp_path / "out" / "tables" / "regions.parquet")
    assert set(regions.arm) == {"a"}  # regions belong to images arms only


def test_rows_given_as_columns_write_the_same_bytes(tmp_path):
    """A memo replay adds scores and measures as column chunks; the written tables are the same bytes
    as with one dict per row, whatever the order rows arrived in."""
    import random

    import numpy as np

    from scoreaudit.runtime.tables import Tables, write_tables

    rng = random.Random(3)
    rows = [("a", f"i{k}", op, d, s, rng.random()) for k in range(30) for op, d in
            (("original", 0.0), ("light", -5.0), ("light", 5.0)) for s in ("s1", "s2")]
    by_row, by_col = Tables(), Tables()
    for r in rows:
        by_row.add_score(*r)
    shuffled = rows[:]
    rng.shuffle(shuffled)
    for part in (shuffled[:7], shuffled[7:50], shuffled[50:]):  # chunks, like one memo each
        cols = list(zip(*part))
        by_col.extend_columns("scores", {"arm": list(cols[0]), "image_id": list(cols[1]), "operator": list(cols[2]),
                                         "dose": np.array(cols[3]), "scorer": list(cols[4]),
                                         "score": np.array(cols[5])})
    assert by_col.counts()["scores"] == len(rows)
    a, b = write_tables(by_row, tmp_path / "rows"), write_tables(by_col, tmp_path / "cols")
    assert all(a[n].read_bytes() == b[n].read_bytes() for n in a)
