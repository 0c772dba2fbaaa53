"""Exclusions (decode, region, score) and errors found before any scoring (missing columns, on_error: fail)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from runtime_helpers import call, fake_calls, make_images, make_ir, fake_log  # noqa: F401 (fixture)
from scoreaudit.compiler.ir import (CellIR, HypothesisIR, OperatorIR, RegionCallIR, RegionIR, ScorerIR,
                                    StatCallIR)
from scoreaudit.compiler.ir import TestIR as ClaimTest
from scoreaudit.diagnostics import DiagnosticError
from scoreaudit.runtime.device import DeviceUnavailable, resolve_device
from scoreaudit.runtime.executor import execute


def _run(spec, ir, out, **kw):
    return execute(ir, None, spec_path=spec, out_dir=out, progress=False, **kw)


def _dark_ir(**kw):
    regions = {"dark": RegionIR(name="dark", expr=RegionCallIR(call=call("fake_dark", threshold=250)))}
    ops = {"light": OperatorIR(name="light", call=call("lab_shift", channel="L", region="dark"),
                               doses=(-5.0, 0.0, 5.0), identity=0.0, pixel_local=True, region="dark")}
    return make_ir(regions=regions, operators=ops, measures={}, **kw)


def _broken_images(root):
    spec = make_images(root, n_random=2, extra_rows=["white,white.png,g0,x,1", "cut,cut.png,g1,y,2"])
    imgs = root / "data" / "imgs"
    Image.fromarray(np.full((30, 30, 3), 255, np.uint8)).save(imgs / "white.png")
    Image.fromarray(np.random.default_rng(1).integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(imgs / "cut.png")
    data = (imgs / "cut.png").read_bytes()
    (imgs / "cut.png").write_bytes(data[: len(data) // 2])  # header intact, pixel data truncated
    return spec


def test_decode_and_empty_region_exclusions(tmp_path, fake_log, monkeypatch):
    from PIL import ImageFile

    # WeasyPrint sets this process-wide on import (other test folders import it); keep Pillow strict
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", False)
    spec = _broken_images(tmp_path)
    _run(spec, _dark_ir(), tmp_path / "out")
    ex = pd.read_parquet(tmp_path / "out" / "tables" / "exclusions.parquet").set_index("image_id")
    assert ex.loc["cut", "stage"] == "decode" and ex.loc["cut", "row"] == 5
    assert ex.loc["white", "stage"] == "region"
    assert "region 'dark' is empty" in ex.loc["white", "reason"] and "operator 'light'" in ex.loc["white", "reason"]
    images = pd.read_parquet(tmp_path / "out" / "tables" / "images.parquet")
    assert sorted(images.image_id) == ["astro", "r0", "r1"]
    scored = {c[1] for c in fake_calls(fake_log)}
    assert "a/white" not in scored and "a/cut" not in scored


def test_on_error_fail_stops_with_the_reason(tmp_path, fake_log, monkeypatch):
    from PIL import ImageFile

    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", False)
    spec = _broken_images(tmp_path)
    with pytest.raises(DiagnosticError) as err:
        _run(spec, _dark_ir(on_error="fail"), tmp_path / "out")
    text = str(err.value)
    assert "E0706" in text and "data/m.csv" in text
    assert "white" in text or "cut" in text


def test_missing_columns_are_reported_before_any_scoring(tmp_path, fake_log):
    spec = make_images(tmp_path, n_random=2)
    cell = CellIR(id="A1/p/a", hypothesis="A1", claim=0, scorer="p", arm="a",
                  statistic=StatCallIR(name="spearman", version="1", params={"x": "score", "column": "human"}),
                  test=ClaimTest(kind="greater", threshold=0.5, text="spearman(score, column: human) > 0.5"))
    regions = {"m": RegionIR(name="m", expr=RegionCallIR(call=call("mask", column="mask_path", threshold=128)))}
    ir = make_ir(scorers={"p": ScorerIR(name="p", call=call("fake_prompt", prompt={"column": "caption"}),
                                        needs_prompt=True)},
                 regions=regions, measures={}, operators={},
                 hypotheses=(HypothesisIR(name="A1", title="t", text="x", cells=(cell,)),))
    with pytest.raises(DiagnosticError) as err:
        _run(spec, ir, tmp_path / "out")
    codes = [d.code for d in err.value.diagnostics]
    assert codes == ["E0702"] * 2
    text = str(err.value)
    for col in ("caption", "human"):
        assert f"'{col}'" in text
    # nothing runs the region (no operator or measure uses it): its mask column is not asked for
    assert "'mask_path'" not in text
    assert "data/m.csv" in text
    assert fake_calls(fake_log) == []
    assert not (tmp_path / "out" / "tables").exists()


def test_missing_prompt_value_is_a_score_exclusion(tmp_path, fake_log):
    spec = make_images(tmp_path, n_random=1, extra_rows=["noprompt,r0.png,g0,,3"])
    ir = make_ir(scorers={"p": ScorerIR(name="p", call=call("fake_prompt", prompt={"column": "prompt"}),
                                        needs_prompt=True)}, operators={})
    _run(spec, ir, tmp_path / "out")
    sc = pd.read_parquet(tmp_path / "out" / "tables" / "scores.parquet").set_index("image_id")
    assert np.isnan(sc.loc["noprompt", "score"]) and np.isfinite(sc.loc["r0", "score"])
    ex = pd.read_parquet(tmp_path / "out" / "tables" / "exclusions.parquet")
    assert list(ex.stage) == ["score"] and "needs a prompt" in ex.reason[0]


def test_device_resolution():
    assert resolve_device("cpu", True) == "cpu"
    assert resolve_device("auto", False) == "cpu"
    try:
        import torch  # noqa: F401
        has_cuda = torch.cuda.is_available()
    except ImportError:
        has_cuda = False
    if not has_cuda:
        with pytest.raises(DeviceUnavailable, match="--device cuda was requested"):
            resolve_device("cuda", False)
    with pytest.raises(DeviceUnavailable):
        resolve_device("tpu", False)


def test_auto_device_does_not_import_torch_without_torch_plugins(tmp_path, fake_log):
    import subprocess
    import sys

    code = ("import sys; sys.path.insert(0, %r); import runtime_helpers as h; h.sa_fake_plugins.register();"
            "from pathlib import Path; from scoreaudit.runtime.executor import execute;"
            "root = Path(%r); spec = h.make_images(root, n_random=1);"
            "execute(h.make_ir(), None, spec_path=spec, out_dir=root / 'o', progress=False);"
            "print('torch' in sys.modules)") % (str(__import__('runtime_helpers').HERE), str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_per_image_score_failures_keep_the_rest(tmp_path, fake_log):
    spec = make_images(tmp_path, n_random=3)
    ir = make_ir(scorers={"s": ScorerIR(name="s", call=call("fake_partial"))})
    _run(spec, ir, tmp_path / "out")
    sc = pd.read_parquet(tmp_path / "out" / "tables" / "scores.parquet")
    assert sc[sc.image_id == "r1"].score.isna().all()
    assert sc[sc.image_id != "r1"].score.notna().all()
    ex = pd.read_parquet(tmp_path / "out" / "tables" / "exclusions.parquet")
    assert set(ex.image_id) == {"r1"} and set(ex.stage) == {"score"}
    assert all("too dull to score" in r for r in ex.reason)
    # failures are cached like scores: a rerun gives the same tables without scoring again
    n = len(fake_calls(fake_log))
    _run(spec, ir, tmp_path / "out2")
    assert len(fake_calls(fake_log)) == n
    from runtime_helpers import table_bytes

    assert table_bytes(tmp_path / "out") == table_bytes(tmp_path / "out2")


def test_user_mask_files_are_inputs_of_the_region_step(tmp_path, fake_log):
    spec = make_images(tmp_path, n_random=2)
    manifest = tmp_path / "data" / "m.csv"
    lines = manifest.read_text().splitlines()
    lines = [lines[0] + ",mask_path"] + [f"{line},masks/{line.split(',')[0]}.png" for line in lines[1:]]
    manifest.write_text("\n".join(lines) + "\n")
    masks = tmp_path / "data" / "imgs" / "masks"
    masks.mkdir()
    from scoreaudit.runtime.images import decode_image

    for p in sorted((tmp_path / "data" / "imgs").glob("*.png")):
        if p.stem != "r1":  # r1's mask is missing
            h, w = decode_image(p).shape[:2]
            m = np.zeros((h, w), np.uint8)
            m[: h // 2] = 255
            Image.fromarray(m).save(masks / f"{p.stem}.png")
    regions = {"top": RegionIR(name="top", expr=RegionCallIR(call=call("mask", column="mask_path", threshold=128)))}
    ops = {"light": OperatorIR(name="light", call=call("lab_shift", channel="L", region="top"),
                               doses=(-5.0, 0.0, 5.0), identity=0.0, pixel_local=True, region="top")}
    ir = make_ir(regions=regions, operators=ops, measures={})
    _run(spec, ir, tmp_path / "o1")
    ex = pd.read_parquet(tmp_path / "o1" / "tables" / "exclusions.parquet")
    assert list(ex.image_id) == ["r1"] and list(ex.stage) == ["region"]
    reg = pd.read_parquet(tmp_path / "o1" / "tables" / "regions.parquet")
    assert np.allclose(reg.coverage, 0.5, atol=0.03)
    # adding the missing mask recomputes exactly that image's regions ("input changed")
    h, w = decode_image(tmp_path / "data" / "imgs" / "r1.png").shape[:2]
    Image.fromarray(np.full((h, w), 255, np.uint8)).save(masks / "r1.png")
    _run(spec, ir, tmp_path / "o2")
    from runtime_helpers import run_steps

    ran = [s for s in run_steps(tmp_path / "o2") if s["status"] == "ran"]
    regions_ran = [s for s in ran if s["kind"] == "regions"]
    assert [s["slot"] for s in regions_ran] == ["regions a/r1"] and regions_ran[0]["reason"] == "input changed"
    assert all("a/r1" in s["slot"] for s in ran)
    assert pd.read_parquet(tmp_path / "o2" / "tables" / "exclusions.parquet").empty


def test_no_output_without_progress_and_bars_only_on_stderr(tmp_path, fake_log, capfd):
    spec = make_images(tmp_path, n_random=1)
    _run(spec, make_ir(), tmp_path / "o1")
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    execute(make_ir(), None, spec_path=spec, out_dir=tmp_path / "o2", progress=True)
    out, err = capfd.readouterr()
    assert out == "" and "a: score s" in err


def test_operator_failure_excludes_that_image_from_that_operator(tmp_path, fake_log):
    spec = make_images(tmp_path, n_random=2)  # astro is 64 px high, the others 40
    ops = {"light": OperatorIR(name="light", call=call("lab_shift", channel="L"), doses=(-5.0, 0.0, 5.0),
                               identity=0.0, pixel_local=True),
           "frag": OperatorIR(name="frag", call=call("fake_fragile"), doses=(0.0, 3.0), identity=0.0,
                              pixel_local=True)}
    _run(spec, make_ir(operators=ops, measures={}), tmp_path / "out")
    ex = pd.read_parquet(tmp_path / "out" / "tables" / "exclusions.parquet")
    assert list(ex.image_id) == ["astro"] and list(ex.stage) == ["operator"]
    assert "cannot handle a 64-pixel-high image" in ex.reason[0]
    sc = pd.read_parquet(tmp_path / "out" / "tables" / "scores.parquet")
    assert set(sc[sc.image_id == "astro"].operator) == {"original", "light"}
    r0 = sc[(sc.image_id == "r0") & (sc.operator == "frag")].set_index("dose").score
    assert r0[3.0] - r0[0.0] == pytest.approx(3.0, abs=0.05)  # +3 levels, minus the few clipped at 255
    assert "astro" in set(pd.read_parquet(tmp_path / "out" / "tables" / "images.parquet").image_id)
