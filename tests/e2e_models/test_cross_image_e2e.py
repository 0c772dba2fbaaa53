"""examples/cross_image.audit end to end on the bundled-data script's output and tiny random
PickScore / ImageReward checkpoints in a fake Hugging Face cache (no real weights, offline).

Checks that every hypothesis cell reaches an outcome with a finite estimate, that the report
is written, and that each arm's images are scored under the right prompt: the scorers'
`prompt: column(prompt)` on the images arms, the pairs arm's own `prompt: wide_prompt`.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="the models extra is not installed (pip install 'scoreaudit[models]')")
pytest.importorskip("transformers", reason="the models extra is not installed")
pytest.importorskip("open_clip", reason="the models extra is not installed (its CLIP vocabulary builds the tokenizer)")

pytestmark = [pytest.mark.slow, pytest.mark.models]  # slow: model e2e: whole audits with tiny models

REPO = Path(__file__).resolve().parents[2]
OUTCOMES = {"supported", "refuted", "inconclusive"}


def _data_script():
    spec = importlib.util.spec_from_file_location("make_cross_image_data", REPO / "scripts" / "make_cross_image_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def audit(tmp_path_factory):
    """Data + tiny models built by the repo's script, then `scoreaudit run` in a subprocess."""
    root = tmp_path_factory.mktemp("cross_image")
    script = _data_script()
    script.build(root / "data", n_sets=4, n_rated=12, n_pairs=10)
    cache = script.build_tiny_models(root / "hf")
    assert (cache / "models--yuvalkirstain--PickScore_v1" / "refs" / "main").is_file()
    shutil.copy(REPO / "examples" / "cross_image.audit", root / "cross_image.audit")
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [sys.executable, "-c", "import sys; from scoreaudit.cli import main; sys.exit(main())",
           "run", "cross_image.audit", "--device", "cpu", "--quiet"]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=1200)  # generous: CI machines can be slow
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = root / "out" / "cross_image"
    return {"root": root, "cache": cache, "out": out, "results": json.loads((out / "results.json").read_text())}


def test_script_prints_the_environment_to_use(tmp_path, capsys):
    script = _data_script()
    assert script.main(["--out", str(tmp_path / "data"), "--tiny-models", str(tmp_path / "hf")]) == 0
    printed = capsys.readouterr().out
    assert f"HF_HUB_CACHE={tmp_path / 'hf'} HF_HUB_OFFLINE=1" in printed
    for repo in ("yuvalkirstain--PickScore_v1", "laion--CLIP-ViT-H-14-laion2B-s32B-b79K", "THUDM--ImageReward",
                 "bert-base-uncased"):
        snap = tmp_path / "hf" / f"models--{repo}"
        commit = (snap / "refs" / "main").read_text().strip()
        assert len(commit) == 40 and any((snap / "snapshots" / commit).iterdir()), repo
    assert (tmp_path / "hf" / "models--THUDM--ImageReward" / "snapshots" / commit / "ImageReward.pt").is_file()


def test_every_hypothesis_cell_reaches_an_outcome(audit):
    res = audit["results"]
    cells = res["cells"]
    # 4 hypotheses × 2 scorers, each on one arm
    assert sorted(c["id"] for c in cells) == sorted(
        f"{h}/{s}/{a}" for h, a in (("C1", "cf"), ("C2", "cf"), ("A1", "rated"), ("W1", "wide")) for s in ("pick", "ir"))
    for c in cells:
        assert c["outcome"] in OUTCOMES, (c["id"], c["outcome"], c.get("undefined"))
        if c["estimate"] is None or not math.isfinite(c["estimate"]):
            assert c.get("undefined"), f"{c['id']}: no estimate and no reason"  # a documented reason
        else:
            assert c.get("undefined") in (None, ""), c["id"]
    undefined = [c["id"] for c in cells if c["estimate"] is None or not math.isfinite(c["estimate"])]
    assert not undefined, f"every statistic of this example is defined on its data: {undefined}"
    for h in res["hypotheses"]:  # each hypothesis: both scorers' cells counted under an outcome
        assert sum(h["outcomes"].values()) == 2 and set(h["outcomes"]) == OUTCOMES, h
    report = audit["out"] / "report.html"
    assert report.is_file() and report.stat().st_size > 10_000
    html = report.read_text(encoding="utf-8")
    assert all(h in html for h in ("C1", "C2", "A1", "W1"))


def _scores(out: Path):
    import pandas as pd

    s = pd.read_parquet(out / "tables" / "scores.parquet")
    return s[s.operator == "original"].set_index(["arm", "image_id", "scorer"])["score"]


def _direct_scores(cache: Path, monkeypatch, files: list[Path], prompts: list[str]) -> dict[str, np.ndarray]:
    """The two scorers called directly on decoded files with the given prompts."""
    import types

    from PIL import Image

    from scoreaudit.runtime.scorers import make_scorer

    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    images = [np.asarray(Image.open(f).convert("RGB")) for f in files]
    out = {}
    for name, plugin in (("pick", "pickscore"), ("ir", "image_reward")):
        ir = types.SimpleNamespace(name=name, call=types.SimpleNamespace(plugin=plugin, params={}))
        out[name] = make_scorer(ir, device="cpu", precision="fp32").score(images, prompts, [])
    return out


def test_each_arm_is_scored_under_its_prompt(audit, monkeypatch):
    import pandas as pd

    root, scores = audit["root"], _scores(audit["out"])
    pairs = pd.read_csv(root / "data" / "wide" / "pairs.csv").head(4)
    cf = pd.read_csv(root / "data" / "cf.csv").head(4)
    files = ([root / "data" / "wide" / f for f in pairs.faithful] + [root / "data" / "wide" / f for f in pairs.polished]
             + [root / "data" / "cf" / p for p in cf.path])
    ids = ([("wide", f"{i}:preferred") for i in pairs.id] + [("wide", f"{i}:other") for i in pairs.id]
           + [("cf", i) for i in cf.id])
    wide_prompts = list(pairs.wide_prompt) * 2
    assert set(wide_prompts).isdisjoint(pairs.prompt)  # the two prompt columns differ
    declared = _direct_scores(audit["cache"], monkeypatch, files, wide_prompts + list(cf.prompt))
    other = _direct_scores(audit["cache"], monkeypatch, files, list(pairs.prompt) * 2 + list(cf.prompt))
    for name in ("pick", "ir"):
        got = np.array([scores[(arm, iid, name)] for arm, iid in ids])
        tol = 1e-4 * max(1.0, np.abs(declared[name]).max())
        # pairs arm: its own `prompt: wide_prompt`, not the scorer's column(prompt)
        np.testing.assert_allclose(got, declared[name], rtol=0, atol=tol, err_msg=name)
        n = len(wide_prompts)
        assert np.all(np.abs(declared[name][:n] - other[name][:n]) > 100 * tol), name  # the check can tell them apart


def test_plan_forward_passes_equal_the_runs(audit):
    """issue 26: what `scoreaudit plan` prints per scorer is what the run computed (fresh cache)."""
    from plan_forward import assert_forward_passes_match

    assert_forward_passes_match(audit["root"] / "cross_image.audit", audit["out"])
