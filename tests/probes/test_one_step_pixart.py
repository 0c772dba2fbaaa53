"""PixArt-α (DMD) in the probe: the one-step generator equals PixArtAlphaPipeline's own one-step output, and
ReNO raises the score under maximize and lowers it under minimize, on a tiny random PixArt pipeline."""

from __future__ import annotations

import json
import shutil

import pytest

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")

from scoreaudit import api  # noqa: E402
from scoreaudit.runtime.probe import PIXART_DMD_TIMESTEP, OneStep  # noqa: E402
from scoreaudit.testing.tiny_diffusion import save_tiny_pixart, tiny_t5_tokenizer  # noqa: E402

from probe_testutil import SESSION, project  # noqa: E402


def _pipe(tmp_path, clip_sample=False):
    folder = save_tiny_pixart(tmp_path / "pixart", seed=4, clip_sample=clip_sample)
    pipe = diffusers.DiffusionPipeline.from_pretrained(str(folder), local_files_only=True)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def test_tiny_t5_tokenizer_round_trips_without_sentencepiece(tmp_path):
    tok = tiny_t5_tokenizer()
    ids = tok("a portrait photo of a nurse, xyz").input_ids
    assert ids[-1] == tok.eos_token_id == 1 and tok.unk_token_id not in ids
    tok.save_pretrained(str(tmp_path / "tok"))
    back = type(tok).from_pretrained(str(tmp_path / "tok"))
    assert back("a portrait photo of a nurse, xyz").input_ids == ids


@pytest.mark.parametrize("guidance,clip_sample", [(1.0, False), (3.0, False), (1.0, True)])
def test_one_step_matches_the_pixart_pipeline(tmp_path, guidance, clip_sample):
    pipe = _pipe(tmp_path, clip_sample)
    assert type(pipe).__name__ == "PixArtAlphaPipeline"
    gen = OneStep(pipe, "cpu", torch.float32, guidance, 32, 32)
    assert int(gen.t) == PIXART_DMD_TIMESTEP
    z = torch.randn(1, *gen.latent_shape(), generator=torch.Generator().manual_seed(0), requires_grad=True)
    img = gen(z, gen.condition("a portrait photo of a nurse", None))
    with torch.no_grad():  # PixArt-α DMD's own call: one step at timestep 400
        ref = pipe("a portrait photo of a nurse", num_inference_steps=1, timesteps=[PIXART_DMD_TIMESTEP],
                   guidance_scale=guidance, height=32, width=32, latents=z.detach(), output_type="pt",
                   use_resolution_binning=False).images
    assert img.shape == ref.shape == (1, 3, 32, 32)
    assert float((img.detach() - ref).abs().max()) < 1e-4
    img.mean().backward()
    assert torch.isfinite(z.grad).all() and float(z.grad.norm()) > 0


def test_timestep_argument_moves_the_step(tmp_path):
    pipe = _pipe(tmp_path)
    gen = OneStep(pipe, "cpu", torch.float32, 1.0, 32, 32, timestep=250)
    z = torch.randn(1, *gen.latent_shape(), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        img = gen(z, gen.condition("a photo of a man", None))
        ref = pipe("a photo of a man", num_inference_steps=1, timesteps=[250], guidance_scale=1.0, height=32,
                   width=32, latents=z, output_type="pt", use_resolution_binning=False).images
    assert int(gen.t) == 250 and float((img - ref).abs().max()) < 1e-4


PIX = '''audit "PixArt probe" {{ seed: 1  bootstrap: 200 }}
scorer pick = pickscore(prompt: "a portrait photo")
probe p = reno(pick, pipeline: "pixart", prompts: "prompts.txt", iterations: 3, direction: {d}, seeds: 0..1,
               size: 32, measures: [skin_exposure])
hypothesis P1 "t" {{
  probe_drift(p, measure: score) {op} 0
}}
'''


def test_reno_on_pixart_raises_the_score_under_maximize_and_lowers_it_under_minimize(tmp_path):
    import pandas as pd

    folder = SESSION / "probe-pixart"
    if not (folder / "model_index.json").exists():
        save_tiny_pixart(SESSION / "probe-pixart.tmp", seed=5)
        shutil.move(str(SESSION / "probe-pixart.tmp"), str(folder))
    ups = []
    for d, op in (("maximize", ">"), ("minimize", "<")):
        sub = tmp_path / d
        sub.mkdir()
        spec = project(sub, PIX.format(d=d, op=op), prompts=("a photo of a nurse",))
        shutil.copytree(folder, sub / "pixart")
        api.run(spec, out=sub / "out", device="cpu", cache=sub / "c.sqlite", progress=False,
                      render_report=False)
        t = pd.read_parquet(sub / "out" / "tables" / "probe.parquet")
        s = t[t["measure"] == "score"].pivot_table(index=["cluster", "seed"], columns="iteration", values="value")
        ups.append((s[3] - s[0]).to_numpy())
        info = json.loads((sub / "out" / "run.json").read_text())["probes"]["p"]
        assert info["optimised"] == 2 and info["trajectories"] == 2
    assert (ups[0] > 0).all(), ups[0]
    assert (ups[1] < 0).all(), ups[1]


def test_a_pipeline_without_a_one_step_path_is_a_clear_error(tmp_path):
    from types import SimpleNamespace

    from scoreaudit.runtime.probe import OneStepUnsupported
    from scoreaudit.testing.tiny_diffusion import save_tiny_sd

    with pytest.raises(OneStepUnsupported, match="no one-step path.*PixArt"):
        OneStep(SimpleNamespace(unet=None, scheduler=None), "cpu", torch.float32, 0.0, 32, 32)
    sd = diffusers.DiffusionPipeline.from_pretrained(str(save_tiny_sd(tmp_path / "sd")), local_files_only=True)
    with pytest.raises(OneStepUnsupported, match="DDIMScheduler cannot start at timestep 500"):  # DDIM: no custom
        OneStep(sd, "cpu", torch.float32, 0.0, 32, 32, timestep=500)


def test_run_reports_E0882_for_a_pipeline_without_a_one_step_path(tmp_path, monkeypatch):
    from scoreaudit.diagnostics import DiagnosticError
    from scoreaudit.testing.tiny_diffusion import save_tiny_sd

    spec = project(tmp_path, PIX.format(d="maximize", op=">").replace('"pixart"', '"ddim"').replace(
        "size: 32,", "size: 32, timestep: 500,"), prompts=("a photo of a nurse",))
    save_tiny_sd(tmp_path / "ddim")
    with pytest.raises(DiagnosticError) as err:
        api.run(spec, out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=False,
                render_report=False)
    codes = [d.code for d in err.value.diagnostics]
    assert codes == ["E0882"], codes
    assert "DDIMScheduler cannot start at timestep 500" in err.value.diagnostics[0].message
    assert err.value.diagnostics[0].message.startswith("probe 'p': ")  # names the probe, not an arm


def test_a_probe_whose_pipeline_is_missing_names_the_probe(tmp_path):
    from scoreaudit.runtime.generation import GenerationUnavailable

    spec = project(tmp_path, PIX.format(d="maximize", op=">").replace('"pixart"', '"nowhere"'),
                   prompts=("a photo of a nurse",))
    with pytest.raises(GenerationUnavailable, match=r"^probe 'p': pipeline 'nowhere' is neither a folder"):
        api.run(spec, out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=False,
                render_report=False)
