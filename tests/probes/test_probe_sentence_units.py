"""Probe sentences name the measure and its unit (registry meta `unit`), like every other cell (issue 32).

Before: "Under probe up, pick's probe drift is +3.01 [...]" with neither the measure nor its unit.
"""

from __future__ import annotations

import re

from scoreaudit import api, numfmt
from scoreaudit.registry import load_plugins
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import evaluate_cells
from scoreaudit.stats.probes import planted_probe_table

SPEC = '''audit "Probe units" { seed: 3  bootstrap: 200  test: ttest }
scorer pick = pickscore(prompt: "a photo")
probe up = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 2, seeds: 0..2,
                measures: [ita, skin_exposure, clip_attribute(labels: ["man", "woman"])])
probe down = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 2, seeds: 0..2, direction: minimize,
                  measures: [ita, skin_exposure, clip_attribute(labels: ["man", "woman"])])
hypothesis P "t" {
  probe_drift(up, measure: ita) > 0
  probe_drift(up, measure: skin_exposure) > 0
  probe_drift(up, measure: score) > 0
  probe_shift(up, label: "woman") > 0
  difference(probe_drift(up, measure: ita), probe_drift(down, measure: ita)) > 0
}
'''


def _cells():
    c = api.check("t.audit", source=SPEC, tables=False)
    assert c.ok, [d.message for d in c.diagnostics]
    truth = {"up": {"probe_drift": 3.0, "probe_shift": 0.25, "noise": 0.5}, "down": {"probe_drift": -1.0}}
    ctx = StatContext(c.ir, {"probe": planted_probe_table(c.ir, truth, seed=2)})
    return {cell["id"].split("/")[0]: cell for cell in evaluate_cells(ctx, c.ir.cells())}


def test_probe_sentences_name_the_measure_and_its_declared_unit():
    cells = _cells()
    reg = load_plugins(entry_points=False)["probe_measure"]
    assert reg.get("ita").meta["unit"] == "degrees" and reg.get("skin_exposure").meta["unit"] == "share"
    ita = cells["P.1"]
    assert ita["estimate"] > 2.5  # the planted drift of 3 is recovered
    assert ita["sentence"].startswith(
        f"Under probe up, pick's ita drifts by {numfmt.signed(ita['estimate'])}\u00b0 "
        f"{numfmt.ci(ita['ci_low'], ita['ci_high'])} (")
    assert "from the first to the last iteration, p " in ita["sentence"]
    skin = cells["P.2"]["sentence"]
    assert f"pick's skin_exposure drifts by {numfmt.signed(cells['P.2']['estimate'])} share " in skin
    assert f"pick's score drifts by {numfmt.signed(cells['P.3']['estimate'])} score units " in cells["P.3"]["sentence"]
    shift = cells["P.4"]
    assert (f"pick's share of images labelled 'woman' (clip_attribute) moves by "
            f"{numfmt.signed(shift['estimate'])} share ") in shift["sentence"]
    for cell in (cells["P.1"], cells["P.2"], cells["P.3"], cells["P.4"]):
        assert "probe drift is" not in cell["sentence"] and cell["sentence"].endswith(f": {cell['outcome']}.")


def test_a_difference_of_probe_readings_is_in_the_measure_unit():
    d = _cells()["P.5"]
    assert d["estimate"] > 3.0  # +3 minus −1
    assert re.search(r"pick's probe drift of ita under up minus that under down is \+[0-9.]+\u00b0 \[", d["sentence"]), \
        d["sentence"]
