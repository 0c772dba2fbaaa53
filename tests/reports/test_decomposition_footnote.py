"""The decomposition footnote never prints a share its sentence calls undefined."""

from scoreaudit.reports.sections.comparisons import _shares_text


def _cell(observed_ci, undefined=None):
    return {"statistic": "share", "undefined": undefined,
            "detail": {"observed": 0.05, "observed_ci": observed_ci, "share_attribute": 1.74,
                       "share_confound": -0.744}}


def test_shares_are_not_printed_when_the_observed_gap_ci_includes_zero():
    """Before: 'attribute share 174%, confound −74.4%' under 'the share is undefined'."""
    c = _cell([-0.1, 0.2], undefined="the observed gap's CI [-0.1, 0.2] includes 0: there is no gap to share")
    text = _shares_text(c, c["detail"])
    assert "undefined" in text and "%" not in text and "174" not in text


def test_shares_are_printed_when_the_gap_is_there():
    c = _cell([0.02, 0.08])
    text = _shares_text(c, c["detail"])
    assert "174" in text and "74.4" in text
