"""W0423 at check time: when the scores are already on disk, `scoreaudit check` says a claim cannot be
supported (its discrete test cannot reach alpha) at the claim's line, with the same smallest p `run` gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats

from scoreaudit import api

SPEC = '''audit "Two scorers on ten pairs" {{ version: 1 seed: 3 bootstrap: 200 }}
scorer s1 = precomputed(preferred: s1_pref, other: s1_other)
scorer s2 = precomputed(preferred: s2_pref, other: s2_other)
arm wide = pairs("data/pairs.json", preferred: original, other: distorted, images: false)
hypothesis D "s1 ranks more pairs right than s2" {{
  difference(pairwise_accuracy() for s1, pairwise_accuracy() for s2) > 0 on wide
}}
hypothesis A "s1 is right more often than not" {{
  pairwise_accuracy() > 0.5 on wide for s1
}}
'''


def _project(folder: Path, discordant: int, n: int = 10) -> Path:
    """n pairs; s1 is right on every pair, s2 wrong on the first `discordant` and right on the others."""
    rows = [{"id": f"p{k}", "s1_pref": 1.0 + k, "s1_other": 0.0,
             "s2_pref": 0.0 if k < discordant else 1.0 + k, "s2_other": 0.5} for k in range(n)]
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "data" / "pairs.json").write_text(json.dumps(rows), encoding="utf-8")
    spec = folder / "a.audit"
    spec.write_text(SPEC.format(), encoding="utf-8")
    return spec


def _w0423(spec: Path) -> list:
    checked = api.check(spec)
    assert checked.ok, [d.message for d in checked.diagnostics]
    return [d for d in checked.diagnostics if d.code == "W0423"]


def test_check_warns_at_the_claim_with_the_smallest_p_run_gives(tmp_path):
    spec = _project(tmp_path, discordant=4)
    (w,) = _w0423(spec)  # only the difference: 10 untied pairs reach 2^-10 against 0.5
    # sign-flip over the 4 pairs judged differently: no p below P(all 4 on one side) = 2^-4
    assert "0.0625" in w.message and "D/" in w.message
    line = spec.read_text().splitlines().index(
        "  difference(pairwise_accuracy() for s1, pairwise_accuracy() for s2) > 0 on wide") + 1
    assert (w.span.line, w.span.column) == (line, 3)
    assert w.path == str(spec)
    results = api.run(spec, out=tmp_path / "out", progress=False, render_report=False, device="cpu")
    (rw,) = [x for x in results["warnings"] if x["code"] == "W0423"]
    assert rw["smallest_p"] == pytest.approx(0.5 ** 4, abs=1e-12)
    assert rw["message"] == w.message  # the same cell, the same number, the same words
    (cell,) = [c for c in results["cells"] if c["id"] == rw["cell"]]
    assert cell["outcome"] != "supported"


def test_no_warning_once_the_level_is_reachable(tmp_path):
    # 5 discordant pairs: the smallest p is 2^-5 = 0.031 < 0.05
    assert _w0423(_project(tmp_path, discordant=5)) == []


def test_the_exact_binomial_floor_is_checked_too(tmp_path):
    # 4 pairs only: pairwise_accuracy > 0.5 cannot go below binomtest(4, 4) = 0.0625; the difference's
    # sign-flip over 2 discordant pairs cannot go below 0.25
    spec = _project(tmp_path, discordant=2, n=4)
    found = {w.message.split()[1]: w for w in _w0423(spec)}
    assert set(found) == {"A/s1/wide", next(k for k in found if k.startswith("D/"))}
    best = stats.binomtest(4, 4, 0.5, alternative="greater").pvalue
    assert f"{best:.3g}" in found["A/s1/wide"].message
    assert found["A/s1/wide"].span.line == spec.read_text().splitlines().index(
        "  pairwise_accuracy() > 0.5 on wide for s1") + 1
