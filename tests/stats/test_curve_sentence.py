"""A curve cell is one dose of one operator: its sentence names both (issue 19)."""

from scoreaudit.stats.sentences import cell_sentence


def _cell(dose):
    return {"statistic": "curve", "params": {"operator": "light", "dose": dose}, "estimate": -0.1,
            "ci_low": -0.2, "ci_high": 0.0, "ci_level": 0.9, "p": 0.01, "q": 0.02, "outcome": "supported",
            "arm": "real", "scorer": "laion"}


def test_curve_sentence_names_operator_and_dose():
    text = cell_sentence(_cell(-10.0))
    assert "of light at dose −10 " in text
    assert cell_sentence(_cell(5.0)) != text  # another dose, another sentence


def test_other_statistics_are_unchanged():
    cell = dict(_cell(-10.0), statistic="fidelity_index", params={"operator": "light"})
    assert "at dose" not in cell_sentence(cell)
