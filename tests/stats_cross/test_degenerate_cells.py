"""Degenerate inputs make a cell undefined with the reason, never a number that looks like a result
(spec/methods.md, "Ties, discreteness and degenerate inputs"; stats/degenerate.py)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scoreaudit import api
from scoreaudit.compiler.ir import ORIGINAL
from scoreaudit.stats import cross
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.degenerate import degeneracy, numerically_constant
from scoreaudit.stats.engine import evaluate_cells
from scoreaudit.stats.estimate import Estimate

PROBE_SPEC = '''audit "Probe stats" { seed: 3  bootstrap: 400  test: ttest }
scorer pick = pickscore(prompt: "a photo")
probe p = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 2, seeds: 0..1,
               measures: [clip_attribute(labels: ["man", "woman"])])
hypothesis P1 "t" {
  probe_shift(p, label: "woman") > 0
}
'''

CORR_SPEC = '''audit "c" { seed: 1  scale: raw  bootstrap: 200 }
scorer p = planted(fidelity: 0.5)
arm a = images("imgs", manifest: "m.csv", cluster: cluster, factors: [tone])
hypothesis C "c" { correlate(group_gap(tone, light, dark), by: grp, table: "t.csv", column: v) > 0 on a for each scorer }
'''


def _probe_rows(label_values) -> pd.DataFrame:
    rows = []
    for prompt in range(6):
        for seed in range(2):
            first, last = label_values(prompt, seed)
            for it, v in ((0, first), (2, last)):
                for label, x in (("woman", v), ("man", 1 - v)):
                    rows.append({"probe": "p", "scorer": "pick", "prompt": str(prompt), "cluster": f"c{prompt}",
                                 "seed": seed, "iteration": it, "measure": "clip_attribute", "label": label,
                                 "value": float(x)})
    return pd.DataFrame(rows)


def test_zero_variance_probe_shift_is_undefined_not_refuted():
    """Before: no label ever moved, the t interval was [0, 0] and the cell was refuted with p = —."""
    c = api.check("t.audit", source=PROBE_SPEC, tables=False)
    assert c.ok
    ctx = StatContext(c.ir, {"probe": _probe_rows(lambda prompt, seed: (0, 0))})
    cell = evaluate_cells(ctx, c.ir.cells())[0]
    assert cell["outcome"] == "inconclusive"
    assert "zero variance" in cell["undefined"]
    assert not np.isfinite(cell["estimate"]) and not np.isfinite(cell["ci_low"])
    # a shift that varies between prompts is tested as before
    ctx = StatContext(c.ir, {"probe": _probe_rows(lambda prompt, seed: (0, int(prompt % 2 or seed)))})
    cell = evaluate_cells(ctx, c.ir.cells())[0]
    assert cell["undefined"] is None and np.isfinite(cell["p"])


def _corr_tables(noise: float):
    """Eight groups of four clusters; in each cluster a light and a dark pair. noise 0: the dark images score
    the light ones' scores (up to the last bit), so every group's gap is zero up to rounding (~1e-17)."""
    rng = np.random.default_rng(0)
    images, scores = [], []
    for g in range(8):
        for c in range(4):
            base = rng.normal()
            for tone in ("light", "dark"):
                for k in range(2):
                    iid = f"g{g}c{c}{tone}{k}"
                    images.append({"arm": "a", "image_id": iid, "cluster": f"g{g}c{c}", "tone": tone,
                                   "grp": f"G{g}"})
                    s = base + 1.1 * k + (noise * rng.normal() if tone == "light" else 0.0)
                    scores.append({"arm": "a", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": "p",
                                   "score": s})
    sc = pd.DataFrame(scores)
    if noise == 0:
        light = sc["image_id"].str.contains("light")
        sc.loc[~light, "score"] = sc.loc[light, "score"].to_numpy() * (1 + 1e-16)
    table = pd.DataFrame({"grp": [f"G{g}" for g in range(8)], "v": np.arange(8.0)})
    return {"images": pd.DataFrame(images), "scores": sc, "_inputs": {"t.csv": table}}


def _corr_cell(tmp_path: Path, tables) -> dict:
    spec = tmp_path / "c.audit"
    spec.write_text(CORR_SPEC)
    ir, _ = api.compile(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's ConstantInputWarning must not reach the terminal
        return evaluate_cells(StatContext(ir, tables), ir.cells())[0]


def test_correlate_of_numerically_zero_gaps_is_undefined_and_names_the_groups(tmp_path):
    """Before: three groups were dropped silently and r = +0.56 was reported on gaps of order 1e-17."""
    cell = _corr_cell(tmp_path, _corr_tables(0.0))
    assert cell["outcome"] == "inconclusive" and cell["undefined"]
    assert not np.isfinite(cell["estimate"])
    d = cell["detail"]
    assert d["n_dropped"] == len(d["dropped"]) > 0 and set(d["dropped"]) <= {f"G{g}" for g in range(8)}
    assert all("undefined" in why for why in d["dropped"].values())


def test_correlate_counts_and_names_every_dropped_group(tmp_path):
    tables = _corr_tables(0.5)
    tables["_inputs"]["t.csv"].loc[2, "v"] = np.nan  # G2 has no table value
    cell = _corr_cell(tmp_path, tables)
    d = cell["detail"]
    assert d["dropped"] == {"G2": "the table has no numeric 'v' for it"} and d["n_dropped"] == 1
    assert d["groups"] == [f"G{g}" for g in range(8) if g != 2]
    from scipy import stats

    assert cell["estimate"] == pytest.approx(stats.pearsonr(d["values"], d["table_values"]).statistic, abs=1e-12)


def test_a_constant_correlation_input_gives_nan_without_scipys_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = cross.correlation(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0]), "pearson")
    assert np.isnan(r.statistic) and np.isnan(r.pvalue)


@pytest.mark.parametrize("make", [
    lambda: Estimate(0.0, "ttest", contrasts=np.zeros(8)),                      # constant contrasts
    lambda: Estimate(1e-17, "ttest", contrasts=np.full(8, 1e-17) + np.arange(8) * 1e-18),  # 1e-17 noise
    lambda: Estimate(0.3, "bootstrap", boot=np.full(200, 0.3)),                 # a bootstrap that never moves
    lambda: Estimate(0.2, "normal", se=0.0, df=9.0),                            # zero standard error
    lambda: Estimate(0.2, "bootstrap", boot=np.linspace(0, 1, 50), detail={"n_clusters": 1}),  # one cluster
])
def test_the_one_guard_covers_every_kind(make):
    assert degeneracy(make()) is not None


def test_the_guard_leaves_ordinary_cells_alone():
    rng = np.random.default_rng(0)
    assert degeneracy(Estimate(0.1, "ttest", contrasts=rng.normal(size=10))) is None
    assert degeneracy(Estimate(0.1, "bootstrap", boot=rng.normal(size=100), detail={"n_clusters": 10})) is None
    assert degeneracy(Estimate(0.2, "normal", se=0.05, df=9.0)) is None
    # raw score units: spreads are judged against the scores' SD, not against 1
    assert not numerically_constant([1e-9, 2e-9, 3e-9], scale=1e-8)
    assert numerically_constant([1e-17, 2e-17], scale=1.0)


def test_a_constant_bootstrap_does_not_undo_an_analytic_test():
    """Every pair right under one scorer and wrong under the other: the per-pair differences are all 1, the
    bootstrap never moves, and the sign-flip test (its Monte-Carlo floor 1/20,000 at 30 clusters) still decides:
    supported, not undefined."""
    from test_comparisons import PA, _compare, _ir, _pairs_tables

    from scoreaudit.compiler.ir import ReadingIR, TestIR as Claim
    from scoreaudit.stats.context import StatContext
    from scoreaudit.stats.outcomes import cell_p, number_outcome

    ctx = StatContext(_ir(n_boot=400), _pairs_tables(n=30, p1=1.0, p2=0.0))
    est = ctx.evaluate(_compare("difference", ReadingIR(statistic=PA, arm="wide", scorer="s1"),
                                ReadingIR(statistic=PA, arm="wide", scorer="s2")), None, "s1:s2")
    assert est.undefined is None and est.estimate == 1.0
    claim = Claim(kind="greater", threshold=0.0, text="difference(...) > 0")
    p = cell_p(est, claim)
    assert p < 1e-3 and number_outcome(est, claim, p, 0.05) == "supported"
