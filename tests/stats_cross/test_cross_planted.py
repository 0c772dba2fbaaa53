"""Planted truths through the StatContext: factor effects, null calibration, pairs preference."""

import itertools

import numpy as np
import pandas as pd
import pytest

from scoreaudit.compiler.ir import ORIGINAL, ArmIR, AuditIR, PluginCall, ScorerIR, Settings, StatCallIR
from scoreaudit.stats import cross_estimators  # noqa: F401  (registers the estimators)
from scoreaudit.stats.context import StatContext


def _ir(n_boot=200, seed=1):
    return AuditIR(
        settings=Settings(title="t", seed=seed, bootstrap=n_boot),
        scorers={"s": ScorerIR(name="s", call=PluginCall(plugin="planted", version="1"))},
        arms={
            "cf": ArmIR(name="cf", call=PluginCall(plugin="images", version="1", params={"folder": "x"}),
                        source="images", cluster="set_id", factors=("race", "gender")),
            "wide": ArmIR(name="wide", call=PluginCall(plugin="pairs", version="1", params={"manifest": "m"}),
                          source="pairs"),
        },
        regions={}, measures={}, operators={},
    )


def _cf_tables(effect, seed, n_sets=30):
    rng = np.random.default_rng(seed)
    images, scores = [], []
    for s in range(n_sets):
        b = rng.normal()
        for race, gender in itertools.product(["A", "B", "C"], ["f", "m"]):
            iid = f"s{s}_{race}_{gender}"
            images.append({"arm": "cf", "image_id": iid, "cluster": f"s{s}", "race": race, "gender": gender})
            scores.append({"arm": "cf", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": "s",
                           "score": b + effect * (race == "B") + rng.normal(0, 0.5)})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


def _call(name, **params):
    return StatCallIR(name=name, version="1", params=params)


def test_planted_factor_effect_recovered_with_sign_and_size():
    ctx = StatContext(_ir(), _cf_tables(effect=1.0, seed=0))
    gap = ctx.evaluate(_call("group_gap", factor="race", a="B", b="A"), "cf", "s")
    # z-scoring over the whole arm: the planted 1.0 raw gap becomes 1.0 / sd(score) in SD units
    sd = np.std(ctx.original_scores("cf", "s"), ddof=1)
    assert gap.estimate == pytest.approx(1.0 / sd, abs=0.25 / sd)
    fe = ctx.evaluate(_call("factor_effect", factor="race", model="race * gender"), "cf", "s")
    assert fe.p_greater(0.0) < 1e-6
    assert fe.estimate == pytest.approx(abs(gap.estimate), rel=0.35)


def test_zero_factor_effect_is_rarely_significant():
    from statsmodels.stats.multitest import multipletests

    ps = []
    for seed in range(40):
        ctx = StatContext(_ir(n_boot=10), _cf_tables(effect=0.0, seed=100 + seed))
        ps.append(ctx.evaluate(_call("factor_effect", factor="race", model="race * gender"), "cf", "s").p_greater(0.0))
    reject = multipletests(ps, alpha=0.05, method="fdr_bh")[0]
    assert reject.sum() <= 2  # FDR 5% across 40 null tests: a false discovery is rare
    assert np.mean(np.array(ps) < 0.05) <= 0.15  # nominal 5% per test, with binomial slack for 40 draws


def test_pairs_prefer_other_gives_accuracy_below_half():
    rng = np.random.default_rng(5)
    images, scores = [], []
    for k in range(80):
        b = rng.normal()
        for side, bonus in (("preferred", 0.0), ("other", 1.0)):
            iid = f"p{k}:{side}"
            images.append({"arm": "wide", "image_id": iid, "cluster": f"p{k}", "side": side, "pair_id": f"p{k}"})
            scores.append({"arm": "wide", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": "s",
                           "score": b + bonus + rng.normal(0, 0.3)})
    ctx = StatContext(_ir(), {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)})
    acc = ctx.evaluate(_call("pairwise_accuracy"), "wide", "s")
    lo, hi = acc.interval(0.90)
    assert acc.estimate < 0.2 and hi < 0.5
    gap = ctx.evaluate(_call("mean_gap"), "wide", "s")
    assert gap.estimate < 0
