"""A cell's `method` names the test its p comes from: factor_effect's Wald F test and rank_spread's Friedman
(three or more levels) or sign test (two) at `> 0`, the bootstrap inversion at any other threshold (before:
"cluster bootstrap (... inversion)" whatever the p came from)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scoreaudit.compiler.ir import ORIGINAL
from scoreaudit.compiler.ir import TestIR as ClaimTest
from scoreaudit.stats.context import StatContext

from tests.stats_cross.test_cross_planted import _call, _cf_tables, _ir


def _gt(t):
    return ClaimTest(kind="greater", threshold=t, text=f"> {t}")


def test_factor_effect_names_the_wald_test_at_zero():
    fe = StatContext(_ir(), _cf_tables(effect=1.0, seed=0)).evaluate(
        _call("factor_effect", factor="race", model="race * gender"), "cf", "s")
    assert fe.test_name_for(_gt(0.0)).startswith("Wald F test")
    assert fe.p_greater(0.0) == pytest.approx(fe.detail["wald_p"])  # the p it names
    assert fe.test_name_for(_gt(0.2)) == f"cluster bootstrap ({fe.family} inversion)"
    eq = ClaimTest(kind="equivalence", low=-0.1, high=0.1, text="abs < 0.1")
    assert fe.test_name_for(eq) == f"cluster bootstrap ({fe.family} inversion)"


def _ranked(levels, seed=2, n=25):
    rng = np.random.default_rng(seed)
    images, scores = [], []
    for s in range(n):
        for k, lv in enumerate(levels):
            iid = f"s{s}_{lv}"
            images.append({"arm": "cf", "image_id": iid, "cluster": f"s{s}", "race": lv, "gender": "f"})
            scores.append({"arm": "cf", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": "s",
                           "score": 0.4 * k + rng.normal()})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


@pytest.mark.parametrize("levels,name", [(("A", "B", "C"), "Friedman test"), (("A", "B"), "sign test")])
def test_rank_spread_names_friedman_or_the_sign_test(levels, name):
    est = StatContext(_ir(), _ranked(levels)).evaluate(_call("rank_spread", factor="race"), "cf", "s")
    assert est.test_name_for(_gt(0.0)).startswith(name)
    if len(levels) == 3:  # the p it names is scipy's Friedman test on the per-cluster ranks
        assert est.p_greater(0.0) == pytest.approx(est.detail["friedman_p"])
    assert est.test_name_for(_gt(0.1)) == f"cluster bootstrap ({est.family} inversion)"
