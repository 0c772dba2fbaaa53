"""SeedSelect initialisation of a probe (`reno(..., seedselect:)`) on the tiny pipelines: towards the
references, cached by its inputs."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("diffusers")

from PIL import Image  # noqa: E402

from probe_testutil import project  # noqa: E402
from scoreaudit import api  # noqa: E402

SPEC = '''audit "SeedSelect" {{ seed: 1  bootstrap: 200 }}
scorer pick = pickscore()
probe plain = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 1, seeds: 0..1, size: 32,
                   measures: [skin_exposure])
probe chosen = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: {it}, seeds: 0..1, size: 32,
                    measures: [skin_exposure], seedselect: "refs.csv", seedselect_steps: 10, seedselect_lr: 5.0,
                    seedselect_model: "clip")
hypothesis P1 "t" {{
  probe_drift(plain, measure: skin_exposure) > 0
  probe_drift(chosen, measure: skin_exposure) > 0
}}
'''


def _references(tmp):
    """Three reference images of one look (a warm, bright face-like blob on a dark ground)."""
    (tmp / "refs").mkdir()
    rows = []
    for k in range(3):
        yy, xx = np.mgrid[0:64, 0:64]
        img = np.zeros((64, 64, 3), np.uint8)
        img[...] = (20, 30, 60)
        blob = (yy - 30 - k) ** 2 + (xx - 32 + k) ** 2 < 18 ** 2
        img[blob] = (230 - 10 * k, 170, 120)
        Image.fromarray(img).save(tmp / "refs" / f"r{k}.png")
        rows.append(f"refs/r{k}.png")
    (tmp / "refs.csv").write_text("path\n" + "\n".join(rows) + "\n")


def _run(tmp, it):
    spec = tmp / "probe.audit"
    spec.write_text(SPEC.format(it=it))
    api.run(spec, out=tmp / f"out{it}", device="cpu", cache=tmp / "c.sqlite", progress=False, render_report=False)
    return json.loads((tmp / f"out{it}" / "run.json").read_text())["probes"]


def _similarity(embedder, target, path):
    f = embedder.embed([np.asarray(Image.open(path).convert("RGB"))])[0]
    return float(f @ target / np.linalg.norm(f))


def test_selected_noise_moves_the_first_image_towards_the_references_and_is_cached(tmp_path):
    project(tmp_path, SPEC.format(it=1), prompts=("a portrait photo of a person",))
    _references(tmp_path)
    probes = _run(tmp_path, 1)
    assert probes["chosen"]["seedselect"] == {"searched": 2, "reused": 0}
    assert "seedselect" not in probes["plain"]
    # an independent reading: the stored first images, embedded by the same CLIP from their PNGs
    from scoreaudit.plugins.probe_clip import ClipEmbedder

    emb = ClipEmbedder("clip", tmp_path, "cpu")
    refs = emb.embed([np.asarray(Image.open(tmp_path / "refs" / f"r{k}.png").convert("RGB")) for k in range(3)])
    refs = refs / np.linalg.norm(refs, axis=1, keepdims=True)
    target = refs.mean(axis=0) / np.linalg.norm(refs.mean(axis=0))
    out = tmp_path / "out1" / "probes"
    gains = []
    for traj in ("p0000_s0", "p0000_s1"):
        chosen = _similarity(emb, target, out / "chosen" / traj / "it000.png")
        plain = _similarity(emb, target, out / "plain" / traj / "it000.png")
        gains.append(chosen - plain)
    assert all(g > 0 for g in gains), gains  # every selected ε₀ starts closer to the references
    # a re-run with other ReNO settings re-optimises the trajectories but reuses every selected ε₀
    again = _run(tmp_path, 2)
    assert again["chosen"]["seedselect"] == {"searched": 0, "reused": 2}
    assert again["chosen"]["optimised"] == 2 and again["plain"]["reused"] == 2
    first1 = np.asarray(Image.open(out / "chosen" / "p0000_s0" / "it000.png"))
    first2 = np.asarray(Image.open(tmp_path / "out2" / "probes" / "chosen" / "p0000_s0" / "it000.png"))
    assert np.array_equal(first1, first2)  # the same ε₀, so the same first image
    # and changing the references searches again
    Image.fromarray(np.full((64, 64, 3), 200, np.uint8)).save(tmp_path / "refs" / "r0.png")
    assert _run(tmp_path, 2)["chosen"]["seedselect"] == {"searched": 2, "reused": 0}


def test_seedselect_options_without_references_are_an_error():
    src = SPEC.format(it=1).replace('seedselect: "refs.csv", ', "")
    c = api.check("t.audit", source=src, tables=False)
    assert not c.ok and any("needs `seedselect:`" in d.message for d in c.diagnostics)
