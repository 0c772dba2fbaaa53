"""The runtime's tensor path (runtime/tensor_steps.py) on CPU torch against the numpy/OpenCV reference path.

Whole runs of one audit that uses every registered operator (several doses, with and without a
region), every measure and covariate (the builtin leakage included), a numpy scorer and four model
scorers on tiny random weights, once per path:
- measures and covariates agree to 1e-4, exclusions are the same;
- every scored variant's pixels agree to one 8-bit level (the torch twins' tolerance);
- model scores: where the two paths' variants have the same pixels the scores are equal (1e-6
  relative: on the CPU the tensor path preprocesses with the reference's own uint8 kernel); where
  a twin moved some pixels by one level, the tensor path's score equals the reference scorer's
  score of those very pixels (1e-5 relative). So every difference between the paths' scores is
  explained by the ≤ 1-level pixel differences, and none by the tensor path itself; a bound on
  the score difference itself would only measure the tiny random models' sensitivity.
Counting: each image goes to the device once, no numpy measure or operator runs, model scorers
receive tensors. A cached re-run replays; re-created variants for missing scores are the same;
a failing operator or measure is an exclusion on the tensor path too.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the models extra is not installed (pip install 'scoreaudit[models]')")
pytest.importorskip("open_clip", reason="the models extra is not installed (pip install 'scoreaudit[models]')")
pytest.importorskip("transformers", reason="the models extra is not installed (pip install 'scoreaudit[models]')")

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from runtime_helpers import call, fake_log, make_ir, run_steps, table_bytes  # noqa: E402,F401
from scoreaudit.compiler.ir import MeasureIR, OperatorIR, RegionCallIR, RegionIR, ScorerIR  # noqa: E402
from scoreaudit.registry import REGISTRIES, load_plugins  # noqa: E402
from scoreaudit.runtime.executor import execute  # noqa: E402

pytestmark = pytest.mark.slow  # whole runs on the CPU torch path (a 114 s module fixture measured)

load_plugins(entry_points=False)

# Every registered operator: (declared name, params, doses); identity from the registry.
OPERATORS = {
    "lab_shift": [("light", {"channel": "L", "region": "body"}, (-30.0, -5.0, 5.0, 30.0)),
                  ("tint", {"channel": "a"}, (-20.0, 20.0))],
    "hue_rotate": [("hue", {"region": "body"}, (-90.0, 45.0, 180.0))],
    "gaussian_blur": [("blur", {"region": "body"}, (0.5, 2.0)), ("blur_all", {}, (1.0,))],
    "jpeg": [("jpeg", {}, (10.0, 50.0, 90.0))],
    "noise": [("noise", {"region": "body"}, (3.0, 20.0))],
    "torso_warp": [("warp", {"region": "body", "falloff": 0.15}, (0.8, 1.3))],
}
MEASURES = {  # (declared name, role, plugin, params)
    "ita": [("ita", "measure", {"region": "body"}), ("ita_mean", "measure", {"region": "body", "stat": "mean"})],
    "mean_lab": [("L", "measure", {"channel": "L"}), ("a_body", "measure", {"region": "body", "channel": "a"})],
    "width_ratio": [("width", "measure", {"region": "body"})],
    "gamut_clip": [("clip", "covariate", {})],
    "warp_deformation": [("deform", "covariate", {})],
    "leakage": [("leak3", "covariate", {"tolerance": 3.0})],
}
MODEL_SCORERS = ("laion", "hps", "pick", "ir")


def _operators() -> dict[str, OperatorIR]:
    missing = sorted(set(REGISTRIES["operator"].names()) - set(OPERATORS) - {"fake_fragile"})
    assert not missing, f"operators without a case in the tensor-path run: {missing}"
    out = {}
    for plugin, cases in OPERATORS.items():
        entry = REGISTRIES["operator"].get(plugin)
        ident = float(entry.fact("identity"))
        for name, params, doses in cases:
            out[name] = OperatorIR(name=name, call=call(plugin, **params), doses=tuple(sorted({*doses, ident})),
                                   identity=ident, pixel_local=bool(entry.fact("pixel_local")),
                                   region=params.get("region"))
    return out


def _measures() -> dict[str, MeasureIR]:
    names = set(REGISTRIES["measure"].names()) | set(REGISTRIES["covariate"].names())
    missing = sorted(names - set(MEASURES))
    assert not missing, f"measures/covariates without a case in the tensor-path run: {missing}"
    return {name: MeasureIR(name=name, call=call(plugin, **params), role=role, region=params.get("region"))
            for plugin, cases in MEASURES.items() for name, role, params in cases}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Tiny random-weight LAION, HPSv2, PickScore and ImageReward in local folders (open_clip configs registered)."""
    from scoreaudit.testing import tiny_models as tm

    root = tmp_path_factory.mktemp("tiny")
    saved = tm.register_tiny_open_clip(root / "open_clip_cfgs")
    try:
        cache, local = root / "hf", root / "local"
        out = {}
        out.update(tm.build_laion(cache, local))
        out.update(tm.build_hpsv2(cache, local))
        out.update(tm.build_pickscore(cache, local))
        out.update(tm.build_image_reward(cache, local))
        yield out
    finally:
        tm.restore_open_clip(saved)


