"""The model scorers' differentiable path (`score_tensor`): gradients match finite differences, and the
scores match the ordinary path up to its 8-bit rounding after resizing."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from scoreaudit.compiler.ir import PluginCall, ScorerIR  # noqa: E402
from scoreaudit.runtime.scoring import build_scorer  # noqa: E402

from probe_testutil import tiny_scorers  # noqa: E402

PROMPT = "a portrait photo of a person"


def _scorer(plugin: str):
    tiny_scorers()
    sir = ScorerIR(name=plugin, call=PluginCall(plugin=plugin, version="1", params={"prompt": PROMPT}),
                   needs_prompt=True)
    return build_scorer(sir, "cpu", None)


def _image(seed: int = 0, h: int = 40, w: int = 48):
    g = torch.Generator().manual_seed(seed)
    base = torch.rand(1, 3, h // 8, w // 8, generator=g, dtype=torch.float64)
    return torch.nn.functional.interpolate(base, size=(h, w), mode="bilinear", align_corners=False) * 0.6 + 0.2


@pytest.mark.parametrize("plugin", ["pickscore", "image_reward"])
def test_gradient_matches_finite_differences(plugin):
    s = _scorer(plugin)
    x = _image().float().requires_grad_(True)
    f = s.score_tensor(x, [PROMPT])[0]
    f.backward()
    g = x.grad.detach().double()
    assert torch.isfinite(g).all() and g.abs().sum() > 0
    assert all(not p.requires_grad for p in s.impl.model.parameters())  # gradients flow to the image only
    rng = torch.Generator().manual_seed(1)
    for _ in range(3):
        v = torch.randn(x.shape, generator=rng, dtype=torch.float64)
        v /= v.norm()
        eps = 1e-2
        with torch.no_grad():
            up = float(s.score_tensor((x.detach().double() + eps * v).float(), [PROMPT])[0])
            down = float(s.score_tensor((x.detach().double() - eps * v).float(), [PROMPT])[0])
        fd = (up - down) / (2 * eps)
        ad = float((g * v).sum())
        assert ad == pytest.approx(fd, rel=3e-2, abs=2e-5 * max(1.0, abs(float(f.detach())))), (plugin, ad, fd)


@pytest.mark.parametrize("plugin", ["pickscore", "image_reward"])
def test_differentiable_path_agrees_with_the_scoring_path(plugin):
    s = _scorer(plugin)
    x = _image(seed=3)
    arr = (x[0].permute(1, 2, 0).numpy() * 255).round().astype(np.uint8)
    ordinary = float(s.score([arr], [PROMPT])[0])
    with torch.no_grad():
        diff = float(s.score_tensor(torch.from_numpy(arr).permute(2, 0, 1)[None].float() / 255.0, [PROMPT])[0])
    spread = float(np.ptp(s.score([arr, 255 - arr, arr[::-1].copy()], [PROMPT] * 3)))
    assert abs(diff - ordinary) <= 0.05 * max(spread, 1e-6), (plugin, diff, ordinary, spread)
