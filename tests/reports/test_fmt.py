"""The report's number format: 3 significant digits, p/q floors, undefined as an em dash."""

import math

import pytest

from scoreaudit.reports import fmt


@pytest.mark.parametrize("x, want", [
    (0.071234, "0.0712"), (1.0, "1.00"), (12.345, "12.3"), (123.45, "123"), (1234.6, "1,235"),
    (-0.5, "\u22120.500"), (0, "0"), (9.9996, "10.0"), (0.00012345, "0.000123"),
    (None, "\u2014"), (math.nan, "\u2014"), (math.inf, "\u2014"), (3.2e-7, "3.20\u00d710\u207b\u2077"),
])
def test_num(x, want):
    assert fmt.num(x) == want


def test_signed_and_ci():
    assert fmt.signed(0.0712) == "+0.0712"
    assert fmt.signed(-0.0712) == "\u22120.0712"
    assert fmt.ci(0.05, 0.0901) == "[0.0500, 0.0901]"
    assert fmt.ci(None, None) == "\u2014"


@pytest.mark.parametrize("p, want", [(0.0004, "< 0.001"), (0.001, "0.001"), (0.0123, "0.012"), (0.5, "0.50"),
                                     (1.0, "1"), (0.996, "1"), (0.994, "0.99"), (None, "\u2014")])
def test_pval(p, want):
    assert fmt.pval(p) == want


def test_peq():
    assert fmt.peq(0.0001, "q") == "q < 0.001"
    assert fmt.peq(0.04, "p") == "p = 0.040"
