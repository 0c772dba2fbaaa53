"""`where` on probe readings: select a probe's prompts by their attributes (template factors, table columns).

Before, `difference(probe_drift(up, measure: ita) where gender = "woman", ... where gender = "man")`
was E0464 (the same reading twice: `where` was dropped for probe readings) and a one-stratum probe
claim did not exist. The runtime writes each prompt's attributes (tables/probe_prompts.parquet) and
the statistics keep the selected prompts only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from scoreaudit import api
from scoreaudit.compiler.ir import ProbeIR, PluginCall
from scoreaudit.runtime.probe import prompt_rows
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import evaluate_cells

HEAD = '''audit "w" {{ seed: 3  bootstrap: 400  correction: none }}
scorer pick = pickscore(prompt: "a photo")
probe up = reno(pick, pipeline: "sd", prompts: {prompts}, iterations: 2, seeds: 0..1, measures: [ita])
hypothesis W "t" {{
{claims}
}}
'''
TEMPLATE = 'template("a photo of a {gender} {job}", gender: ["man", "woman"], job: ["doctor", "nurse", "chef"])'
CLAIMS = ('  difference(probe_drift(up, measure: ita) where gender = "woman", '
          'probe_drift(up, measure: ita) where gender = "man") > 0\n'
          '  probe_drift(up, measure: ita) where gender = "woman" > 0\n'
          '  probe_drift(up, measure: ita) where gender = "man" where job = "chef" < 10\n')


def _check(claims=CLAIMS, prompts=TEMPLATE):
    return api.check("w.audit", source=HEAD.format(prompts=prompts, claims=claims), tables=False)


def test_where_on_probe_readings_compiles_into_cells_of_their_own():
    c = _check()
    assert c.ok, [d.message for d in c.diagnostics]
    ids = [x.id for x in c.ir.cells()]
    assert ids == ["W.1/pick/up", "W.2/pick/up@gender=woman", "W.3/pick/up@gender=man@job=chef"]
    reads = c.ir.cells()[0].statistic.params["readings"]
    assert [r["statistic"]["params"]["where"] for r in reads] == [[["gender", "woman"]], [["gender", "man"]]]


def test_unknown_factors_levels_and_plain_lists_are_located_errors():
    bad = _check('  probe_drift(up, measure: ita) where gendr = "woman" > 0\n')
    assert [d.code for d in bad.diagnostics if d.severity == "error"] == ["E0465"]
    bad = _check('  probe_drift(up, measure: ita) where gender = "wman" > 0\n')
    assert [d.code for d in bad.diagnostics if d.severity == "error"] == ["E0466"]
    bad = _check('  probe_drift(up, measure: ita) where gender = "woman" > 0\n', prompts='"prompts.txt"')
    assert [d.code for d in bad.diagnostics if d.severity == "error"] == ["E0465"]
    same = _check('  difference(probe_drift(up, measure: ita) where gender = "woman", '
                  'probe_drift(up, measure: ita) where gender = "woman") > 0\n')
    assert [d.code for d in same.diagnostics if d.severity == "error"] == ["E0464"]


def _tables(ir, rng):
    """Women's prompts drift by +3 ITA degrees, men's by 0; the prompts' attributes as the runtime writes them."""
    probe = ir.probes["up"]
    attrs = pd.DataFrame(prompt_rows(probe, spec_dir=__import__("pathlib").Path(".")))
    rows, per = [], {}
    for cluster, g in attrs.groupby("cluster"):
        a = dict(zip(g["column"], g["value"]))
        prompt = g["prompt"].iloc[0]
        for seed in (0, 1):
            first = rng.normal(30, 5)
            last = first + (3.0 if a["gender"] == "woman" else 0.0) + rng.normal(0, 1)
            per.setdefault(cluster, []).append(last - first)
            for it, v in ((0, first), (2, last)):
                rows.append({"probe": "up", "scorer": "pick", "prompt": prompt, "cluster": cluster, "seed": seed,
                             "iteration": it, "measure": "ita", "label": "", "value": v})
    return {"probe": pd.DataFrame(rows), "probe_prompts": attrs}, {c: float(np.mean(v)) for c, v in per.items()}, attrs


def test_the_selected_prompts_alone_make_the_reading():
    ir = _check().ir
    tables, per, attrs = _tables(ir, np.random.default_rng(5))
    cells = {c["id"]: c for c in evaluate_cells(StatContext(ir, tables), ir.cells())}
    wide = attrs.pivot(index="cluster", columns="column", values="value")
    women = [per[c] for c in wide.index[wide["gender"] == "woman"]]
    men = [per[c] for c in wide.index[wide["gender"] == "man"]]
    chef_men = [per[c] for c in wide.index[(wide["gender"] == "man") & (wide["job"] == "chef")]]
    assert abs(cells["W.2/pick/up@gender=woman"]["estimate"] - np.mean(women)) < 1e-9
    assert abs(cells["W.1/pick/up"]["estimate"] - (np.mean(women) - np.mean(men))) < 1e-9
    assert cells["W.3/pick/up@gender=man@job=chef"]["undefined"]  # one prompt: fewer than two clusters
    assert len(chef_men) == 1
    assert cells["W.1/pick/up"]["outcome"] == "supported" and cells["W.2/pick/up@gender=woman"]["outcome"] == "supported"


def test_a_value_no_prompt_has_is_undefined_with_the_reason():
    ir = _check('  probe_drift(up, measure: ita) where gender = "woman" > 0\n').ir
    tables, _, attrs = _tables(ir, np.random.default_rng(1))
    tables["probe_prompts"] = attrs[attrs["value"] != "woman"]
    c, = evaluate_cells(StatContext(ir, tables), ir.cells())
    assert c["outcome"] == "inconclusive" and "no prompt of probe up has gender = 'woman'" in c["undefined"]


def test_prompt_attributes_come_from_template_factors_and_table_columns(tmp_path):
    (tmp_path / "p.csv").write_text("prompt,region,style\na face,north,photo\na hand,south,painting\n")
    probe = ProbeIR(name="up", call=PluginCall(plugin="reno", version="1", params={"prompts": "p.csv"}),
                    scorer="pick", measures=())
    got = prompt_rows(probe, tmp_path)
    assert [(r["cluster"], r["column"], r["value"]) for r in got] == [
        ("p0000", "region", "north"), ("p0000", "style", "photo"), ("p0001", "region", "south"),
        ("p0001", "style", "painting")]
    (tmp_path / "p.txt").write_text("a face\na hand\n")
    probe = probe.model_copy(update={"call": PluginCall(plugin="reno", version="1", params={"prompts": "p.txt"})})
    assert prompt_rows(probe, tmp_path) == []
