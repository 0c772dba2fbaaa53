"""Reduced precision runs under torch.autocast on fp32 weights, agrees with fp32, and fp32 is untouched.

On the tiny random models of tests/models (CPU autocast supports bf16, so this runs without a GPU):
- weights stay fp32 and the image forwards run inside an autocast region (bf16 outputs of their
  matrix products), while heads and prompt encoders stay fp32;
- bf16 scores (ordinary and differentiable path) agree with fp32 within BF16_TOL of the score SD,
  with rank correlation ≥ MIN_RHO, and the same check fails on a planted error that only
  the autocast forward has;
- `precision: fp32` enters no autocast region and gives exactly a plain forward's numbers.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the models extra is not installed (pip install 'scoreaudit[models]')")
pytest.importorskip("open_clip", reason="the models extra is not installed")
pytest.importorskip("transformers", reason="the models extra is not installed")

import tiny_models as tm  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402

from scoreaudit.plugins.base import ScorerUnavailable  # noqa: E402
from scoreaudit.registry import load_plugins, scorers  # noqa: E402

pytestmark = pytest.mark.models
load_plugins()

NAMES = ["laion_aesthetic", "pickscore", "image_reward", "hpsv2", "clip_score"]
# bf16 keeps 8 significant bits. On these tiny random models (12 images) the largest bf16-vs-fp32
# difference measured was 12.7 % of the score SD (clip_score; the others 1-5 %): the bound leaves
# some room; a planted error only the autocast forward has lands far above it.
BF16_TOL = 0.20
MIN_RHO = 0.9
CLIP_PROMPT = "a blue sky"  # positive cosines with every image on the tiny ViT-B-32 (the score clamps at 0)


def images():
    return tm.test_images(8, seed=7) + [np.asarray(a) for a in tm.test_images(4, seed=21)]


def prompts(name, n):
    if name == "laion_aesthetic":
        return None
    return [CLIP_PROMPT] * n if name == "clip_score" else [tm.PROMPTS[i % 3] for i in range(n)]


def make(name, precision, **args):
    e = scorers.get(name)
    return e.impl(e.params(precision=precision, **args), "cpu", "auto")


def image_tower(s):
    impl = s.impl
    if hasattr(impl, "clip"):
        return impl.clip.model.visual
    if hasattr(impl.model, "vision_model"):
        return impl.model.vision_model
    return impl.model.blip  # ImageReward: the ViT and the text encoder that attends to it


def fp32_modules(s):
    """Modules that stay fp32 at every precision: heads and prompt encoders."""
    impl = s.impl
    if hasattr(impl, "head"):
        return [impl.head]
    if hasattr(impl, "clip"):
        return [impl.clip.model.transformer]  # open_clip's text transformer
    if hasattr(impl.model, "text_model"):
        return [impl.model.text_model]
    return [impl.model.mlp]


def linear_output_dtypes(modules):
    """Record the output dtype of every nn.Linear under `modules` while the context is open."""
    seen, hooks = set(), []
    for m in modules:
        for sub in m.modules():
            if isinstance(sub, torch.nn.Linear):
                hooks.append(sub.register_forward_hook(lambda mod, i, o: seen.add(o.dtype)))
    return seen, hooks


def agrees(ref, got, tol=BF16_TOL, min_rho=MIN_RHO):
    """The bf16-vs-fp32 check: max |Δ| ≤ tol · SD of the fp32 scores, and Spearman ρ ≥ min_rho."""
    ref, got = np.asarray(ref, float), np.asarray(got, float)
    sd = ref.std(ddof=1)
    assert sd > 1e-6, "the fp32 scores do not vary: the comparison would say nothing"
    worst = np.abs(got - ref).max() / sd
    rho = spearmanr(ref, got).statistic
    assert worst <= tol and rho >= min_rho, f"max |Δ| = {worst:.3f} SD (allowed {tol}), Spearman ρ = {rho:.3f}"
    return worst, rho


@pytest.mark.parametrize("name", NAMES)
def test_bf16_runs_the_image_forward_under_autocast_on_fp32_weights(tiny, name):
    s = make(name, "bf16")
    assert s.precision.name == "bf16" and s.precision.autocast_dtype == torch.bfloat16
    models = [m for m in (getattr(s.impl, "model", None), getattr(getattr(s.impl, "clip", None), "model", None),
                          getattr(s.impl, "head", None)) if m is not None]
    assert models and {p.dtype for m in models for p in m.parameters()} == {torch.float32}
    imgs = images()
    tower, tower_hooks = linear_output_dtypes([image_tower(s)])
    exact, exact_hooks = linear_output_dtypes(fp32_modules(s))
    try:
        s.score(imgs, prompts(name, len(imgs)), [])
    finally:
        for h in tower_hooks + exact_hooks:
            h.remove()
    assert torch.bfloat16 in tower  # matrix products of the image forward ran in bf16 ...
    assert exact == {torch.float32}  # ... the head / prompt encoder in fp32
    assert all(p.dtype == torch.float32 for p in image_tower(s).parameters())  # no weight was cast


@pytest.mark.parametrize("name", NAMES)
def test_fp32_enters_no_autocast_region(tiny, name, monkeypatch):
    entered = []
    real = torch.autocast

    class Spy(real):
        def __init__(self, *a, **k):
            entered.append((a, k))
            super().__init__(*a, **k)

    monkeypatch.setattr(torch, "autocast", Spy)
    s = make(name, "fp32")
    seen, hooks = linear_output_dtypes([image_tower(s)])
    imgs = images()
    try:
        s.score(imgs, prompts(name, len(imgs)), [])
        x = torch.from_numpy(np.stack(tm.test_images(3, seed=2)[2:3])).permute(0, 3, 1, 2).float() / 255
        s.score_tensor(x, prompts(name, 1))
    finally:
        for h in hooks:
            h.remove()
    assert entered == [] and seen == {torch.float32}
    monkeypatch.undo()
    s.use_precision("bf16")
    monkeypatch.setattr(torch, "autocast", Spy)
    s.score(imgs[:2], prompts(name, 2), [])
    assert entered and entered[0][1].get("dtype") == torch.bfloat16  # the spy does see autocast when used


def test_fp32_is_exactly_a_plain_forward(tiny):
    """fp32 numbers are those of the modules called directly, with no autocast anywhere (bit for bit)."""
    imgs = images()
    ir = make("image_reward", "fp32")
    ps = prompts("image_reward", len(imgs))
    got = ir.score(imgs, ps, [])
    uniq = list(dict.fromkeys(ps))
    ids, mask = ir.impl._tokens(uniq)
    sel = torch.tensor([uniq.index(p) for p in ps])
    with torch.inference_mode():
        x = ir.impl.pre.batch(imgs, "cpu", torch.float32)
        plain = ir.impl.model(x, *ir.impl.trim(ids[sel], mask[sel])).numpy().ravel()
    assert np.array_equal(got, plain.astype(np.float64))

    la = make("laion_aesthetic", "fp32")
    got = la.score(imgs, None, [])
    with torch.inference_mode():
        f = la.impl.clip.model.encode_image(la.impl.clip.pre.batch(imgs, "cpu", torch.float32))
        n = f.norm(dim=-1, keepdim=True)
        plain = la.impl.head(f / torch.where(n == 0, torch.ones_like(n), n)).numpy().ravel()
    assert np.array_equal(got, plain.astype(np.float64))


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("name", NAMES)
def test_reduced_precision_agrees_with_fp32(tiny, name, precision):
    s = make(name, "fp32")
    imgs = images()
    ps = prompts(name, len(imgs))
    ref = s.score(imgs, ps, [])
    s.use_precision(precision)
    got = s.score(imgs, ps, [])
    assert not np.array_equal(got, ref)  # the reduced precision did run: its rounding shows
    worst, rho = agrees(ref, got)
    print(f"{name}: {precision} max |Δ| = {worst:.4f} SD, Spearman ρ = {rho:.4f}")


@pytest.mark.parametrize("name", ["laion_aesthetic", "image_reward"])
def test_the_agreement_check_catches_a_planted_autocast_error(tiny, name):
    """An error present only in the autocast forward (noise on the image tower's output) must fail the check."""
    s = make(name, "fp32")
    imgs = images()
    ps = prompts(name, len(imgs))
    ref = s.score(imgs, ps, [])
    tower = s.impl.clip.model.visual if name == "laion_aesthetic" else s.impl.model.blip.visual_encoder
    gen = torch.Generator().manual_seed(0)

    def plant(mod, inp, out):
        if torch.is_autocast_enabled("cpu"):
            return out + 2.0 * out.float().std() * torch.randn(out.shape, generator=gen).to(out.dtype)
        return out

    h = tower.register_forward_hook(plant)
    try:
        s.use_precision("bf16")
        got = s.score(imgs, ps, [])
    finally:
        h.remove()
    with pytest.raises(AssertionError, match="max"):
        agrees(ref, got)
    print(f"{name}: planted error max |Δ| = {np.abs(got - ref).max() / ref.std(ddof=1):.3f} SD")
    agrees(ref, s.score(imgs, ps, []))  # without the planted error the same scorer passes


@pytest.mark.parametrize("name", ["pickscore", "image_reward", "hpsv2"])
def test_bf16_gradients_flow_and_follow_fp32(tiny, name):
    """The probes' differentiable path under autocast: same scores to tolerance, gradients along fp32's."""
    s = make(name, "fp32")
    x0 = torch.from_numpy(np.stack([im for im in images() if im.shape[:2] == (32, 32)] * 2)).permute(0, 3, 1, 2).float() / 255
    ps = prompts(name, len(x0))
    out = {}
    for prec in ("fp32", "bf16"):
        s.use_precision(prec)
        x = x0.clone().requires_grad_(True)
        y = s.score_tensor(x, ps)
        assert y.dtype == torch.float32
        y.sum().backward()
        out[prec] = (y.detach().numpy(), x.grad.detach().flatten())
    assert torch.isfinite(out["bf16"][1]).all() and out["bf16"][1].abs().sum() > 0
    scale = max(np.abs(out["fp32"][0]).max(), 1e-6)
    assert np.abs(out["bf16"][0] - out["fp32"][0]).max() <= 0.05 * scale
    cos = torch.nn.functional.cosine_similarity(out["bf16"][1], out["fp32"][1], dim=0)
    assert cos > 0.9, float(cos)
    assert all(not p.requires_grad for p in image_tower(s).parameters())


def test_auto_is_fp32_on_the_cpu_and_the_scorers_choice_on_cuda():
    from scoreaudit.plugins.scorers.model_precision import choose_precision

    for name in NAMES:
        cls = scorers.get(name).impl
        assert cls.precision_for(scorers.get(name).params(precision="auto"), "cpu") == "fp32"
        assert cls.precision_for(scorers.get(name).params(precision="auto"), "cuda") == cls.AUTO_PRECISION.get("cuda", "fp32")
        assert cls.precision_for(scorers.get(name).params(precision="bf16"), "cuda:1") == "bf16"
        assert cls.precision_for(scorers.get(name).params(precision="auto"), "cuda", "fp16") == "fp16"  # runtime's
    assert choose_precision("cuda", "fp32", "bf16", {}) == "bf16"  # the scorer's own argument wins
    with pytest.raises(ScorerUnavailable, match="unknown precision"):
        choose_precision("cpu", "fp8", "auto", {})


@pytest.mark.parametrize("name", ["laion_aesthetic", "image_reward"])
def test_fp16_scores_in_fp16_and_differentiates_in_bf16(tiny, name):
    """fp16 autocast for `score`; `score_tensor` (probes) runs bf16, whose range keeps small gradients."""
    s = make(name, "fp16")
    imgs = images()
    seen, hooks = linear_output_dtypes([image_tower(s)])
    try:
        s.score(imgs[:2], prompts(name, 2), [])
        assert torch.float16 in seen and torch.bfloat16 not in seen
        seen.clear()
        x = torch.from_numpy(np.stack(tm.test_images(3, seed=2)[2:3])).permute(0, 3, 1, 2).float() / 255
        x.requires_grad_(True)
        s.score_tensor(x, prompts(name, 1)).sum().backward()
    finally:
        for h in hooks:
            h.remove()
    assert torch.bfloat16 in seen and torch.float16 not in seen
    assert torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0
