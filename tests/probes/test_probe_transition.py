"""probe_transition: the share of trajectories starting as label A that end as label B, against hand counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from scoreaudit import api
from scoreaudit.stats.context import StatContext
from scoreaudit.stats.engine import evaluate_cells
from scoreaudit.stats.sentences import cell_sentence

LABELS = ["white", "black", "asian"]
SPEC = '''audit "Transitions" {{ seed: 3  bootstrap: 400  test: ttest }}
scorer pick = pickscore(prompt: "a photo")
probe up = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 2, seeds: 0..2,
                measures: [clip_attribute(labels: ["white", "black", "asian"])])
probe down = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 2, seeds: 0..2, direction: minimize,
                  measures: [clip_attribute(labels: ["white", "black", "asian"])])
hypothesis T1 "Optimising does not turn non-white subjects white" {{
  probe_transition(up, initial: ["black", "asian"], final: "white") < 0.5
  probe_transition(down, initial: ["black", "asian"], final: "white") < 0.5
  difference(probe_transition(up, initial: ["black", "asian"], final: "white"), probe_transition(down, initial: ["black", "asian"], final: "white")) > 0
  probe_transition(up, initial: "white", final: {final}) > 0.5
}}
'''


def _ir(final='"white"'):
    c = api.check("t.audit", source=SPEC.format(final=final), tables=False)
    assert c.ok, [d.message for d in c.diagnostics]
    return c.ir


def _plant(rng, p_white_end: float, prompts: int = 6, seeds: int = 3):
    """One-hot labels at iterations 0 and 2 per trajectory; the hand count of both transitions per prompt."""
    rows, nonwhite, keep = [], {}, {}
    for k in range(prompts):
        for s in range(seeds):
            start = "black" if s == 0 else str(rng.choice(LABELS))  # seed 0: every prompt has a non-white start
            end = "white" if rng.random() < p_white_end else str(rng.choice(["black", "asian"]))
            for it, lab in ((0, start), (1, str(rng.choice(LABELS))), (2, end)):
                for name in LABELS:
                    rows.append({"scorer": "pick", "prompt": f"prompt {k}", "cluster": f"p{k:04d}", "seed": s,
                                 "iteration": it, "measure": "clip_attribute", "label": name,
                                 "value": float(name == lab)})
            if start in ("black", "asian"):
                nonwhite.setdefault(k, []).append(float(end == "white"))
            else:
                keep.setdefault(k, []).append(float(end == "white"))
    return pd.DataFrame(rows), nonwhite, keep


def test_transition_rate_is_the_hand_count_with_its_t_interval_and_the_directions_differ_paired():
    ir = _ir()
    rng = np.random.default_rng(11)
    up, up_nw, up_w = _plant(rng, 0.75)
    down, down_nw, _ = _plant(rng, 0.2)
    table = pd.concat([up.assign(probe="up"), down.assign(probe="down")], ignore_index=True)
    cells = {c["id"]: c for c in evaluate_cells(StatContext(ir, {"probe": table}), ir.cells())}
    for cid, per in (("T1.1/pick/up", up_nw), ("T1.2/pick/down", down_nw), ("T1.4/pick/up", up_w)):
        means = np.array([np.mean(per[k]) for k in sorted(per)])  # hand count: share per prompt, then mean
        c = cells[cid]
        assert c["estimate"] == pytest.approx(means.mean()), cid
        assert c["detail"]["trajectories"] == sum(len(v) for v in per.values())
        assert c["detail"]["transitions"] == int(sum(sum(v) for v in per.values()))
        lo, hi = sps.t.interval(c["ci_level"], len(means) - 1, loc=means.mean(), scale=sps.sem(means))
        assert (c["ci_low"], c["ci_high"]) == pytest.approx((lo, hi)), cid
        # a one-sided t-test of the prompt shares against the claim's threshold
        alt = "less" if cid != "T1.4/pick/up" else "greater"
        assert c["p"] == pytest.approx(sps.ttest_1samp(means, 0.5, alternative=alt).pvalue, rel=1e-6), cid
    # both directions of λ over the same prompts: the paired t-test on per-prompt differences
    d = np.array([np.mean(up_nw[k]) - np.mean(down_nw[k]) for k in sorted(up_nw)])
    c = cells["T1.3/pick/up:down"]
    assert c["estimate"] == pytest.approx(d.mean()) and c["detail"]["test"] == "paired t"
    assert c["p"] == pytest.approx(sps.ttest_1samp(d, 0.0, alternative="greater").pvalue, rel=1e-6)
    words = cell_sentence(cells["T1.1/pick/up"])
    assert "starting as 'black' or 'asian' that end as 'white' (clip_attribute)" in words and " share " in words


def test_the_share_that_keeps_its_label_and_no_eligible_trajectory():
    ir = _ir()
    rows = []
    for k in range(3):
        for s in range(2):
            for it, lab in ((0, "white"), (2, "white" if s == 0 or k == 0 else "asian")):
                for name in LABELS:
                    rows.append({"probe": "up", "scorer": "pick", "prompt": f"q{k}", "cluster": f"p{k:04d}",
                                 "seed": s, "iteration": it, "measure": "clip_attribute", "label": name,
                                 "value": float(name == lab)})
    cells = {c["id"]: c for c in evaluate_cells(StatContext(ir, {"probe": pd.DataFrame(rows)}), ir.cells())}
    # white → white: 2 of 2 on the first prompt, 1 of 2 on the others
    assert cells["T1.4/pick/up"]["estimate"] == pytest.approx((1.0 + 0.5 + 0.5) / 3)
    assert "no trajectory of probe up starts as 'black' or 'asian'" in cells["T1.1/pick/up"]["undefined"]


def test_unknown_labels_are_e0857_at_the_argument():
    src = SPEC.format(final='"whit"')
    c = api.check("t.audit", source=src, tables=False)
    bad = [d for d in c.diagnostics if d.code == "E0857"]
    assert not c.ok and bad and "did you mean 'white'" in bad[0].help
    assert src.splitlines()[bad[0].span.line - 1][bad[0].span.column - 1:].startswith('"whit"')


def test_simulate_recovers_the_planted_transition_rate():
    from scoreaudit.stats.simulate import run_simulation

    ir = _ir()
    # planted labels: independent draws, 1 with probability ½ + shift at the last iteration
    rows = {r["cell"]: r for r in run_simulation(ir, 10, {"pick": {"probe_shift": 0.2}}, {}, n_boot=200, seed=5)}
    keep = rows["T1.4/pick/up"]
    assert keep["truth"] == pytest.approx(0.7)  # one final label: q = 0.7
    assert keep["mean_estimate"] == pytest.approx(0.7, abs=0.06)
    assert rows["T1.1/pick/up"]["truth"] == pytest.approx(0.7)
