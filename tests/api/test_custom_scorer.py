"""The documented Python API: examples/custom_scorer runs as written, and a scorer also registers through the
`scoreaudit.plugins` entry-point group."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

from scoreaudit import api

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "custom_scorer"


def _env(extra_path: list[Path]) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(p) for p in extra_path] + [str(ROOT / "src"), env.get("PYTHONPATH", "")])
    env["HF_HUB_OFFLINE"] = "1"
    return env


def test_example_runs_as_written(tmp_path):
    work = tmp_path / "custom_scorer"
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns("data", "out"))
    r = subprocess.run([sys.executable, str(work / "run.py"), "--out", str(tmp_path / "out")], env=_env([]),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "out" / "results.json").read_text())
    cell = res["cells"][0]
    assert cell["scorer"] == "red" and res["environment"]["scorers"]["red"]["plugin"] == "redness"
    # warm tiles: rotating hue either way lowers redness, so the inverted U is found
    assert cell["estimate"] > 0 and cell["outcome"] == "supported"
    assert cell["sentence"] in r.stdout and (tmp_path / "out" / "report.html").exists()


def test_entry_point_group_registers_the_scorer(tmp_path):
    """A package that lists its module under `scoreaudit.plugins` is imported when the registries load."""
    site = tmp_path / "site"
    dist = site / "scoreaudit_redness_example-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: scoreaudit-redness-example\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[scoreaudit.plugins]\nredness = redness_plugin\n")
    shutil.copy(EXAMPLE / "redness_plugin.py", site / "redness_plugin.py")
    env = _env([site])
    spec = tmp_path / "custom.audit"
    shutil.copy(EXAMPLE / "custom.audit", spec)
    r = subprocess.run([sys.executable, "-m", "scoreaudit.cli", "check", str(spec)], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "scoreaudit.cli", "describe", "redness"], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "Mean red minus mean green" in r.stdout
    # without the entry point, the name is unknown (did-you-mean, usage error)
    r = subprocess.run([sys.executable, "-m", "scoreaudit.cli", "check", str(spec)], env=_env([]), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 1 and "redness" in r.stderr


def test_register_scorer_batched_with_params_and_prompts():
    from scoreaudit.registry import Params, scorers

    class Gain(Params):
        gain: float = 1.0

    def batch(images, prompts, params):
        return [params.gain * len(p or "") + img.mean() * 0 for img, p in zip(images, prompts)]

    entry = api.register_scorer("test_prompt_length", batch, batched=True, needs_prompt=True, params=Gain,
                                doc="Prompt length times gain.")
    try:
        assert scorers.get("test_prompt_length") is entry and entry.meta["needs_prompt"] is True
        impl = entry.impl(Gain(gain=2.0))
        out = impl.score([np.zeros((4, 4, 3), np.uint8)] * 2, ["ab", "abcd"], [None, None])
        assert out.tolist() == [4.0, 8.0]
        assert "Prompt length" in api.describe("test_prompt_length")
    finally:  # leave the session's registry as the other tests expect it
        scorers._entries.pop("test_prompt_length", None)
