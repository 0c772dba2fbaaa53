"""`scoreaudit diff A B` on two real runs of the demo that differ in one planted scorer (tests/view/conftest.py)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from scoreaudit import cli
from scoreaudit.view.compare import diff_bundles, paired_interval

CHANGED = "H2/planted_dir/real"  # the cell the planted change flips (conftest.py)


def _cells(bundle) -> pd.DataFrame:
    return pd.read_parquet(bundle / "tables" / "cells.parquet").set_index("id")


def test_diff_names_the_planted_change_and_nothing_else(two_bundles, capsys):
    a, b = two_bundles
    ca, cb = _cells(a), _cells(b)
    assert ca.loc[CHANGED, "outcome"] == "refuted" and cb.loc[CHANGED, "outcome"] != "refuted"
    truth = sorted(i for i in ca.index if ca.loc[i, "outcome"] != cb.loc[i, "outcome"])
    assert CHANGED in truth and all("/planted_dir/" in i for i in truth)  # only the changed scorer moves

    assert cli.main(["diff", str(a), str(b), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["changed"]) == truth
    assert out["summary"] == {"cells_in_both": len(ca), "changed_outcome": len(truth), "only_a": 0, "only_b": 0}
    by_id = {c["id"]: c for c in out["cells"]}
    for cid in ca.index:  # every change is B's estimate minus A's, as the two tables say
        ea, eb = ca.loc[cid, "estimate"], cb.loc[cid, "estimate"]
        if pd.isna(ea) or pd.isna(eb):
            assert by_id[cid]["change"] is None
        else:
            assert by_id[cid]["change"] == pytest.approx(eb - ea, abs=1e-12)
        if "/planted_dir/" not in cid and not pd.isna(ea):
            assert by_id[cid]["change"] == pytest.approx(0.0, abs=1e-12)
    # every image is shared with the same pixels (same data folder)
    assert {o["arm"]: (o["same"], o["different"], o["only_a"], o["only_b"]) for o in out["images"]} == {
        "real": (8, 0, 0, 0), "synthetic": (12, 0, 0, 0)}


def test_paired_interval_of_the_planted_shift(two_bundles):
    """The planted asymmetry term is deterministic, so every cluster's contrast moves by the same amount:
    the paired change equals the change in the estimate and its interval has no width."""
    a, b = two_bundles
    cmp = diff_bundles(a, b)
    c = next(x for x in cmp.cells if x.id == CHANGED)
    ca, cb = _cells(a), _cells(b)
    assert c.n_shared == c.n_clusters_a == 8
    assert c.paired == pytest.approx(cb.loc[CHANGED, "estimate"] - ca.loc[CHANGED, "estimate"], abs=1e-12)
    assert c.ci_low == pytest.approx(c.paired, abs=1e-9) and c.ci_high == pytest.approx(c.paired, abs=1e-9)
    assert c.ci_level == pytest.approx(ca.loc[CHANGED, "ci_level"])
    drift = next(x for x in cmp.cells if x.id == "H5/planted_dir/real")  # net_drift keeps no contrasts
    assert drift.paired is None and "no per-cluster contrasts" in drift.why_no_interval


def test_paired_interval_uses_only_clusters_with_the_same_pixels(two_bundles, tmp_path):
    """An image whose pixels differ in B drops its cluster from the pairing; the rest is the same mean."""
    a, b = two_bundles
    b2 = tmp_path / "b2"
    shutil.copytree(b, b2)
    images = pd.read_parquet(b2 / "tables" / "images.parquet")
    hit = (images["arm"] == "real") & (images["image_id"] == "astro_003")
    images.loc[hit, "content_hash"] = "0" * 64
    images.to_parquet(b2 / "tables" / "images.parquet", index=False)
    c = next(x for x in diff_bundles(a, b2).cells if x.id == CHANGED)
    ka = pd.read_parquet(a / "tables" / "contrasts.parquet").query("cell == @CHANGED").set_index("cluster")["value"]
    kb = pd.read_parquet(b2 / "tables" / "contrasts.parquet").query("cell == @CHANGED").set_index("cluster")["value"]
    keep = [k for k in ka.index if k != "astro_003"]
    assert c.n_shared == 7
    assert c.paired == pytest.approx(float((kb[keep] - ka[keep]).mean()), abs=1e-12)
    over = next(o for o in diff_bundles(a, b2).images if o.arm == "real")
    assert (over.same, over.different) == (7, 1)


def test_paired_bootstrap_matches_normal_theory():
    """The percentile interval of a mean of 400 paired differences is close to mean +- z sd / sqrt(n)."""
    rng = np.random.default_rng(7)
    da = rng.normal(0.0, 1.0, 400)
    db = da + rng.normal(0.3, 1.0, 400)
    mean, lo, hi = paired_interval(da, db, 0.90, n_boot=4000)
    d = db - da
    half = 1.6449 * d.std(ddof=1) / np.sqrt(len(d))
    assert mean == pytest.approx(d.mean(), abs=1e-12)
    assert lo == pytest.approx(d.mean() - half, abs=0.15 * half)
    assert hi == pytest.approx(d.mean() + half, abs=0.15 * half)


def test_fail_on_changed_exit_codes(two_bundles, capsys):
    a, b = two_bundles
    assert cli.main(["diff", str(a), str(b)]) == 0  # a report, not a gate
    text = capsys.readouterr().out
    assert "changed outcome:" in text and f"{CHANGED}: refuted -> " in text
    assert cli.main(["diff", str(a), str(b), "--fail-on", "changed"]) == 4
    assert "--fail-on changed" in capsys.readouterr().err
    assert cli.main(["diff", str(a), str(a), "--fail-on", "changed"]) == 0
    assert "0 changed outcome" in capsys.readouterr().out


def test_diff_of_a_folder_that_is_not_a_bundle_is_exit_6(two_bundles, tmp_path, capsys):
    assert cli.main(["diff", str(two_bundles[0]), str(tmp_path)]) == 6
    assert "results.json" in capsys.readouterr().err
