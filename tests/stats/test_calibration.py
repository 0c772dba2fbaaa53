"""Calibration through `simulate`: false-positive rate under a true null and CI coverage of the truth."""

from __future__ import annotations

import numpy as np
from scipy import stats
from stats_helpers import with_settings

from scoreaudit.compiler.ir import HypothesisIR
from scoreaudit.stats.planted import ArmShape
from scoreaudit.stats.simulate import run_simulation
import pytest

pytestmark = pytest.mark.slow  # calibration: simulated coverage and error rates (17 s, 6 s, 5 s measured)

SHAPES = {"real": ArmShape(120, 1), "synthetic": ArmShape(60, 2)}


def _fi_asym_ir(skin_ir):
    """H1 (FI > 0 on both arms) plus asymmetry > 0 on both arms: 16 cells per replication."""
    h1 = next(h for h in skin_ir.hypotheses if h.name == "H1")
    asym_cells = tuple(c.model_copy(update={"id": c.id.replace("H1", "HA"), "hypothesis": "HA",
                                             "statistic": c.statistic.model_copy(update={"name": "asymmetry"}),
                                             "test": c.test.model_copy(update={"text": "asymmetry(light) > 0"})})
                       for c in h1.cells)
    ha = HypothesisIR(name="HA", title="asymmetry", text="asymmetry(light) > 0", cells=asym_cells)
    return with_settings(skin_ir.model_copy(update={"hypotheses": (h1, ha)}), correction="none", scale="raw")


def _band(k_trials: int, rate: float, z: float = 3.3) -> tuple[float, float]:
    sd = np.sqrt(rate * (1 - rate) / k_trials)
    return rate - z * sd, rate + z * sd


def test_null_false_positive_rate_and_coverage(skin_ir):
    ir = _fi_asym_ir(skin_ir)
    reps = 70  # 16 cells × 70 = 1120 trials: the 93–97% coverage band is ±3.3 SD of a binomial share
    rows = run_simulation(ir, reps, {"*": {"noise": 1.0}}, SHAPES, n_boot=1000, seed=2024)
    assert len(rows) == 16
    supported = np.mean([r["supported"] for r in rows])
    lo, hi = _band(16 * reps, 0.05)
    assert lo <= supported <= hi, supported
    # at the null boundary the hypothesis is false (θ = 0 is not > 0): all support is false positive
    assert all(r["hypothesis_true"] is False and r["false_positive_rate"] == r["supported"] for r in rows)
    coverage = np.mean([r["coverage"] for r in rows])
    assert 0.93 <= coverage <= 0.97, coverage


def test_planted_effects_are_covered_and_unbiased(skin_ir):
    ir = _fi_asym_ir(skin_ir)
    reps = 70
    rows = run_simulation(ir, reps, {"*": {"noise": 1.0, "fidelity": 0.6, "asymmetry": -0.3}}, SHAPES,
                          n_boot=1000, seed=7)
    coverage = np.mean([r["coverage"] for r in rows])
    assert 0.93 <= coverage <= 0.97, coverage
    fi = [r for r in rows if r["statistic"] == "fidelity_index"]
    assert all(abs(r["truth"] - 0.6 * np.mean(np.array([1, 2, 3]) ** 2 / 9)) < 1e-12 for r in fi)
    assert all(r["power"] > 0.9 for r in fi)
    # bias: the mean estimate over replications is within 3.3 standard errors of the truth
    for r in rows:
        assert abs(r["bias"]) < 0.05
    asym = [r for r in rows if r["statistic"] == "asymmetry"]
    assert all(r["hypothesis_true"] is False and r["supported"] == 0.0 for r in asym)


def test_simulate_cli_output(skin_ir, tmp_path):
    from scoreaudit.stats.simulate import simulate

    text = simulate(with_settings(skin_ir, bootstrap=200), None, reps=2, truth={"*": {"fidelity": 0.5}},
                    out=tmp_path / "sim", progress=False)
    assert "power" in text and "H1/laion/real" in text
    assert (tmp_path / "sim" / "simulation.csv").exists() and (tmp_path / "sim" / "simulation.json").exists()
    assert stats is not None


def test_calibration_bench_quick_grid_runs(capsys):
    """bench/calibration.py --quick: every statistic kind gets a table and the run time is printed."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "bench" / "calibration.py"
    spec = importlib.util.spec_from_file_location("calibration_bench", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    assert mod.main(["--quick"]) == 0
    out = capsys.readouterr().out
    for kind in mod.KINDS:
        assert f"### {kind}" in out
    assert "run time:" in out and "coverage" in out
    # the bar's verdict is computed from the binomial band, not hard-coded
    row = {"kind": "asymmetry", "level": "boundary", "trials": 400, "coverage": 0.95, "supported": 0.2,
           "refuted": 0.05}
    assert mod.verdict(row) == "MISSES: false support"
    assert mod.verdict({**row, "supported": 0.05}) == "ok"
