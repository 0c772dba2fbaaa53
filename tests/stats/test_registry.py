"""One registry entry per statistic: every entry is complete, its estimator and truth import, failures are loud."""

from __future__ import annotations

import dataclasses

import pytest

from scoreaudit import registry
from scoreaudit.plugins.statistics import NEEDS, READS, REQUIRED, SIGNS
from scoreaudit.stats.estimate import EstimatorMissing, estimator_for, resolve

registry.load_plugins()
ENTRIES = list(registry.statistics)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.name)
def test_every_statistic_entry_is_complete(entry):
    meta = entry.meta
    for key in REQUIRED:
        assert key in meta, f"{entry.name}: missing {key}"
    assert meta["sign"] in SIGNS and set(meta["reads"]) <= set(READS) and set(meta["needs"]) <= set(NEEDS)
    assert meta["null"] is None or isinstance(meta["null"], float)
    assert meta["words"] and entry.summary
    assert callable(estimator_for(entry.name))
    if meta["truth"] is None:
        assert meta.get("truth_note"), f"{entry.name}: no simulate truth and no reason given"
    else:
        assert callable(resolve(meta["truth"], entry.name))
    if meta.get("returns") == "claim" or meta.get("validation"):
        assert meta["null"] is None


def test_nulls_follow_the_kind_of_statistic():
    null = {e.name: e.meta["null"] for e in ENTRIES}
    assert null["fidelity_index"] == null["asymmetry"] == null["net_drift"] == null["spearman"] == 0.0
    assert null["pairwise_accuracy"] == 0.5 and null["placebo_ratio"] == 1.0
    assert null["transfers"] is None and null["mean_rank"] is None


def test_a_broken_estimator_fails_loudly(monkeypatch):
    entry = registry.statistics.get("asymmetry")
    broken = dataclasses.replace(entry, meta={**entry.meta, "estimator": "scoreaudit.stats.no_such_module:f"})
    monkeypatch.setitem(registry.statistics._entries, "asymmetry", broken)
    from scoreaudit.stats import estimate

    monkeypatch.delitem(estimate._ESTIMATORS, "asymmetry", raising=False)
    with pytest.raises(EstimatorMissing, match="no_such_module"):
        estimator_for("asymmetry")
    with pytest.raises(EstimatorMissing, match="not declared"):
        estimator_for("no_such_statistic")


def test_a_broken_estimator_is_not_an_undefined_cell(monkeypatch, skin_ir):
    from scoreaudit.compiler.ir import StatCallIR
    from scoreaudit.stats import estimate
    from scoreaudit.stats.context import StatContext
    from scoreaudit.stats.planted import ArmShape, planted_tables

    entry = registry.statistics.get("asymmetry")
    monkeypatch.setitem(registry.statistics._entries, "asymmetry",
                        dataclasses.replace(entry, meta={**entry.meta, "estimator": "scoreaudit.stats.dose:nope"}))
    monkeypatch.delitem(estimate._ESTIMATORS, "asymmetry", raising=False)
    tables = planted_tables(skin_ir, {"real": ArmShape(5, 1)}, {}, seed=1)
    ctx = StatContext(skin_ir, tables)
    with pytest.raises(EstimatorMissing):
        ctx.evaluate(StatCallIR(name="asymmetry", version="1", params={"operator": "light"}), "real", "laion")


def test_reads_come_from_the_registry(skin_ir):
    from scoreaudit.compiler.ir import ORIGINAL
    from scoreaudit.compiler.reads import reads

    by_hyp = {c.hypothesis: c.statistic for c in skin_ir.cells()}
    assert reads(by_hyp["H1"], skin_ir).operators == ("light",)
    assert reads(by_hyp["H3"], skin_ir).operators == ("light", "light_rest")
    r = reads(by_hyp["H5"], skin_ir)
    assert r.operators == ("light",) and r.measures == (("light", "ita"),) and r.selections == ("best4",)
    assert reads(by_hyp["H4"], skin_ir).operators == ("light",)  # what the nested asymmetry reads
    from scoreaudit.compiler.ir import StatCallIR

    assert reads(StatCallIR(name="spearman", version="1", params={"column": "x"}), skin_ir).operators == (ORIGINAL,)


def test_results_and_report_use_one_sentence():
    from scoreaudit.reports.sentences import cell_sentence as report_sentence
    from scoreaudit.stats.sentences import cell_sentence

    cell = {"arm": "real", "scorer": "pick", "statistic": "pairwise_accuracy", "estimate": 0.61, "ci_low": 0.55,
            "ci_high": 0.66, "ci_level": 0.9, "p": 0.01, "q": 0.02, "outcome": "supported",
            "claim_text": "pairwise_accuracy() > 0.5"}
    text = cell_sentence(cell)
    assert text == report_sentence(cell) == report_sentence({**cell, "sentence": text})
    assert report_sentence({**cell, "estimate": 0.7}) != text  # built from the numbers, not a stored string
    assert "pairwise accuracy is 0.610" in text  # registry words; unsigned: no plus sign
    stress = cell_sentence({**cell, "qualifier": "stress-test-only"})
    assert stress.endswith("(claim: pairwise_accuracy() > 0.5; stress test, not a bias measurement): supported.")
