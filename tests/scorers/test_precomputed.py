"""Precomputed scores: read from the manifest row, per side for pairs, bad cells excluded one by one."""

from __future__ import annotations

import numpy as np
import pytest

from scoreaudit.plugins.base import ScoreItem, ScorerUnavailable, ScoreUnavailableForItem
from scoreaudit.plugins.scorers.precomputed import Precomputed, PrecomputedParams, parse_score


def item(row, side=None, image_id="i") -> ScoreItem:
    return ScoreItem(arm="a", image_id=image_id, operator="original", dose=0.0, u=0.0, placebo=False,
                     row=row, measures={}, side=side)


def test_column_values_in_order():
    s = Precomputed(PrecomputedParams(column="human"))
    rows = [{"human": 3}, {"human": "2.5"}, {"human": np.float32(-1.25)}, {"human": " 7 "}]
    out = s.score(None, None, [item(r) for r in rows])
    np.testing.assert_array_equal(out, [3.0, 2.5, -1.25, 7.0])
    assert out.dtype == np.float64


def test_pairs_side_picks_the_column():
    s = Precomputed(PrecomputedParams(preferred="score_a", other="score_b"))
    row = {"score_a": 0.9, "score_b": 0.4}
    out = s.score(None, None, [item(row, "preferred"), item(row, "other")])
    np.testing.assert_array_equal(out, [0.9, 0.4])


@pytest.mark.parametrize("bad,why", [
    (float("nan"), "NaN"), (None, "not a number"), ("", "empty"), ("abc", "not a number"),
    (float("inf"), "not finite"), (True, "not a number"), ("nan", "NaN"),
])
def test_bad_cells_exclude_only_their_image(bad, why):
    s = Precomputed(PrecomputedParams(column="c"))
    with pytest.raises(ScoreUnavailableForItem) as err:
        s.score(None, None, [item({"c": 1.0}), item({"c": bad}), item({"c": 2.0})])
    e = err.value
    assert list(e.reasons) == [1] and why in e.reasons[1] and "'c'" in e.reasons[1]
    np.testing.assert_array_equal(e.scores[[0, 2]], [1.0, 2.0])
    assert np.isnan(e.scores[1])


def test_missing_column_and_wrong_arm_kind_are_per_item_reasons():
    col = Precomputed(PrecomputedParams(column="c"))
    with pytest.raises(ScoreUnavailableForItem) as err:
        col.score(None, None, [item({"x": 1}), item({"c": 1}, side="preferred")])
    assert "no column 'c'" in err.value.reasons[0]
    assert "preferred: A, other: B" in err.value.reasons[1]
    sides = Precomputed(PrecomputedParams(preferred="a", other="b"))
    with pytest.raises(ScoreUnavailableForItem) as err:
        sides.score(None, None, [item({"a": 1, "b": 2})])
    assert "column: NAME" in err.value.reasons[0]


@pytest.mark.parametrize("params", [{}, {"preferred": "a"}, {"column": "c", "other": "b"}])
def test_incomplete_parameters_say_what_to_write(params):
    with pytest.raises(ScorerUnavailable, match="precomputed"):
        Precomputed(PrecomputedParams(**params))


def test_parse_score_plain_numbers():
    assert parse_score(np.int64(4)) == 4.0 and parse_score("1e-3") == 0.001
