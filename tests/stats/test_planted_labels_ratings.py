"""Planted labels, ratings and discrete scores (stats/planted.py) against their truths (stats/truth.py).

The calibration bench's agreement, correlation-with-clusters and tied-accuracy kinds rest on these truths, so
each is checked on one large planted draw against an independent computation: scikit-learn's
`roc_auc_score` / `cohen_kappa_score` / `f1_score`, scipy's `pearsonr` / `spearmanr` / `kendalltau`, and the
empirical share of right and tied pairs; tolerances are 4 Monte Carlo standard errors or less.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from scoreaudit.compiler.ir import ORIGINAL, StatCallIR
from scoreaudit.stats.planted import ArmShape, MeasureModel, planted_tables
from scoreaudit.stats.truth import TruthContext, true_value

from tests.stats_cross.test_comparisons import _ir


def _original(tables, arm, scorer="s1"):
    sc = tables["scores"]
    sc = sc[(sc["arm"] == arm) & (sc["operator"] == ORIGINAL) & (sc["scorer"] == scorer)]
    return tables["images"][tables["images"]["arm"] == arm].merge(sc[["image_id", "score"]], on="image_id")


def _call(name, **params):
    return StatCallIR(name=name, version="1", params=params)


def test_a_planted_rating_column_has_the_planted_correlation_and_cluster_share():
    ir = _ir()
    truth = {"*": {"noise": 0.5, "rated_by": "h", "rating": 0.6}}
    df = _original(planted_tables(ir, {"real": ArmShape(3000, 4)}, truth, seed=3), "real")
    tc = TruthContext(truth, "s1", "real")
    r = true_value(ir, _call("pearson", column="h"), tc)
    assert r == pytest.approx(0.6 / np.sqrt(1.25 + 0.36))
    # 3000 clusters: the SE of r is about (1 − r²)·sqrt(deff/n) < 0.01
    assert stats.pearsonr(df["score"], df["h"]).statistic == pytest.approx(r, abs=0.03)
    assert stats.spearmanr(df["score"], df["h"]).statistic == pytest.approx(
        true_value(ir, _call("spearman", column="h"), tc), abs=0.03)
    assert stats.kendalltau(df["score"], df["h"]).statistic == pytest.approx(
        true_value(ir, _call("kendall", column="h"), tc), abs=0.03)
    # the column is shared by every scorer (a manifest column) and half its variance is the cluster's
    assert df["h"].var() == pytest.approx(1.0, abs=0.05)
    icc = df.groupby("cluster")["h"].mean().var() - df.groupby("cluster")["h"].var().mean() / 4
    assert icc == pytest.approx(MeasureModel().rating_icc, abs=0.05)
    # a column the planted model does not rate by has no truth
    assert true_value(ir, _call("pearson", column="other"), tc) is None


@pytest.mark.parametrize("effect", [0.0, 0.7, 1.5])
def test_a_planted_label_gives_the_auroc_kappa_accuracy_and_f1_of_its_truth(effect):
    from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score, roc_auc_score

    ir = _ir()
    truth = {"*": {"noise": 0.5, "factor": "y", "level": "1", "effect": effect}}
    shape = ArmShape(20000, 1, {"y": ("0", "1")})
    df = _original(planted_tables(ir, {"real": shape}, truth, seed=5), "real")
    y = df["y"].astype(int).to_numpy()
    assert y.mean() == pytest.approx(0.5, abs=0.02)
    tc = TruthContext({**truth, "_levels": {"y": ("0", "1")}}, "s1", "real")
    auc = true_value(ir, _call("agreement", label="y", metric="auroc"), tc)
    assert roc_auc_score(y, df["score"]) == pytest.approx(auc, abs=0.02)
    calls = (df["score"] >= 1.0).astype(int)
    for metric, ref in (("kappa", cohen_kappa_score), ("accuracy", accuracy_score), ("f1", f1_score)):
        t = true_value(ir, _call("agreement", label="y", metric=metric, threshold=1.0), tc)
        assert ref(y, calls) == pytest.approx(t, abs=0.025), metric
    # the label is what the score tracks: another column, or several cut points, have no planted truth
    assert true_value(ir, _call("agreement", label="z", metric="auroc"), tc) is None
    assert true_value(ir, _call("agreement", label="y", metric="kappa", threshold=[0.0, 1.0]), tc) is None


@pytest.mark.parametrize("gap", [0.0, 1.0])
def test_discrete_pair_scores_tie_and_the_accuracy_truth_counts_ties_half(gap):
    ir = _ir()
    truth = {"*": {"noise": 0.5, "gap": gap, "step": 1.0}}
    tables = planted_tables(ir, {"wide": ArmShape(40000, 2)}, truth, seed=7)
    df = _original(tables, "wide")
    w = df.pivot(index="pair_id", columns="side", values="score")
    assert np.all(np.mod(df["score"], 1.0) == 0)  # whole units: a 1-unit score resolution
    ties = float(np.mean(w["preferred"] == w["other"]))
    assert 0.15 < ties < 0.3
    credit = np.mean(np.where(w["preferred"] > w["other"], 1.0, np.where(w["preferred"] == w["other"], 0.5, 0.0)))
    for raw in (True, False):
        tc = TruthContext(truth, "s1", "wide", raw=raw)
        assert credit == pytest.approx(true_value(ir, _call("pairwise_accuracy"), tc), abs=0.01)
        sd = 1.0 if raw else np.std(np.r_[w["preferred"], w["other"]], ddof=1)
        gap_hat = float(np.mean(w["preferred"] - w["other"]) / sd)
        assert gap_hat == pytest.approx(true_value(ir, _call("mean_gap"), tc), abs=0.035)  # 4 SE (0.008)
