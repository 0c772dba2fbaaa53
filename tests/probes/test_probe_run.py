"""ReNO probes end to end on tiny random models (CPU, no downloads)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("diffusers")

from scoreaudit import api  # noqa: E402

from probe_testutil import project  # noqa: E402

SPEC = '''audit "Probe" {{ seed: 1  bootstrap: 200 }}
scorer ir = pickscore()
probe reno_ir = reno(scorer: ir, pipeline: "sd", prompts: "prompts.txt", iterations: {it}, lr: {lr}, direction: {d},
                     seeds: 0..1, size: 32, measures: [ita, skin_exposure, clip_attribute(labels: ["man", "woman"], model: "clip")])
hypothesis P1 "Optimising against PickScore does not lighten skin" {{
  abs(probe_drift(reno_ir, measure: ita)) < 2.0 for ir
  probe_drift(reno_ir, measure: score) > 0
  probe_shift(reno_ir, label: "woman") < 0.5
}}
'''


def _run(tmp_path, d="maximize", it=4, lr=5.0):
    spec = project(tmp_path, SPEC.format(it=it, lr=lr, d=d))
    res = api.run(spec, out=tmp_path / "out", device="cpu", cache=tmp_path / "c.sqlite", progress=False,
                  render_report=False)
    return spec, res


def test_probe_runs_records_every_iteration_and_reads_its_statistics(tmp_path):
    spec, res = _run(tmp_path)
    out = tmp_path / "out"
    t = pd.read_parquet(out / "tables" / "probe.parquet")
    assert set(t["measure"]) == {"score", "ita", "skin_exposure", "clip_attribute"}
    assert sorted(t["iteration"].unique()) == [0, 1, 2, 3, 4]
    assert len(t[t["measure"] == "score"]) == 2 * 2 * 5  # prompts × seeds × iterations
    assert (out / "probes" / "reno_ir" / "p0000_s0" / "it004.png").is_file()  # keep: ends (the default)
    assert not (out / "probes" / "reno_ir" / "p0000_s0" / "it002.png").exists()
    cells = {c["id"]: c for c in res["cells"]}
    drift = cells["P1.1/ir/reno_ir"]
    assert drift["statistic"] == "probe_drift" and drift["arm"] is None
    # hand computation: last − first per trajectory, mean per prompt, mean over prompts
    ita = t[t["measure"] == "ita"]
    per = ita.groupby(["cluster", "seed"]).apply(
        lambda g: g.sort_values("iteration")["value"].iloc[-1] - g.sort_values("iteration")["value"].iloc[0],
        include_groups=False)
    hand = per.groupby(level=0).mean().mean()
    if np.isfinite(hand):
        assert drift["estimate"] == pytest.approx(hand)
    run = json.loads((out / "run.json").read_text())
    assert run["probes"]["reno_ir"]["trajectories"] == 4 and run["probes"]["reno_ir"]["optimised"] == 4
    trace = pd.read_csv(out / "probes" / "reno_ir" / "trace.csv")
    assert len(trace) == 4 * 5 and {"score", "ita", "skin_exposure", "clip_attribute[woman]"} <= set(trace.columns)
    # the report: trajectories per measure, first/last thumbnails; verify accepts the bundle
    (html,) = [p for p in api.render(out, formats=("html",)) if p.suffix == ".html"]
    page = html.read_text()
    assert "Optimisation probes" in page and page.count("data:image/jpeg;base64,") >= 2 * 4
    assert "skin_exposure" in page and "clip_attribute" in page
    assert api.verify(out) == []
    # a second run reuses every trajectory from the store and gives the same table
    again = api.run(spec, out=tmp_path / "out2", device="cpu", cache=tmp_path / "c.sqlite", progress=False,
                    render_report=False)
    run2 = json.loads((tmp_path / "out2" / "run.json").read_text())
    assert run2["probes"]["reno_ir"]["optimised"] == 0 and run2["probes"]["reno_ir"]["reused"] == 4
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out2" / "tables" / "probe.parquet"), t)
    np.testing.assert_equal({c["id"]: c["estimate"] for c in again["cells"]}, {c["id"]: c["estimate"] for c in res["cells"]})
    # a run killed mid-trajectory leaves only a temporary folder: the next run redoes that trajectory alone
    store = tmp_path / "c.sqlite.probes"
    done = sorted(p for p in store.glob("*/*") if (p / "trace.json").is_file())
    assert len(done) == 4
    victim = done[0]
    partial = victim.with_name(f".{victim.name}.999999.tmp")
    victim.rename(partial)
    (partial / "trace.json").unlink()
    api.run(spec, out=tmp_path / "out3", device="cpu", cache=tmp_path / "c.sqlite", progress=False,
            render_report=False)
    run3 = json.loads((tmp_path / "out3" / "run.json").read_text())
    assert run3["probes"]["reno_ir"]["optimised"] == 1 and run3["probes"]["reno_ir"]["reused"] == 3
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out3" / "tables" / "probe.parquet"), t)


LIGHT = '''audit "Probe" {{ seed: 1  bootstrap: 200 }}
scorer pick = pickscore(prompt: "a portrait photo")
probe p = reno(pick, pipeline: "sd", prompts: "prompts.txt", iterations: 3, direction: {d}, seeds: 0..1, size: 32,
               measures: [skin_exposure])
'''


def test_score_rises_under_maximize_and_falls_under_minimize(tmp_path):
    ups = []
    for d in ("maximize", "minimize"):
        sub = tmp_path / d
        sub.mkdir()
        spec = project(sub, LIGHT.format(d=d), prompts=("a photo of a nurse",))
        api.run(spec, out=sub / "out", device="cpu", cache=sub / "c.sqlite", progress=False, render_report=False)
        t = pd.read_parquet(sub / "out" / "tables" / "probe.parquet")
        s = t[t["measure"] == "score"].pivot_table(index=["cluster", "seed"], columns="iteration", values="value")
        ups.append((s[3] - s[0]).to_numpy())
    assert (ups[0] > 0).all(), ups[0]
    assert (ups[1] < 0).all(), ups[1]
