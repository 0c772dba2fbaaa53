"""Numeric settings against what can be computed (issue 27): located E0251 at `check`, never a traceback in `run`.

Before: `alpha: 1e-300` passed check and `run` ended in "ValueError: Quantiles must be in the range [0, 1]";
`bootstrap: 1000000000000` passed check and `run` asked numpy for a 43.7 TiB count matrix.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from scoreaudit import api, cli
from scoreaudit.compiler import limits
from scoreaudit.exitcodes import Exit

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardening"))
from hardening_helpers import project  # noqa: E402

SPEC = '''audit "m" { version: 1 seed: 1 SETTINGS }
scorer sharp = sharpness()
arm real = images("data/real", manifest: "data/real.csv", kind: real)
region face = mask(column: face_mask)
operator light = lab_shift(channel: L, region: face) doses -5, 0, 5
hypothesis H1 "h" { fidelity_index(light) > 0 on real for each scorer }
'''
UNITS = {"bytes": 1, "KiB": 2 ** 10, "MiB": 2 ** 20, "GiB": 2 ** 30, "TiB": 2 ** 40, "PiB": 2 ** 50, "EiB": 2 ** 60}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("limits")
    project(d, n_real=6)  # six images, each its own cluster
    return d


def _check(folder: Path, settings: str):
    spec = folder / "m.audit"
    spec.write_text(SPEC.replace("SETTINGS", settings), encoding="utf-8")
    checked = api.check(str(spec))
    return spec, [d for d in checked.diagnostics if d.code == "E0251"]


def _column(settings: str, key: str) -> int:
    line = SPEC.splitlines()[0].replace("SETTINGS", settings)
    return line.index(f"{key}: ") + len(key) + 3


def test_alpha_below_the_bootstrap_resolution_is_located(folder):
    settings = "alpha: 1e-300 bootstrap: 100"
    _, errs = _check(folder, settings)
    assert len(errs) == 1, errs
    e = errs[0]
    assert (e.span.line, e.span.column) == (1, _column(settings, "alpha"))
    assert "1/(bootstrap + 1) = 0.0099" in e.message and "raise `alpha` to at least 0.0099" in e.help


def test_alpha_a_larger_bootstrap_resolves_is_told_that_bootstrap(folder):
    _, errs = _check(folder, "alpha: 0.001 bootstrap: 100")
    assert len(errs) == 1 and "`bootstrap` to at least 999" in errs[0].help
    _, errs = _check(folder, "alpha: 0.001 bootstrap: 999")  # 1/(999 + 1) = alpha: resolvable
    assert errs == []
    _, errs = _check(folder, "alpha: 0.05 bootstrap: 100")
    assert errs == []


def _size(message: str) -> float:
    m = re.search(r"needs about ([\d.]+) (bytes|KiB|MiB|GiB|TiB|PiB|EiB) of memory", message)
    assert m, message
    return float(m.group(1)) * UNITS[m.group(2)]


def test_a_bootstrap_larger_than_memory_states_the_estimate(folder):
    settings = "bootstrap: 1000000000000"
    _, errs = _check(folder, settings)
    assert len(errs) == 1, errs
    e = errs[0]
    assert (e.span.line, e.span.column) == (1, _column(settings, "bootstrap"))
    # at least the one allocation the run used to die on: a B x 6 count matrix of int64
    assert _size(e.message) >= 8 * 10 ** 12 * 6
    assert "1 arm(s) of 6 clusters and 1 cell(s)" in e.message and "more than this machine's" in e.message


def test_the_limit_is_this_machines_memory(folder, monkeypatch):
    monkeypatch.setattr(limits, "memory_limit", lambda: 2 ** 30)  # a 1 GiB machine
    per = limits.bootstrap_bytes(1, [6], 1)
    most = 2 ** 30 // per
    _, errs = _check(folder, f"bootstrap: {most}")
    assert errs == []
    _, errs = _check(folder, f"bootstrap: {most + 1}")
    assert len(errs) == 1 and f"at most {most} resamples fit" in errs[0].help
    assert "more than this machine's 1.0 GiB" in errs[0].message


def test_the_estimate_counts_every_kept_and_drawn_matrix():
    # two arms of 10 and 30 clusters, 4 cells, 1000 resamples: kept 2 * 40, drawn 2 * 30, cells 4 * 4 vectors
    assert limits.bootstrap_bytes(1000, [10, 30], 4) == 8 * 1000 * (80 + 60 + 16)


@pytest.mark.parametrize("settings", ["alpha: 1e-300 bootstrap: 100", "bootstrap: 1000000000000"])
def test_run_stops_at_the_located_error_not_a_traceback(folder, tmp_path, capsys, settings):
    spec, _ = _check(folder, settings)
    rc = cli.main(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet",
                   "--cache", str(tmp_path / "c.sqlite")])
    err = capsys.readouterr().err
    assert rc == Exit.SPEC and "error[E0251]" in err and "Traceback" not in err, err
    assert not (tmp_path / "out" / "results.json").exists()


def test_robustness_seeds_are_capped(folder):
    _, errs = _check(folder, "robustness: 1000000000")
    assert len(errs) == 1 and "at most 1000 seeds" in errs[0].message
    assert _check(folder, "robustness: 1000")[1] == []


def _hypothesis(folder: Path, claim: str):
    spec = folder / "m.audit"
    spec.write_text(SPEC.replace("SETTINGS", "").replace("fidelity_index(light) > 0", claim), encoding="utf-8")
    return spec, api.check(str(spec)).diagnostics


@pytest.mark.parametrize("claim,bad", [("fidelity_index(light) within [-1e308, 1e308]", "-1e308"),
                                       ("fidelity_index(light) > 1e13", "1e13"),
                                       ("curve(light, dose: 5) < -2e12", "-2e12")])
def test_numbers_beyond_what_statistics_reach_are_located(folder, claim, bad):
    spec, diags = _hypothesis(folder, claim)
    errs = [d for d in diags if d.is_error]
    assert errs and {d.code for d in errs} == {"E0253"}, errs
    line = spec.read_text().splitlines()[5]
    assert (errs[0].span.line, errs[0].span.column) == (6, line.index(bad.lstrip("-")) + 1 - bad.startswith("-"))


def test_bounds_of_ordinary_size_pass(folder):
    _, diags = _hypothesis(folder, "fidelity_index(light) within [-1e12, 1e12]")
    assert not [d for d in diags if d.is_error]


def test_run_of_a_huge_bound_stops_at_check(folder, tmp_path, capsys):
    spec, _ = _hypothesis(folder, "fidelity_index(light) within [-1e308, 1e308]")
    rc = cli.main(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--cache", str(tmp_path / "c.sqlite")])
    err = capsys.readouterr().err
    assert rc == Exit.SPEC and "error[E0253]" in err, err


def test_planted_effects_beyond_a_million_are_refused(folder):
    spec = folder / "m.audit"
    spec.write_text(SPEC.replace("SETTINGS", "").replace("sharpness()", "planted(fidelity: 1e300)"), encoding="utf-8")
    errs = [d for d in api.check(str(spec)).diagnostics if d.is_error]
    assert [d.code for d in errs] == ["E0303"] and "1000000" in errs[0].message, errs


def test_bca_interval_of_overflowing_replicates_is_undefined_not_a_crash():
    import numpy as np

    from scoreaudit.stats.estimate import Estimate

    e = Estimate(estimate=0.1, method="bootstrap", boot=np.random.default_rng(1).normal(size=200),
                 jack=np.array([1e300, -1e300, 1e300, 3.0]), ci="bca")  # acceleration inf/inf: not a number
    with np.errstate(all="ignore"):
        lo, hi = e.interval(0.9)
    assert np.isnan(lo) and np.isnan(hi)


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("old,new,needle", [
    ("size: 1024", "size: 1000000000", "each side must be between 8 and 8192 pixels, not 1000000000"),
    ("size: 1024", "size: [512, 0]", "not 0"),
    ("size: 1024", "size: [512, 512, 3]", "give one side or [height, width]"),
    ("guidance: 7.0", "guidance: 1e300", "less than or equal to 1000"),
    ("lr: 5.0", "lr: 1e300", "less than or equal to 1000000"),
])
def test_generation_numbers_a_pipeline_cannot_compute_are_refused(tmp_path, old, new, needle):
    """`size: 1000000000` (a 10^18-pixel latent), a guidance or learning rate of 1e300 (NaN images) passed check."""
    import shutil

    shutil.copytree(EXAMPLES / "prompts", tmp_path / "prompts")
    text = (EXAMPLES / "generated.audit").read_text(encoding="utf-8")
    assert old in text
    spec = tmp_path / "g.audit"
    spec.write_text(text.replace(old, new, 1), encoding="utf-8")
    errs = [d for d in api.check(str(spec)).diagnostics if d.is_error]
    assert errs and all(d.code == "E0303" for d in errs) and needle in errs[0].message, errs
    spec.write_text(text.replace("size: 1024", "size: [512, 768]"), encoding="utf-8")
    assert not [d for d in api.check(str(spec)).diagnostics if d.is_error]


def test_a_pairs_arm_counts_its_pairs_as_clusters(tmp_path, monkeypatch):
    rows = "\n".join(f"p{i},a{i}.png,b{i}.png" for i in range(1000))
    (tmp_path / "wide.csv").write_text("id,faithful,polished\n" + rows + "\n", encoding="utf-8")
    spec = tmp_path / "w.audit"
    spec.write_text('audit "w" { version: 1 seed: 1 bootstrap: 1000000000000 }\nscorer s = sharpness()\n'
                    'arm wide = pairs("wide.csv", preferred: faithful, other: polished)\n'
                    'hypothesis W "w" { pairwise_accuracy() > 0.5 on wide for each scorer }\n', encoding="utf-8")
    errs = [d for d in api.check(str(spec)).diagnostics if d.code == "E0251"]
    assert len(errs) == 1 and "1 arm(s) of 1000 clusters and 1 cell(s)" in errs[0].message, errs
    assert _size(errs[0].message) == pytest.approx(limits.bootstrap_bytes(10 ** 12, [1000], 1), rel=0.01)
