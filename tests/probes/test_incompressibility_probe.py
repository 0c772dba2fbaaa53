"""The Incompression baseline (issue 32): `incompressibility` has a differentiable torch form equal to the
classical scorer on the same pixels, so a probe may declare it (before: E0855, "has no gradient")."""

from __future__ import annotations

import numpy as np
import pytest

from scoreaudit import api
from scoreaudit.plugins.scorers.classical import Incompressibility

torch = pytest.importorskip("torch")

#: float64 twin vs the numpy reference: the same sums in another order
TOL64 = 1e-10
#: float32 (the probe's working precision): relative rounding of ~1e-7 per term, summed over a few thousand terms
TOL32 = 1e-4


def _images(rng, n=6, h=37, w=52):
    """Random uint8 images of a size that is not a whole number of 8×8 blocks (the crop is exercised)."""
    imgs = [rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8) for _ in range(n - 2)]
    smooth = np.repeat(np.linspace(0, 255, w)[None, :, None], h, 0).repeat(3, 2).round().astype(np.uint8)
    imgs.append(smooth)  # a smooth ramp: little high-frequency energy
    imgs.append(np.full((h, w, 3), 128, np.uint8))  # flat: 0 by definition
    return imgs


def _as_tensor(imgs, dtype):
    return torch.as_tensor(np.stack(imgs)).permute(0, 3, 1, 2).to(dtype) / 255.0


def test_torch_form_equals_the_classical_score_on_the_same_pixels():
    rng = np.random.default_rng(7)
    imgs = _images(rng)
    scorer = Incompressibility()
    classical = scorer.score(imgs, None, [])
    assert classical[-1] == 0.0 and classical[-2] < 0.05 and abs(classical[0] - 28 / 63) < 0.05  # sanity
    t64 = scorer.score_tensor(_as_tensor(imgs, torch.float64)).numpy()
    np.testing.assert_allclose(t64, classical, rtol=0, atol=TOL64)
    t32 = scorer.score_tensor(_as_tensor(imgs, torch.float32)).numpy()
    np.testing.assert_allclose(t32, classical, rtol=0, atol=TOL32)


def test_gradient_ascent_on_the_torch_form_raises_the_classical_score():
    rng = np.random.default_rng(3)
    base = _images(rng, n=3, h=32, w=32)[1]  # the smooth ramp
    x = _as_tensor([base], torch.float32).requires_grad_(True)
    scorer = Incompressibility()
    s = scorer.score_tensor(x)[0]
    s.backward()
    assert torch.isfinite(x.grad).all() and float(x.grad.abs().sum()) > 0
    flat = _as_tensor([np.full((16, 16, 3), 90, np.uint8)], torch.float32).requires_grad_(True)
    scorer.score_tensor(flat)[0].backward()
    assert torch.isfinite(flat.grad).all()  # the flat branch has no NaN gradient
    with torch.no_grad():
        y = (x + 0.02 * x.grad / x.grad.abs().max()).clamp(0, 1)
    after = (y[0].permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
    assert scorer.score([after], None, [])[0] > scorer.score([base], None, [])[0]


def test_a_probe_may_declare_incompressibility():
    src = ('audit "Baseline" { seed: 1 }\nscorer base = incompressibility()\n'
           'probe p = reno(base, pipeline: "sd", prompts: "prompts.txt", iterations: 2, seeds: 0..1, '
           'measures: [ita])\n'
           'hypothesis H "t" {\n  probe_drift(p, measure: ita) > 0\n}\n')
    c = api.check("t.audit", source=src, tables=False)
    assert c.ok, [(d.code, d.message) for d in c.diagnostics]
    assert "E0855" not in {d.code for d in c.diagnostics}
    sharp = api.check("t.audit", source=src.replace("incompressibility()", "sharpness()"), tables=False)
    assert "E0855" in {d.code for d in sharp.diagnostics}  # the other classical scorers are still refused


def test_a_tiny_probe_optimises_incompressibility(tmp_path):
    """On the tiny SD pipeline: the run records the classical number of its own images, and maximising it
    raises it (the baseline the seed paper compares a reward model's drift with)."""
    pytest.importorskip("diffusers")
    import shutil

    import pandas as pd
    from PIL import Image

    from probe_testutil import tiny_pipeline

    shutil.copytree(tiny_pipeline(), tmp_path / "sd")
    (tmp_path / "prompts.txt").write_text("a portrait photo of a person\na photo of a nurse\n")
    spec = tmp_path / "base.audit"
    spec.write_text('audit "Baseline" { seed: 1  bootstrap: 200 }\nscorer base = incompressibility()\n'
                    'probe p = reno(base, pipeline: "sd", prompts: "prompts.txt", iterations: 3, lr: 5.0, '
                    'seeds: 0..1, size: 32, measures: [ita])\n'
                    'hypothesis H "t" {\n  probe_drift(p, measure: score) > 0\n}\n')
    res = api.run(spec, out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=False,
                  render_report=False)
    t = pd.read_parquet(tmp_path / "out" / "tables" / "probe.parquet")
    score = t[t["measure"] == "score"]
    first = score[(score["iteration"] == 0) & (score["seed"] == 0)]["value"].iloc[0]
    png = np.asarray(Image.open(tmp_path / "out" / "probes" / "p" / "p0000_s0" / "it000.png").convert("RGB"))
    # the recorded score is the torch form on the float image; the png is that image rounded to uint8
    assert first == pytest.approx(Incompressibility().score([png], None, [])[0], abs=0.02)
    cell, = [c for c in res["cells"] if c["statistic"] == "probe_drift"]
    for _, g in score.groupby(["cluster", "seed"]):  # every trajectory climbs, step by step
        assert (np.diff(g.sort_values("iteration")["value"].to_numpy()) > 0).all()
    assert cell["estimate"] > 0, cell["sentence"]
    assert "base's score drifts by +" in cell["sentence"]
