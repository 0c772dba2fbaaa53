"""A perfect agreement (every positive scored above every negative; every call right) makes every cluster
bootstrap resample give the same value. The cell is inconclusive and its reason says what the data show —
the value and why it leaves no interval — instead of only 'the bootstrap shows no variation'."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from scoreaudit.compiler.ir import ORIGINAL
from scoreaudit.compiler.ir import TestIR as ClaimTest
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import evaluate_cells

from tests.stats_cross.test_comparisons import _call, _ir


def _labelled(score, label):
    n = len(score)
    images = pd.DataFrame({"arm": "real", "image_id": [f"i{j:03d}" for j in range(n)],
                           "cluster": [f"c{j // 2:03d}" for j in range(n)], "race": "A", "judge": label})
    scores = pd.DataFrame({"arm": "real", "image_id": images["image_id"], "operator": ORIGINAL, "dose": 0.0,
                           "scorer": "s1", "score": score})
    return {"images": images, "scores": scores}


def _agreement(tables, **params):
    ctx = StatContext(_ir(n_boot=300), tables)
    return ctx, _call("agreement", label="judge", missing=-1, prompt=None, weights=None, **params)


@pytest.mark.parametrize("flip,value,side", [(False, 1, "above"), (True, 0, "below")])
def test_a_perfect_auroc_is_inconclusive_with_its_value_in_words(flip, value, side):
    rng = np.random.default_rng(3)
    label = np.tile([0, 1], 20)
    score = np.where(label == 1, 2.0, 0.0) + rng.uniform(0, 1, 40)  # every positive above every negative
    if flip:
        score = -score
    assert roc_auc_score(label, score) == value  # the reference: perfect separation
    ctx, call = _agreement(_labelled(score, label), metric="auroc", threshold=None)
    est = ctx.evaluate(call, "real", "s1")
    assert est.undefined is not None and np.isnan(est.estimate)
    assert f"AUROC = {value} on these data" in est.undefined and f"scores {side} every" in est.undefined
    assert "perfect separation" in est.undefined and "no interval or test" in est.undefined
    from scoreaudit.compiler.ir import CellIR

    cell = CellIR(id="H/s1/real", hypothesis="H", claim=0, scorer="s1", arm="real", statistic=call,
                  test=ClaimTest(kind="greater", threshold=0.5, text="> 0.5"))
    (c,) = evaluate_cells(ctx, [cell])
    assert c["outcome"] == "inconclusive" and c["detail"]["n"] == 40


def test_every_call_right_says_so():
    label = np.tile([0, 1], 20)
    score = label * 2.0 + np.linspace(0, 0.5, 40)  # the cut point 1 calls every image right
    ctx, call = _agreement(_labelled(score, label), metric="kappa", threshold=1.0)
    est = ctx.evaluate(call, "real", "s1")
    assert "every call matches its label (kappa = 1 on these data)" in est.undefined


def test_an_imperfect_auroc_keeps_its_estimate():
    label = np.tile([0, 1], 20)
    score = label * 1.0 + np.random.default_rng(1).normal(0, 0.8, 40)
    ctx, call = _agreement(_labelled(score, label), metric="auroc", threshold=None)
    est = ctx.evaluate(call, "real", "s1")
    assert est.undefined is None and est.estimate == pytest.approx(roc_auc_score(label, score), abs=1e-12)
