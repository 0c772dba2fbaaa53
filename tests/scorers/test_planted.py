"""Planted scorers: their output must carry exactly the truth spec/methods.md documents."""

from __future__ import annotations

import hashlib
import json
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats

from scoreaudit.plugins.base import ScoreItem, ScoreUnavailableForItem
from scoreaudit.plugins.scorers.planted import Planted, PlantedParams, hashed_normal
from scoreaudit.registry import load_plugins, operators



def item(image_id="img", operator="original", dose=0.0, u=0.0, placebo=False, row=None,
         measures=None, side=None, arm="a") -> ScoreItem:
    return ScoreItem(arm=arm, image_id=image_id, operator=operator, dose=dose, u=u, placebo=placebo,
                     row=row or {}, measures=measures or {}, side=side)

IMAGES = [f"img{k:03d}" for k in range(40)]


def dose_set(identity: float, lo: float, hi: float) -> tuple[list[float], bool]:
    """Three steps each way the operator's range allows; symmetric when both ways do."""
    down, up = identity - lo, hi - identity
    if down > 0 and up > 0:
        t = min(down, up, 20.0 if abs(identity) >= 1 or down > 1 else down)
        return [identity + f * t for f in (-1, -2 / 3, -1 / 3, 0, 1 / 3, 2 / 3, 1)], True
    t = up if up > 0 else -down
    return [identity + f * t for f in (0, 1 / 3, 2 / 3, 1)], False


def u_of(d: float, identity: float, doses: list[float]) -> float:
    return (d - identity) / max(abs(x - identity) for x in doses)


def scores_under(scorer: Planted, op: str, doses, identity, placebo=False) -> dict[float, np.ndarray]:
    """Per dose, the score change Δ(i, d) = s(i, d) − s(i, d0) for every image."""
    out = {}
    base = scorer.score(None, None, [item(i) for i in IMAGES])
    for d in doses:
        if d == identity:
            items = [item(i) for i in IMAGES]  # the identity dose is the unaltered image
        else:
            items = [item(i, op, d, u_of(d, identity, doses), placebo) for i in IMAGES]
        out[d] = scorer.score(None, None, items) - base
    return out


def builtin_operators():
    load_plugins()
    return [(e.name, e.meta["identity"], *e.meta["dose_range"]) for e in operators]


@pytest.mark.parametrize("name,identity,lo,hi", builtin_operators())
@pytest.mark.parametrize("placebo", [False, True])
def test_truth_on_every_builtin_operator(name, identity, lo, hi, placebo):
    F, A, P = 0.8, 0.3, 0.25
    scorer = Planted(PlantedParams(fidelity=F, asymmetry=A, placebo=P, seed=11))
    doses, symmetric = dose_set(identity, lo, hi)
    delta = scores_under(scorer, name, doses, identity, placebo)
    gain = P if placebo else 1.0
    for d in doses:  # the fidelity curve, exactly: c(d) = −F·u² + A·u (scaled for placebos)
        u = u_of(d, identity, doses)
        np.testing.assert_allclose(delta[d], gain * (-F * u * u + A * u), atol=1e-12)
    if symmetric:  # spec/methods.md: FI = −mean_i mean_t E_i(t), A = mean_i mean_t O_i(t)
        mid = doses.index(identity)  # doses are listed −t3 … 0 … +t3, so k pairs ±t_k
        pairs = [(doses[mid + k], doses[mid - k]) for k in range(1, mid + 1)]
        even = np.mean([(delta[hi_] + delta[lo_]) / 2 for hi_, lo_ in pairs], axis=0)
        odd = np.mean([(delta[hi_] - delta[lo_]) / 2 for hi_, lo_ in pairs], axis=0)
        us = [u_of(d, identity, doses) for d in doses]
        true_fi = F * np.mean([u * u for u in us if u != 0])
        true_asym = A * np.mean([abs(u) for u in us if u > 0])
        assert -even.mean() == pytest.approx(gain * true_fi, abs=1e-12)
        assert odd.mean() == pytest.approx(gain * true_asym, abs=1e-12)


def test_some_builtin_operators_have_symmetric_doses():
    assert sum(dose_set(i, lo, hi)[1] for _, i, lo, hi in builtin_operators()) >= 3


def test_base_is_standard_normal_and_stable():
    b = Planted(PlantedParams(seed=5)).score(None, None, [item(f"x{k}") for k in range(3000)])
    assert stats.kstest(b, "norm").pvalue > 0.01
    again = Planted(PlantedParams(seed=5)).score(None, None, [item("x0")])
    assert again[0] == b[0]
    other_seed = Planted(PlantedParams(seed=6)).score(None, None, [item("x0")])
    assert other_seed[0] != b[0]