def _scorers(models) -> dict[str, ScorerIR]:
    fp32 = {"precision": "fp32"}
    return {"sharp": ScorerIR(name="sharp", call=call("sharpness")),
            "laion": ScorerIR(name="laion", call=call("laion_aesthetic", weights=str(models["laion"]), **fp32)),
            "hps": ScorerIR(name="hps", call=call("hpsv2", weights=str(models["hpsv2"]), **fp32), needs_prompt=True),
            "pick": ScorerIR(name="pick", call=call("pickscore", weights=str(models["pickscore"]), **fp32),
                             needs_prompt=True),
            "ir": ScorerIR(name="ir", call=call("image_reward", weights=str(models["image_reward"]), **fp32),
                           needs_prompt=True)}


def _project(root: Path, n: int = 4) -> Path:
    """root/data: smooth test images of assorted sizes (i3 is 64 px high), an elliptic body mask each, a manifest."""
    from PIL import Image

    from scoreaudit.testing.tiny_models import test_images

    imgs = root / "data" / "imgs"
    imgs.mkdir(parents=True, exist_ok=True)
    rows = ["id,path,group,prompt,mask"]
    images = test_images(n)  # 48×40, 37×53, 32×32, 64×45
    images[-1][:6, :6] = (255, 0, 0)  # saturated corner: CIELAB edits clip
    for k, arr in enumerate(images):
        h, w = arr.shape[:2]
        yy, xx = np.mgrid[0:h, 0:w]
        body = ((yy - h * 0.55) / (h * 0.35)) ** 2 + ((xx - w * 0.5) / (w * 0.3)) ** 2 <= 1.0
        Image.fromarray(arr).save(imgs / f"i{k}.png")
        Image.fromarray((body * 255).astype(np.uint8)).save(imgs / f"m{k}.png")
        rows.append(f"i{k},i{k}.png,g{k % 2},a photo number {k},m{k}.png")
    (root / "data" / "m.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = root / "a.audit"
    spec.write_text('audit "tensor path" { version: 1 }\n', encoding="utf-8")
    return spec


def _ir(scorers, operators=None, measures=None):
    regions = {"body": RegionIR(name="body", expr=RegionCallIR(call=call("mask", column="mask")))}
    return make_ir(batch_size=3, scorers=scorers, regions=regions, operators=operators or _operators(),
                   measures=measures or _measures(), arm_params={"prompt": "prompt"})


def _table(out: Path, name: str):
    import pandas as pd

    return pd.read_parquet(out / "tables" / f"{name}.parquet")


class Captured:
    """The host pixels of every scored image, per (scorer, arm, image, operator, dose), and the input types."""

    def __init__(self, monkeypatch):
        from scoreaudit.runtime.scoring import ScorerSlot

        self.pixels: dict[tuple, np.ndarray] = {}
        self.kinds: dict[str, set] = {}
        real = ScorerSlot._score_chunk
        cap = self

        def spy(slot, look, chunk):
            for r in chunk:
                it = r.item
                cap.pixels[slot.name, it.arm, it.image_id, it.operator, it.dose] = np.array(r.image())
            cap.kinds.setdefault(slot.name, set()).add("tensor" if slot.takes_tensors else "array")
            return real(slot, look, chunk)

        monkeypatch.setattr(ScorerSlot, "_score_chunk", spy)


@pytest.fixture(scope="module")
def both(models, tmp_path_factory):
    """One audit run per path (separate caches), with the scored pixels captured."""
    root = tmp_path_factory.mktemp("both")
    spec = _project(root)
    ir = _ir(_scorers(models))
    runs = {}
    for path in ("off", "on"):
        mp = pytest.MonkeyPatch()
        try:
            cap = Captured(mp)
            execute(ir, None, spec_path=spec, out_dir=root / path, cache_path=root / f"{path}.sqlite",
                    progress=False, device="cpu", tensor_path=path)
        finally:
            mp.undo()
        runs[path] = cap
    return {"root": root, "spec": spec, "ir": ir, "cap": runs}


def _keyed(df, value: str, keys):
    return {tuple(r[k] for k in keys): r[value] for r in df.to_dict("records")}


def _close(a: float, b: float, tol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol


def test_run_log_names_the_path(both):
    on = (both["root"] / "on" / "run.log").read_text()
    off = (both["root"] / "off" / "run.log").read_text()
    assert "# tensor path on: each image goes to cpu once" in on
    assert "# tensor path off" in off and "tensor path on" not in off
    assert "has no torch twin" not in on  # every built-in plugin has one


PIXEL_MEASURES = ("ita", "ita_mean", "L", "a_body", "leak3", "leakage")  # read the variant's pixels
INFO_MEASURES = ("width", "clip", "deform")  # read the operator's info (computed from the original image)


def test_measures_and_exclusions_equal_the_reference(both):
    """Info measures to 1e-4; pixel measures to 1e-4 where the variants' pixels are equal, else the tensor
    value equals the reference plugin's value on the tensor path's own pixels (to 1e-4)."""
    from PIL import Image

    from scoreaudit.plugins.base import MeasureContext

    root = both["root"]
    keys = ("arm", "image_id", "operator", "dose", "name", "role")
    ref, got = (_keyed(_table(root / p, "measures"), "value", keys) for p in ("off", "on"))
    assert ref.keys() == got.keys()
    assert {k[4] for k in ref} == set(PIXEL_MEASURES) | set(INFO_MEASURES)
    pix_ref = {k[1:]: v for k, v in both["cap"]["off"].pixels.items() if k[0] == "sharp"}
    pix_got = {k[1:]: v for k, v in both["cap"]["on"].pixels.items() if k[0] == "sharp"}
    ops, specs = _operators(), _measures()
    specs["leakage"] = MeasureIR(name="leakage", call=call("leakage"), role="covariate")  # the builtin row
    plugins = {}
    compared = {"same": 0, "moved": 0}
    for k, v in got.items():
        arm, iid, op, dose, name, _ = k
        pk = (arm, iid, op, dose)
        if name in INFO_MEASURES or pk not in pix_got or np.array_equal(pix_ref[pk], pix_got[pk]):
            assert _close(ref[k], v, 1e-4), (k, ref[k], v)
            compared["same"] += 1
            continue
        compared["moved"] += 1
        spec = specs[name]
        reg = "covariate" if spec.role == "covariate" else "measure"
        entry = REGISTRIES[reg].get(spec.call.plugin)
        plugin = plugins.setdefault(name, entry.impl(entry.validate(dict(spec.call.params))))
        body = np.asarray(Image.open(root / "data" / "imgs" / f"m{iid[1:]}.png")) >= 128
        original = pix_got[arm, iid, "original", 0.0]
        mctx = MeasureContext(original=original, variant=pix_got[pk], masks={"body": body},
                              operator_mask=body if ops[op].region else None, info={}, dose=dose,
                              identity=ops[op].identity)
        assert _close(float(plugin.compute(mctx)), v, 1e-4), (k, v, ref[k])
    assert compared["same"] > 100 and compared["moved"] > 0, compared
    # the run did exercise the covariates
    assert any(v > 0 for k, v in got.items() if k[4] in ("clip", "deform", "leak3") and not math.isnan(v))
    ex = [_table(root / p, "exclusions").to_dict("records") for p in ("off", "on")]
    assert ex[0] == ex[1]


def test_scored_pixels_within_one_level(both):
    ref, got = both["cap"]["off"].pixels, both["cap"]["on"].pixels
    assert ref.keys() == got.keys() and len(ref) > 100
    worst = {}
    for k in ref:
        assert ref[k].shape == got[k].shape, k
        d = int(np.abs(ref[k].astype(int) - got[k].astype(int)).max())
        worst[k[3]] = max(worst.get(k[3], 0), d)
    assert max(worst.values()) <= 1, worst
    assert set(worst) >= {o for o in _operators()} | {"original"}


def test_model_scorers_take_tensors_only_on_the_tensor_path(both):
    on, off = both["cap"]["on"].kinds, both["cap"]["off"].kinds
    assert all(on[s] == {"tensor"} for s in MODEL_SCORERS), on
    assert on["sharp"] == {"array"}  # a numpy scorer gets host copies
    assert all(k == {"array"} for k in off.values()), off


def test_scores_equal_the_reference_where_pixels_are_equal_and_the_reference_scorer_elsewhere(both, models):
    from scoreaudit.runtime.scoring import build_scorer

    root, ir = both["root"], both["ir"]
    keys = ("arm", "image_id", "operator", "dose", "scorer")
    ref, got = (_keyed(_table(root / p, "scores"), "score", keys) for p in ("off", "on"))
    assert ref.keys() == got.keys()
    pix_ref, pix_got = both["cap"]["off"].pixels, both["cap"]["on"].pixels
    prompts = {f"i{k}": f"a photo number {k}" for k in range(4)}
    same = moved = 0
    for scorer in ("sharp", *MODEL_SCORERS):
        inst = build_scorer(ir.scorers[scorer], "cpu", both["spec"].parent)
        redo = []
        for k, v in got.items():
            if k[4] != scorer:
                continue
            pk = (scorer, k[0], k[1], k[2], k[3])
            if pk not in pix_got:  # identity rows copy the original's score
                continue
            assert not math.isnan(v), k
            if np.array_equal(pix_ref[pk], pix_got[pk]):
                same += 1
                assert abs(v - ref[k]) <= 1e-6 * max(1.0, abs(ref[k])), (k, v, ref[k])
            else:
                redo.append((k, pk))
        if redo:
            moved += len(redo)
            needs = ir.scorers[scorer].needs_prompt
            again = inst.score([pix_got[pk] for _, pk in redo], [prompts[k[1]] for k, _ in redo] if needs else None,
                               None)
            for (k, _), s in zip(redo, again):
                assert abs(got[k] - s) <= 1e-5 * max(1.0, abs(s)), (k, got[k], s, ref[k])
    assert same > 50 and moved > 0, (same, moved)  # both cases occur


def test_uploads_once_and_no_numpy_measure_or_operator(models, tmp_path, monkeypatch):
    from scoreaudit.plugins.gpu import pipeline
    from scoreaudit.plugins.scorers import model_torch

    spec = _project(tmp_path)
    scorers = _scorers(models)
    ir = _ir({n: scorers[n] for n in ("sharp", "pick")})
    uploads: list[str] = []
    real_upload = pipeline.DeviceImage.upload.__func__

    def upload(cls, image, masks, device, content_hash=None):
        uploads.append(content_hash)
        return real_upload(cls, image, masks, device, content_hash)

    monkeypatch.setattr(pipeline.DeviceImage, "upload", classmethod(upload))
    numpy_calls: list[str] = []
    for kind in ("measure", "covariate", "operator"):
        for name in REGISTRIES[kind].names():
            impl = REGISTRIES[kind].get(name).impl
            meth = "sweep" if kind == "operator" else "compute"
            real = getattr(impl, meth)

            def spy(self, *a, _real=real, _n=f"{kind} {name}", **kw):
                numpy_calls.append(_n)
                return _real(self, *a, **kw)

            monkeypatch.setattr(impl, meth, spy)
    inputs: list[type] = []
    real_batch = model_torch.Preprocess.batch

    def batch(self, images, device, dtype):
        inputs.extend(type(im) for im in images)
        return real_batch(self, images, device, dtype)

    monkeypatch.setattr(model_torch.Preprocess, "batch", batch)

    execute(ir, None, spec_path=spec, out_dir=tmp_path / "on", cache_path=tmp_path / "c.sqlite",
            progress=False, device="cpu", tensor_path="on")
    images = _table(tmp_path / "on", "images")
    assert len(images) == 4 and sorted(uploads) == sorted(images["content_hash"])  # each image once
    assert numpy_calls == []
    assert inputs and set(inputs) == {torch.Tensor}
    # the spies are live: the reference path calls them (this test can fail)
    execute(ir, None, spec_path=spec, out_dir=tmp_path / "off", cache_path=tmp_path / "d.sqlite",
            progress=False, device="cpu", tensor_path="off")
    assert len(uploads) == 4 and {"operator jpeg", "measure ita", "covariate leakage"} <= set(numpy_calls)
    assert set(inputs) == {torch.Tensor, np.ndarray}


def test_cached_rerun_replays_and_recreated_variants_score_the_same(models, tmp_path, monkeypatch):
    from scoreaudit.plugins.gpu import pipeline

    spec = _project(tmp_path)
    scorers = _scorers(models)
    ir1 = _ir({"sharp": scorers["sharp"]})
    ir2 = _ir({"sharp": scorers["sharp"], "pick": scorers["pick"]})
    run = dict(progress=False, device="cpu", tensor_path="on")
    execute(ir1, None, spec_path=spec, out_dir=tmp_path / "a", cache_path=tmp_path / "c.sqlite", **run)
    # a scorer added: its variants' pixels are re-created on the device (their recipes are cached)
    execute(ir2, None, spec_path=spec, out_dir=tmp_path / "b", cache_path=tmp_path / "c.sqlite", **run)
    log = (tmp_path / "b" / "run.log").read_text()
    assert "not deterministic" not in log
    steps = run_steps(tmp_path / "b")
    assert any(s["kind"] == "variant" and s["status"] == "cached" for s in steps)
    assert any(s["kind"] == "score" and s["status"] == "ran" for s in steps)
    execute(ir2, None, spec_path=spec, out_dir=tmp_path / "fresh", cache_path=tmp_path / "f.sqlite", **run)
    assert table_bytes(tmp_path / "b") == table_bytes(tmp_path / "fresh")
    # everything cached: replayed without decoding or uploading anything, same bytes
    uploads: list = []
    monkeypatch.setattr(pipeline.DeviceImage, "upload", classmethod(lambda cls, *a, **k: uploads.append(a)))
    execute(ir2, None, spec_path=spec, out_dir=tmp_path / "again", cache_path=tmp_path / "c.sqlite", **run)
    assert uploads == []
    assert table_bytes(tmp_path / "again") == table_bytes(tmp_path / "fresh")
    assert all(s["status"] == "cached" for s in run_steps(tmp_path / "again"))


def test_failures_stay_exclusions_and_plugins_without_a_twin_fall_back(models, tmp_path, monkeypatch, fake_log):
    from scoreaudit.plugins.gpu import measures as tmeasures

    spec = _project(tmp_path)
    ops = {"light": _operators()["light"],
           "fragile": OperatorIR(name="fragile", call=call("fake_fragile"), doses=(0.0, 5.0), identity=0.0,
                                 pixel_local=True)}
    real = tmeasures.MeanLab.compute

    def flaky(self, ctx):
        if ctx.variant.shape[0] == 48:  # one image's variants (and its original row)
            raise RuntimeError("device measure broke")
        return real(self, ctx)

    monkeypatch.setattr(tmeasures.MeanLab, "compute", flaky)
    ir = _ir({"s": ScorerIR(name="s", call=call("fake_mean"))}, operators=ops,
             measures={"L": MeasureIR(name="L", call=call("mean_lab", channel="L"), role="measure")})
    execute(ir, None, spec_path=spec, out_dir=tmp_path / "on", cache_path=tmp_path / "c.sqlite",
            progress=False, device="cpu", tensor_path="on")
    ex = _table(tmp_path / "on", "exclusions").to_dict("records")
    assert any(r["image_id"] == "i3" and r["stage"] == "operator" for r in ex)  # fake_fragile refuses 64 px high
    broke = [r for r in ex if r["stage"] == "measure"]
    assert broke and all(r["image_id"] == "i0" and "RuntimeError: device measure broke" in r["reason"] for r in broke)
    log = (tmp_path / "on" / "run.log").read_text()
    assert log.count("operator 'fake_fragile' has no torch twin") == 1
    # the fallback operator's variants are the reference's own: fake_mean scores their mean pixel value
    from PIL import Image

    scores = _table(tmp_path / "on", "scores")
    fr = scores[(scores.operator == "fragile") & (scores.dose == 5.0)].set_index("image_id")["score"]
    for iid in ("i0", "i1", "i2"):
        img = np.asarray(Image.open(tmp_path / "data" / "imgs" / f"{iid}.png"), dtype=int)
        assert fr[iid] == pytest.approx(np.clip(img + 5, 0, 255).mean(), abs=1e-9)


def test_cli_option_and_resolution(monkeypatch):
    from scoreaudit.cli import build_parser
    from scoreaudit.runtime.tensor_steps import resolve_tensor_path

    args = build_parser().parse_args(["run", "x.audit", "--tensor-path", "on"])
    assert args.tensor_path == "on"
    assert build_parser().parse_args(["run", "x.audit"]).tensor_path == "auto"
    assert resolve_tensor_path("auto", "cpu")[0] is False
    assert resolve_tensor_path("auto", "cuda")[0] is True
    assert resolve_tensor_path("on", "cpu")[0] is True
    assert resolve_tensor_path("off", "cuda")[0] is False
    on, why = resolve_tensor_path("on", "cuda", executor="ray")
    assert on is False and "Ray" in why and "ignored" in why
    with pytest.raises(ValueError):
        resolve_tensor_path("maybe", "cpu")


def test_a_torch_scorer_without_the_fact_gets_host_arrays(tmp_path, monkeypatch, fake_log):
    """Only scorers whose entry declares `takes_tensors` get device tensors (a third-party torch scorer may
    call numpy on its images)."""
    import sa_fake_plugins

    reg = REGISTRIES["scorer"]
    reg.register("fake_torch_mean", version="1", params=sa_fake_plugins.MeanParams, needs_prompt=False,
                 requires=("torch",))(sa_fake_plugins.FakeMean)
    try:
        spec = _project(tmp_path)
        seen: list[type] = []
        real = sa_fake_plugins.FakeMean.score

        def score(self, images, prompts, items):
            seen.extend(type(im) for im in images)
            return real(self, images, prompts, items)

        monkeypatch.setattr(sa_fake_plugins.FakeMean, "score", score)
        ir = _ir({"t": ScorerIR(name="t", call=call("fake_torch_mean"))}, operators={"light": _operators()["light"]},
                 measures={"L": MeasureIR(name="L", call=call("mean_lab", channel="L"), role="measure")})
        execute(ir, None, spec_path=spec, out_dir=tmp_path / "on", cache_path=tmp_path / "c.sqlite",
                progress=False, device="cpu", tensor_path="on")
        assert seen and set(seen) == {np.ndarray}
    finally:
        reg._entries.pop("fake_torch_mean", None)  # test-only: the registry has no public removal


class _FakeMeanPixel:
    """A measure without a torch twin: the variant's mean pixel value (numpy only)."""

    def __init__(self, params=None, device: str = "cpu"):
        self.params = params

    def compute(self, ctx) -> float:
        assert isinstance(ctx.variant, np.ndarray) and isinstance(ctx.original, np.ndarray)
        return float(np.asarray(ctx.variant, dtype=np.float64).mean())


def test_a_measure_without_a_twin_runs_its_reference_on_host_copies(tmp_path, fake_log):
    reg = REGISTRIES["measure"]
    reg.register("fake_mean_pixel", version="1")(_FakeMeanPixel)
    try:
        spec = _project(tmp_path)
        ir = _ir({"s": ScorerIR(name="s", call=call("fake_mean"))}, operators={"light": _operators()["light"]},
                 measures={"mp": MeasureIR(name="mp", call=call("fake_mean_pixel"), role="measure"),
                           "L": MeasureIR(name="L", call=call("mean_lab", channel="L"), role="measure")})
        for path in ("off", "on"):
            execute(ir, None, spec_path=spec, out_dir=tmp_path / path, cache_path=tmp_path / f"{path}.sqlite",
                    progress=False, device="cpu", tensor_path=path)
        log = (tmp_path / "on" / "run.log").read_text()
        assert log.count("measure 'fake_mean_pixel' has no torch twin") == 1
        assert "'mean_lab' has no torch twin" not in log
        m = {p: _table(tmp_path / p, "measures") for p in ("off", "on")}
        scores = _table(tmp_path / "on", "scores")
        mp = m["on"][m["on"].name == "mp"].set_index(["image_id", "operator", "dose"])["value"]
        fm = scores.set_index(["image_id", "operator", "dose"])["score"]  # fake_mean: the same mean pixel value
        assert len(mp) == 4 * 6 and all(mp[k] == pytest.approx(fm[k], abs=1e-9) for k in mp.index)
        assert (m["on"]["name"] == m["off"]["name"]).all()
    finally:
        reg._entries.pop("fake_mean_pixel", None)  # test-only: the registry has no public removal
