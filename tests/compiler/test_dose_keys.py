"""One definition of "the same dose" (compiler/doses.py), used everywhere doses are compared."""

from __future__ import annotations

import random
import re
from pathlib import Path

import numpy as np

from scoreaudit.compiler.doses import DOSE_DECIMALS, dose_key, dose_keys, is_dose, same_dose

SRC = Path(__file__).resolve().parents[2] / "src" / "scoreaudit"


def test_float_noise_is_one_dose_and_distinct_doses_stay_distinct():
    assert same_dose(0.1 + 0.2, 0.3) and dose_key(0.1 + 0.2) == 0.3
    assert same_dose(-0.0, 0.0)
    assert not same_dose(5.0, 5.000001)
    assert not same_dose(1e-8, 0.0) and same_dose(1e-10, 0.0)
    assert list(is_dose([0.3, 0.1 + 0.2, 0.30001, float("nan")], 0.3)) == [True, True, False, False]


def test_scalar_and_column_keys_agree_everywhere():
    """A key made from an IR dose must find the key made from a table column (same rounding)."""
    rng = random.Random(3)
    xs = [rng.uniform(-1000, 1000) for _ in range(20000)]
    xs += [(rng.randint(-10**8, 10**8) + 0.5) / 10**DOSE_DECIMALS for _ in range(20000)]  # exact ties
    xs += [rng.randint(-10**12, 10**12) / 1e9 for _ in range(20000)]
    xs += [rng.uniform(-1, 1) * 10.0 ** rng.randint(-14, 20) for _ in range(20000)]
    xs += [float("nan"), float("inf"), -float("inf"), 1e300, -1e300, 5e-324]
    col = dose_keys(xs)
    one = np.array([dose_key(x) for x in xs])
    same = (col == one) | (np.isnan(col) & np.isnan(one))
    assert same.all(), [(x, a, b) for x, a, b, s in zip(xs, col, one, same) if not s][:5]


def test_keys_match_numpy_rounding_to_the_declared_decimals():
    x = np.array([2.675, 0.1 + 0.2, -7.0000000004, 1.23456789012])
    assert (dose_keys(x) == np.round(x, DOSE_DECIMALS)).all()


def test_no_other_module_rounds_or_tolerates_doses_itself():
    """`round(x, 9)`, `.round(9)` and `isclose(.., 1e-9)` on doses were written ~15 times; now only here."""
    pattern = re.compile(r"round\([^()]*(?:\([^()]*\))?[^()]*,\s*9\)|\.round\(9\)|isclose\([^)]*dose")
    found = [f"{p.relative_to(SRC)}:{i}: {line.strip()}"
             for p in sorted(SRC.rglob("*.py")) if p.name != "doses.py"
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not found, "\n".join(found)