def test_hashed_normal_is_sha256_through_the_normal_quantile():
    key = ["b", "img7", 3]
    digest = hashlib.sha256(json.dumps(key, separators=(",", ":")).encode()).digest()
    u = ((int.from_bytes(digest[:8], "big") >> 11) + 0.5) / 2**53
    assert hashed_normal(*key) == NormalDist().inv_cdf(u)


def test_noise_has_the_declared_sd_and_is_per_dose():
    S = 0.5
    quiet = Planted(PlantedParams(seed=2))
    noisy = Planted(PlantedParams(noise=S, seed=2))
    items = [item(f"x{k}", "light", 5.0, 0.5) for k in range(4000)]
    eps = noisy.score(None, None, items) - quiet.score(None, None, items)
    assert eps.std() == pytest.approx(S, rel=0.05)
    assert abs(eps.mean()) < 4 * S / np.sqrt(len(eps))
    other_dose = [item(f"x{k}", "light", 10.0, 1.0) for k in range(4000)]
    eps2 = noisy.score(None, None, other_dose) - quiet.score(None, None, other_dose)
    assert abs(np.corrcoef(eps, eps2)[0, 1]) < 0.1


def test_slope_by_adds_k_times_measure_change():
    scorer = Planted(PlantedParams(slope_by="ita", slope=0.2, seed=1))
    plain = Planted(PlantedParams(seed=1))
    it = [item("a", "light", 5.0, 0.5, measures={"ita": 3.0}),
          item("b", "light", -5.0, -0.5, measures={"ita": -7.5})]
    np.testing.assert_allclose(scorer.score(None, None, it) - plain.score(None, None, it), [0.6, -1.5])


def test_undefined_measure_excludes_only_that_image():
    scorer = Planted(PlantedParams(slope_by="ita", slope=0.2))
    it = [item("a", "light", 5.0, 0.5, measures={"ita": 1.0}),
          item("b", "light", 5.0, 0.5, measures={"ita": float("nan")})]
    with pytest.raises(ScoreUnavailableForItem) as err:
        scorer.score(None, None, it)
    assert list(err.value.reasons) == [1] and "ita" in err.value.reasons[1]
    assert np.isfinite(err.value.scores[0]) and np.isnan(err.value.scores[1])


def test_factor_effect_matches_level_as_text():
    scorer = Planted(PlantedParams(factor="race", level="B", effect=0.7, seed=3))
    plain = Planted(PlantedParams(seed=3))
    rows = [{"race": "A"}, {"race": "B"}, {"race": " B "}, {}, {"race": None}]
    it = [item(f"i{k}", row=r) for k, r in enumerate(rows)]
    np.testing.assert_allclose(scorer.score(None, None, it) - plain.score(None, None, it),
                               [0, 0.7, 0.7, 0, 0])
    numeric = Planted(PlantedParams(factor="group", level="1", effect=1.0))
    it = [item("n1", row={"group": 1.0}), item("n2", row={"group": 2})]
    np.testing.assert_allclose(numeric.score(None, None, it) - Planted().score(None, None, it), [1.0, 0.0])


def _accuracy(scorer: Planted, n: int = 4000) -> float:
    # pair sides as the runtime names them: "<pair id>:<side>"
    pref = scorer.score(None, None, [item(f"p{k}:preferred", side="preferred") for k in range(n)])
    other = scorer.score(None, None, [item(f"p{k}:other", side="other") for k in range(n)])
    return float(np.mean((pref > other) + 0.5 * (pref == other)))


def test_pairs_default_accuracy_is_one_half():
    assert _accuracy(Planted(PlantedParams())) == 0.5  # both sides share b: all ties
    acc = _accuracy(Planted(PlantedParams(noise=1.0, seed=4)))
    assert abs(acc - 0.5) < 3 * np.sqrt(0.25 / 4000)


def test_pairs_prefer_gives_the_documented_accuracy():
    assert _accuracy(Planted(PlantedParams(prefer="preferred"))) == 1.0
    assert _accuracy(Planted(PlantedParams(prefer="other"))) == 0.0
    truth = NormalDist().cdf(1 / (1.0 * np.sqrt(2)))  # Φ(1 / (S√2)) with S = 1
    acc = _accuracy(Planted(PlantedParams(prefer="preferred", noise=1.0, seed=9)))
    assert abs(acc - truth) < 3 * np.sqrt(truth * (1 - truth) / 4000)


def test_original_image_ignores_u():
    scorer = Planted(PlantedParams(fidelity=5, asymmetry=5))
    a = scorer.score(None, None, [item("z", "original", 0.0, u=0.7)])
    b = Planted().score(None, None, [item("z")])
    assert a[0] == b[0]


def test_accepts_plain_dict_params():
    assert Planted({"fidelity": 1.0}).p.fidelity == 1.0


def test_pair_sides_share_the_base_whatever_the_id_convention():
    a = Planted().score(None, None, [item("7:preferred", side="preferred"), item("7:other", side="other"),
                                     item("7", side="preferred"), item("7")])
    assert a[0] == a[1] == a[2] == a[3]
