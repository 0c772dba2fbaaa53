"""A pre-registered reversal: `ratio(a, b) < 0` claims the two readings have opposite signs.

The seed paper's "the skin-tone effect reverses from synthetic to real faces" could only appear
as a refuted transfer while `ratio(...) < 0` was E0426. It compiles now, and is tested like any
ratio claim against 0 (the ratio defined only when the denominator's CI excludes 0).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from test_comparisons import DOSES, FI, _compare, _ir

from scoreaudit import api
from scoreaudit.compiler.ir import ORIGINAL, ReadingIR, TestIR as Claim
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.outcomes import cell_p, number_outcome

LESS = Claim(kind="less", threshold=0.0, text="ratio(...) < 0")


def _tables(curv: dict, seed: int = 0, n_clusters: int = 80) -> dict:
    rng = np.random.default_rng(seed)
    images, scores = [], []
    for c in range(n_clusters):
        iid = f"r{c}"
        images.append({"arm": "real", "image_id": iid, "cluster": f"c{c}", "race": "A"})
        base = {s: rng.normal() for s in curv}
        for d in DOSES:
            for s, F in curv.items():
                v = base[s] - F * (d / 10) ** 2 + rng.normal(0, 0.3)
                scores.append({"arm": "real", "image_id": iid, "operator": "light", "dose": d, "scorer": s, "score": v})
                if d == 0:
                    scores.append({"arm": "real", "image_id": iid, "operator": ORIGINAL, "dose": 0.0, "scorer": s,
                                   "score": v})
    return {"images": pd.DataFrame(images), "scores": pd.DataFrame(scores)}


def _outcome(curv: dict) -> tuple[str, float]:
    ctx = StatContext(_ir(n_boot=999), _tables(curv))
    est = ctx.evaluate(_compare("ratio", ReadingIR(statistic=FI, arm="real", scorer="s2"),
                                ReadingIR(statistic=FI, arm="real", scorer="s1")), None, "s2:s1")
    p = cell_p(est, LESS)
    return number_outcome(est, LESS, p, 0.05), est.estimate


def test_opposite_signs_support_a_reversal_and_one_sign_refutes_it():
    outcome, ratio = _outcome({"s1": 1.0, "s2": -0.5})  # planted ratio −0.5
    assert outcome == "supported" and -0.8 < ratio < -0.3
    outcome, ratio = _outcome({"s1": 1.0, "s2": 0.5})  # planted ratio +0.5
    assert outcome == "refuted" and 0.3 < ratio < 0.8


def test_a_reversal_compiles_and_a_same_sign_claim_is_still_e0426():
    head = ('audit "r" { seed: 1 }\nscorer a = laion_aesthetic()\nscorer b = sharpness()\n'
            'arm real = images("data/real", manifest: "data/real.csv", kind: real)\n'
            'arm syn = images("data/syn", manifest: "data/syn.csv", kind: synthetic)\n'
            'region skin = skin()\noperator light = lab_shift(channel: L, region: skin) doses -10..10 step 5\n')
    ok = api.check("r.audit", source=head + 'hypothesis R "reverses" {\n  ratio(asymmetry(light) on real, '
                   'asymmetry(light) on syn) < 0 for each scorer\n}\n', tables=False)
    assert ok.ok, [d.message for d in ok.diagnostics]
    bad = api.check("r.audit", source=head + 'hypothesis R "same sign" {\n  ratio(asymmetry(light) on real, '
                    'asymmetry(light) on syn) > 0 for each scorer\n}\n', tables=False)
    assert [d.code for d in bad.diagnostics if d.severity == "error"] == ["E0426"]
