"""Ties in rankings (spec/methods.md, "Ties"): no result depends on ids, file names or row order.

References: brute-force enumeration of every order of the tied images (the credit is the share of
orders that put a human-best image in the scorer's top k), scipy's binomial test, and renamed ids.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scoreaudit.stats import cross
from scoreaudit.stats.bootstrap import count_matrix
from scoreaudit.stats.engine import tie_warnings


def _brute_credit(scores, ranks, k: int, worst: bool) -> float:
    """Share of all orders of the images (ties broken every possible way) whose pick hits a target."""
    s = np.asarray(scores, float) * (-1 if worst else 1)
    r = np.asarray(ranks, float)
    targets = r == (r.max() if worst else r.min())
    hits = total = 0
    for perm in itertools.permutations(range(len(s))):  # perm = a tie-breaking priority per image
        order = sorted(range(len(s)), key=lambda i: (-s[i], perm[i]))
        hits += bool(targets[order[:k]].any())
        total += 1
    return hits / total


def _quarter_table(seed: int, n_clusters: int = 30, size: int = 5) -> pd.DataFrame:
    """Scores in quarters (real data's coarse scale): many ties inside clusters and at the boundary."""
    rng = np.random.default_rng(seed)
    rows = []
    for c in range(n_clusters):
        human = rng.permutation(size) + 1
        if c % 4 == 0:
            human[1] = human[0]  # a human-rank tie
        for j in range(size):
            score = np.round(4 * (rng.normal() - 0.3 * human[j] / size)) / 4
            rows.append({"prompt": f"p{c:02d}", "image_id": f"p{c:02d}_{j}", "score": float(score),
                         "human_rank": int(human[j])})
    return pd.DataFrame(rows)


def _renamed(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    """The same data with every id renamed at random and the rows shuffled (as renaming files would)."""
    rng = np.random.default_rng(seed)
    names = {i: f"img_{rng.integers(1e9):09d}" for i in df["image_id"]}
    out = df.assign(image_id=df["image_id"].map(names))
    return out.iloc[rng.permutation(len(out))].sort_values("image_id", kind="stable").reset_index(drop=True)


@pytest.mark.parametrize("worst", [False, True])
@pytest.mark.parametrize("k", [1, 2])
def test_credit_is_the_share_of_tie_orders_that_pick_a_target(k, worst):
    df = _quarter_table(1, n_clusters=12, size=5)
    est = cross.ranked_recall(df, "human_rank", "prompt", k=k, worst=worst)
    brute = [_brute_credit(g["score"], g["human_rank"], k, worst) for _, g in df.groupby("prompt")]
    assert est.estimate == pytest.approx(np.mean(brute), abs=1e-12)
    assert est.detail["hits"] == pytest.approx(sum(brute), abs=1e-12)
    assert 0 < est.detail["tie_share"] <= 1


@pytest.mark.parametrize("worst", [False, True])
def test_renaming_and_reordering_files_leaves_the_result_identical(worst):
    """Before: ties went to the first image id, so renaming files moved the recall."""
    df = _quarter_table(2)
    base = cross.ranked_recall(df, "human_rank", "prompt", k=1, worst=worst)
    for seed in range(5):
        again = cross.ranked_recall(_renamed(df, seed), "human_rank", "prompt", k=1, worst=worst)
        assert again.estimate == base.estimate
        assert again.p_greater(0.3) == base.p_greater(0.3)
        assert again.interval(0.9) == base.interval(0.9)


def test_small_set_that_renaming_flipped_from_0_to_1():
    """Two images tied on score, one human-best: the credit is 1/2 whatever the file names."""
    a = pd.DataFrame({"prompt": ["x", "x"], "image_id": ["a", "b"], "score": [0.5, 0.5], "human_rank": [2, 1]})
    b = a.assign(image_id=["b", "a"])
    for df in (a, b):
        assert cross.ranked_recall(df, "human_rank", "prompt", k=1, worst=False).estimate == 0.5


def test_human_rank_ties_make_every_tied_best_a_correct_pick():
    df = pd.DataFrame({"prompt": ["x"] * 3 + ["y"] * 3, "image_id": list("abcdef"),
                       "score": [0.9, 0.2, 0.1, 0.1, 0.2, 0.9], "human_rank": [1, 1, 3, 1, 2, 1]})
    est = cross.ranked_recall(df, "human_rank", "prompt", k=1, worst=False)
    assert est.estimate == 1.0  # x: the top image is one of two tied best; y: likewise
    assert est.detail["human_tied_clusters"] == 2


def test_the_test_is_the_binomial_test_averaged_over_tie_orders():
    df = _quarter_table(3, n_clusters=10, size=4)
    est = cross.ranked_recall(df, "human_rank", "prompt", k=1, worst=False)
    credits = [_brute_credit(g["score"], g["human_rank"], 1, False) for _, g in df.groupby("prompt")]
    # enumerate every combination of hit/miss of the tied clusters (independent across clusters)
    expected = 0.0
    frac = [c for c in credits if 0 < c < 1]
    fixed = sum(c for c in credits if c == 1)
    for outcome in itertools.product([0, 1], repeat=len(frac)):
        w = math.prod(c if o else 1 - c for c, o in zip(frac, outcome))
        expected += w * stats.binomtest(int(fixed + sum(outcome)), len(credits), 0.25,
                                        alternative="greater").pvalue
    assert est.p_greater(0.25) == pytest.approx(expected, rel=1e-10)


def test_mean_rank_is_the_average_rank_and_does_not_depend_on_ids():
    rows = []
    rng = np.random.default_rng(5)
    for c in range(20):
        for g in ("a", "b", "c"):
            rows.append({"set": f"s{c}", "g": g, "image_id": f"s{c}{g}",
                         "score": float(np.round(2 * rng.normal() + (g == "a")) / 2)})
    df = pd.DataFrame(rows)
    order = sorted(df["set"].unique())
    W = count_matrix(np.random.default_rng(0), 100, len(order))
    est = cross.mean_rank(df, "g", "a", "set", W, order)
    # reference: by hand, ties share the average of the places they occupy
    ref = []
    for _, grp in df.groupby("set"):
        s = grp["score"].to_numpy()
        a = s[grp["g"].to_numpy() == "a"][0]
        ref.append(1 + (s > a).sum() + ((s == a).sum() - 1) / 2)
    assert est.estimate == pytest.approx(np.mean(ref), abs=1e-12)
    again = cross.mean_rank(_renamed(df.rename(columns={"set": "prompt"}), 1).rename(columns={"prompt": "set"}),
                            "g", "a", "set", W, order)
    assert again.estimate == est.estimate
    assert est.detail["tie_share"] > 0


def test_single_image_clusters_cannot_be_ranked_and_are_named():
    df = pd.DataFrame({"set": ["s1", "s2", "s3", "s3"], "g": ["a", "a", "a", "b"], "score": [1.0, 2.0, 3.0, 1.0]})
    order = ["s1", "s2", "s3"]
    W = count_matrix(np.random.default_rng(0), 50, 3)
    est = cross.mean_rank(df, "g", "a", "set", W, order)
    assert est.undefined and "two or more scored images" in est.undefined
    assert est.detail["dropped"] == ["s1", "s2"]


def test_many_ties_warn_w0422():
    df = _quarter_table(4)
    df = df.assign(score=np.round(df["score"]))  # whole units: most clusters tie at the top
    est = cross.ranked_recall(df, "human_rank", "prompt", k=1, worst=False)
    cell = {"id": "H1.1", "statistic": "recall_best", "arm": "real", "scorer": "s", "detail": dict(est.detail)}
    w = tie_warnings([cell])
    assert est.detail["tie_share"] > 0.2 and [x["code"] for x in w] == ["W0422"]
    assert tie_warnings([{**cell, "detail": {**cell["detail"], "tie_share": 0.1}}]) == []
