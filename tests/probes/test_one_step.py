"""The probe's differentiable one-step generator equals the pipeline's own one-step output (SD and SDXL)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")

from scoreaudit.runtime.probe import OneStep, noise_nll  # noqa: E402
from scoreaudit.testing.tiny_diffusion import save_tiny_sd, save_tiny_sdxl  # noqa: E402


def _pipe(tmp_path, kind: str):
    folder = (save_tiny_sdxl if kind == "sdxl" else save_tiny_sd)(tmp_path / kind, seed=2)
    pipe = diffusers.DiffusionPipeline.from_pretrained(str(folder), local_files_only=True)
    if kind == "sd":  # SD-Turbo's scheduler: Euler at the trailing timestep
        pipe.scheduler = diffusers.EulerDiscreteScheduler.from_config(pipe.scheduler.config,
                                                                      timestep_spacing="trailing")
    pipe.set_progress_bar_config(disable=True)
    return pipe


@pytest.mark.parametrize("kind,guidance", [("sd", 0.0), ("sd", 3.0), ("sdxl", 0.0)])
def test_one_step_matches_the_pipeline_and_has_a_gradient(tmp_path, kind, guidance):
    pipe = _pipe(tmp_path, kind)
    gen = OneStep(pipe, "cpu", torch.float32, guidance, 32, 32)
    z = torch.randn(1, *gen.latent_shape(), generator=torch.Generator().manual_seed(0), requires_grad=True)
    img = gen(z, gen.condition("a portrait photo", None))
    with torch.no_grad():
        ref = pipe("a portrait photo", num_inference_steps=1, guidance_scale=guidance, height=32, width=32,
                   latents=z.detach(), output_type="pt").images
    assert img.shape == ref.shape == (1, 3, 32, 32)
    assert float((img.detach() - ref).abs().max()) < 1e-4
    img.mean().backward()
    assert torch.isfinite(z.grad).all() and float(z.grad.norm()) > 0


def test_noise_regulariser_is_the_chi_square_nll():
    """d/dK of −((d/2 − 1)·log K − K/2) vanishes at K = d − 2: the regulariser pulls ‖z‖² there."""
    d = 64
    for k in (30.0, 62.0, 120.0):
        z = torch.full((d,), (k / d) ** 0.5, requires_grad=True)
        noise_nll(z).backward()
        # gradient along z is 2z·(−(d/2 − 1)/K + 1/2): negative below K = d − 2, zero at it, positive above
        g = float((z.grad * z.detach()).sum())
        expected = 2 * k * (-(d / 2 - 1) / k + 0.5)
        assert g == pytest.approx(expected, rel=1e-5, abs=1e-4)
