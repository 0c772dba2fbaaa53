"""A claim about one stratum: `fidelity_index(light) where race = "A" > 0 on real`.

Before, `where` existed only inside `difference(...)`/`ratio(...)`, so "the penalty holds for
Black faces" could not be pre-registered on its own (a syntax error). The cell is the statistic
on the arm restricted to the stratum (its own clusters and bootstrap): the same number as the
statistic computed on a table that holds only that stratum.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_comparisons import DOSES, FI, _ir

from scoreaudit import api
from scoreaudit.compiler.fmt import fmt_claim
from scoreaudit.compiler.ir import ORIGINAL, CellIR, TestIR as Claim
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import evaluate_cells

GREATER = Claim(kind="greater", threshold=0.0, text="fidelity_index(light) > 0")


def _tables(seed: int = 0, n_clusters: int = 100) -> dict:
    """Race A is penalised for edits (curvature 1), race B not at all."""
    rng = np.random.default_rng(seed)
    images, scores = [], []
    for c in range(n_clusters):
        iid, race = f"r{c}", "A" if c % 2 else "B"
        images.append({"arm": "real", "image_id": iid, "cluster": f"c{c}", "race": race})
        base, F = rng.normal(), 1.0 if race == "A" else 0.0
        for d in DOSES:
            v = base - F * (d / 10) ** 2 + rng.normal(0, 0.3)
            scores.append({"arm": "real", "image_id": iid, "operator": "light", "dose": d, "scorer": "s1", "score": v})
            if d == 0:
                scores.append({"arm": "real", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": "s1",
                               "score": v})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


def _cell(where) -> CellIR:
    return CellIR(id=f"H/s1/real@race={where}", hypothesis="H", claim=0, scorer="s1", arm="real", arms=("real",),
                  statistic=FI, test=GREATER, where=(("race", where),))


def test_a_stratum_cell_is_the_statistic_on_that_stratum_alone():
    tables = _tables()
    ir = _ir(n_boot=500)
    a, b = evaluate_cells(StatContext(ir, tables), [_cell("A"), _cell("B")])
    assert a["outcome"] == "supported" and b["outcome"] != "supported"
    assert a["sentence"].startswith("On real where race = A,")
    for cell, race in ((a, "A"), (b, "B")):
        keep = set(tables["images"].loc[tables["images"]["race"] == race, "image_id"])
        alone = {"images": tables["images"][tables["images"]["image_id"].isin(keep)],
                 "scores": tables["scores"][tables["scores"]["image_id"].isin(keep)]}
        ref = StatContext(ir, alone).evaluate(FI, "real", "s1")
        assert abs(cell["estimate"] - ref.estimate) < 1e-12
    whole = StatContext(ir, tables).evaluate(FI, "real", "s1").estimate
    assert abs(whole - a["estimate"]) > 0.1  # the stratum is not the whole arm


def test_an_empty_stratum_is_undefined_with_the_reason():
    c, = evaluate_cells(StatContext(_ir(n_boot=200), _tables(n_clusters=20)), [_cell("Z")])
    assert c["outcome"] == "inconclusive" and "no image of arm 'real' has race = 'Z'" in c["undefined"]


def test_stratum_claims_parse_format_and_expand_into_their_own_cells():
    src = ('audit "s" { seed: 1 }\nscorer a = laion_aesthetic()\n'
           'arm real = images("data/real", manifest: "data/real.csv", kind: real, strata: race)\n'
           'region skin = skin()\noperator light = lab_shift(channel: L, region: skin) doses -10..10 step 5\n'
           'hypothesis H "t" {\n  fidelity_index(light)   where race = "Black" > 0 on real\n'
           '  abs(fidelity_index(light) where race = "White" where age = 30) < 0.1 on real\n}\n')
    c = api.check("s.audit", source=src, tables=False)
    assert c.ok, [d.message for d in c.diagnostics]
    cells = c.ir.cells()
    assert [x.id for x in cells] == ["H.1/a/real@race=Black", "H.2/a/real@race=White@age=30"]
    assert cells[1].where == (("race", "White"), ("age", "30")) and cells[1].test.kind == "equivalence"
    from scoreaudit.grammar.parser import parse

    module, diags = parse(src)
    assert not diags
    hyp = next(d for d in module.decls if type(d).__name__ == "HypothesisDecl")
    claims = [fmt_claim(k) for k in hyp.claims]
    assert claims[0] == 'fidelity_index(light) where race = "Black" > 0 on real'
    assert claims[1] == 'abs(fidelity_index(light) where race = "White" where age = 30) < 0.1 on real'
