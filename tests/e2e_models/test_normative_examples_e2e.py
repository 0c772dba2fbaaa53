"""examples/skin_tone.audit and examples/body_warp.audit, copied verbatim, end to end on data from
scripts/make_example_data.py and tiny random checkpoints of the four scorers they use
(laion_aesthetic, pickscore, image_reward, hpsv2) in a fake Hugging Face cache, offline.

The open_clip scorers need tiny configs registered under ViT-L-14-quickgelu / ViT-H-14, which
only holds inside one process, so the audits run in-process (`run_with_tiny_models` wraps
`scoreaudit.api.run`). The spec's `bootstrap: 10000` is kept as written.

Planted truths checked against independent computations: the re-toned strata order by ITA°,
the torso warp scales the torso's width by the dose, and the reported validity R² equals
scipy's linregress on the measures table.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="the models extra is not installed (pip install 'scoreaudit[models]')")
pytest.importorskip("transformers", reason="the models extra is not installed")
pytest.importorskip("open_clip", reason="the models extra is not installed (its CLIP vocabulary builds the tokenizer)")

pytestmark = [pytest.mark.slow, pytest.mark.models]  # slow: model e2e: whole audits with tiny models

REPO = Path(__file__).resolve().parents[2]
OUTCOMES = {"supported", "refuted", "inconclusive"}
SCORERS = ("laion", "pick", "ir", "hps")
CONDITIONS = ["pixel isolation", "measurement validity", "real-data arm"]
N_REAL, N_PROMPTS, N_BASES = 12, 4, 4


def _script():
    spec = importlib.util.spec_from_file_location("make_example_data", REPO / "scripts" / "make_example_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _copy_spec(name: str, root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    dst = root / f"{name}.audit"
    shutil.copy(REPO / "examples" / f"{name}.audit", dst)
    assert dst.read_bytes() == (REPO / "examples" / f"{name}.audit").read_bytes()
    return dst


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("normative")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(root / "xdg"))  # the weight-hash memo stays in the tmp folder
        yield root


@pytest.fixture(scope="module")
def models(env):
    script = _script()
    cache = script.build_tiny_models(env / "models")
    for repo in ("camenduru--improved-aesthetic-predictor", "timm--vit_large_patch14_clip_224.openai", "xswu--HPSv2",
                 "yuvalkirstain--PickScore_v1", "THUDM--ImageReward"):
        assert (cache / f"models--{repo}" / "refs" / "main").is_file(), repo
    return env / "models"


@pytest.fixture(scope="module")
def skin_tone(env, models):
    script = _script()
    root = env / "skin_tone"
    counts = script.build_skin_tone(root / "data", n_real=N_REAL, n_prompts=N_PROMPTS)
    spec = _copy_spec("skin_tone", root)
    out = root / "out" / "skin_tone"
    results = script.run_with_tiny_models(spec, models, out=out, progress=False)
    assert (out / "results.json").is_file()
    return {"root": root, "out": out, "results": results, "counts": counts}


@pytest.fixture(scope="module")
def body_warp(env, models):
    """Through the script's command line: data, tiny models, then `--run` in the same process."""
    script = _script()
    root = env / "body_warp"
    spec = _copy_spec("body_warp", root)
    rc = script.main(["--out", str(root / "data"), "--which", "body_warp", "--bases", str(N_BASES),
                      "--tiny-models", str(models), "--run", str(spec)])
    assert rc == 0
    out = root / "out" / "body_warp"
    return {"root": root, "out": out, "results": json.loads((out / "results.json").read_text())}


def _cells_reach_outcomes(cells):
    for c in cells:
        assert c["outcome"] in OUTCOMES, (c["id"], c["outcome"], c.get("undefined"))
        if c["estimate"] is None or not math.isfinite(c["estimate"]):
            assert c.get("undefined"), f"{c['id']}: no estimate and no documented reason"


def _verdict(results, measure, operator):
    found = [v for v in results["verdicts"] if (v["measure"], v["operator"]) == (measure, operator)]
    assert len(found) == 1, results["verdicts"]
    v = found[0]
    assert [c["name"] for c in v["conditions"]] == CONDITIONS
    assert v["failed"] == [c["name"] for c in v["conditions"] if not c["held"]]
    assert v["verdict"] == ("bias-measurement" if not v["failed"] else "stress-test-only")
    return v


def _validity_r2(out: Path, arm: str, operator: str, measure: str, identity: float) -> float:
    """spec/methods.md: pooled OLS of Δm(i, d) = m(i, d) − m(i, d0) on d − d0 (non-identity doses), by scipy."""
    import pandas as pd
    from scipy.stats import linregress

    m = pd.read_parquet(out / "tables" / "measures.parquet")
    m = m[(m.arm == arm) & (m.name == measure)]
    base = m[m.operator == "original"].set_index("image_id")["value"]
    sweep = m[(m.operator == operator) & ~np.isclose(m.dose, identity)]
    dm = sweep["value"].to_numpy() - base.loc[sweep.image_id].to_numpy()
    return float(linregress(sweep.dose.to_numpy() - identity, dm).rvalue ** 2)


# ---------------------------------------------------------------- data


def test_script_data_matches_the_specs(skin_tone, body_warp):
    import pandas as pd
    from PIL import Image

    counts = skin_tone["counts"]
    assert counts["missed"] == 0 and counts["detected"] == N_REAL + 3 * N_PROMPTS  # face() finds every view
    data = skin_tone["root"] / "data"
    real, syn = pd.read_csv(data / "real.csv"), pd.read_csv(data / "synthetic.csv")
    assert {"id", "path", "race"} <= set(real) and sorted(real.race.unique()) == ["A", "B", "C"]
    assert {"id", "path", "prompt_id"} <= set(syn) and syn.prompt_id.nunique() == N_PROMPTS
    bodies = pd.read_csv(body_warp["root"] / "data" / "bodies.csv")
    assert {"id", "path", "base_id", "torso_mask"} <= set(bodies) and bodies.base_id.nunique() == N_BASES
    for row in bodies.itertuples():
        folder = body_warp["root"] / "data" / "bodies"
        img, mask = Image.open(folder / row.path), np.asarray(Image.open(folder / row.torso_mask))
        assert mask.shape == img.size[::-1] and 0.03 < (mask >= 128).mean() < 0.3


# ---------------------------------------------------------------- skin_tone


def test_skin_tone_every_cell_reaches_an_outcome(skin_tone):
    res = skin_tone["results"]
    cells = res["cells"]
    expected = ({f"H1/{s}/{a}" for s in SCORERS for a in ("real", "synthetic")}
                | {f"{h}/{s}/real" for h in ("H2", "H3", "H5", "H6") for s in SCORERS}
                | {f"H4/{s}/synthetic->real" for s in SCORERS})
    assert {c["id"] for c in cells} == expected
    _cells_reach_outcomes(cells)
    transfer = [c for c in cells if c["hypothesis"] == "H4"]
    assert len(transfer) == 4 and all(c["statistic"] == "transfers" and c["outcome"] in OUTCOMES for c in transfer)
    assert res["exclusions"] == [], res["exclusions"]  # a face and skin pixels in every image
    assert res["settings"]["bootstrap"] == 10000


def test_skin_tone_verdict_on_the_ita_light_axis(skin_tone):
    res, out = skin_tone["results"], skin_tone["out"]
    v = _verdict(res, "ita", "light")
    cond = {c["name"]: c for c in v["conditions"]}
    assert cond["pixel isolation"]["held"] and cond["pixel isolation"]["value"] <= 0.001  # lab_shift is pixel-local
    # measurement validity: the reported R² is scipy's on the measures table, and ITA° rises with L*
    for arm in ("real", "synthetic"):
        got = cond["measurement validity"]["value"][arm]
        assert got["r2"] == pytest.approx(_validity_r2(out, arm, "light", "ita", 0.0), rel=1e-9)
        assert got["r2"] >= 0.5 and got["monotonic"] >= 0.95
    assert cond["measurement validity"]["held"]
    # 12 real images, each its own cluster: below the 100 clusters a bias measurement needs
    assert not cond["real-data arm"]["held"] and cond["real-data arm"]["value"] == N_REAL
    assert v["verdict"] == "stress-test-only" and v["failed"] == ["real-data arm"]


def test_skin_tone_strata_order_by_ita(skin_tone):
    """Planted: stratum A was lightened, C darkened the most; the measured ITA° orders them so."""
    import pandas as pd

    m = pd.read_parquet(skin_tone["out"] / "tables" / "measures.parquet")
    ita = m[(m.arm == "real") & (m.name == "ita") & (m.operator == "original")].set_index("image_id")["value"]
    race = pd.read_csv(skin_tone["root"] / "data" / "real.csv").set_index("id")["race"]
    by = ita.groupby(race.loc[ita.index].to_numpy()).mean()
    assert by["A"] > by["B"] + 10 > by["C"] + 20, by


def test_skin_tone_reports(skin_tone):
    out = skin_tone["out"]
    html = (out / "report.html").read_text(encoding="utf-8")
    assert all(f"H{k}" in html for k in range(1, 7)) and "real-data arm" in html
    if importlib.util.find_spec("weasyprint") is None:
        pytest.skip("the spec asks for a PDF; WeasyPrint is not installed here (pip install 'scoreaudit[pdf]')")
    pdf = out / "report.pdf"
    assert pdf.is_file() and pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 10_000


# ---------------------------------------------------------------- body_warp


def test_body_warp_is_a_stress_test(body_warp):
    res, out = body_warp["results"], body_warp["out"]
    cells = res["cells"]
    assert [c["id"] for c in cells] == ["B1/laion/bodies"]
    _cells_reach_outcomes(cells)
    assert cells[0]["estimate"] is not None and math.isfinite(cells[0]["estimate"])
    v = _verdict(res, "width", "widen")
    assert v["verdict"] == "stress-test-only"
    assert {"pixel isolation", "real-data arm"} <= set(v["failed"])  # the warp is geometric; no real arm
    # measurement validity is whatever the data gives, computed, not assumed: here width_ratio tracks
    # the warp closely, so it passes (the design expects a failure only on data like the seed paper's)
    validity = next(c for c in v["conditions"] if c["name"] == "measurement validity")
    r2 = _validity_r2(out, "bodies", "widen", "width", 1.0)
    assert validity["value"]["bodies"]["r2"] == pytest.approx(r2, rel=1e-9)
    assert validity["held"] == (r2 >= 0.5)
    (row,) = [x for x in res["validations"] if (x["measure"], x["operator"]) == ("width", "widen")]
    assert row["passed"] == validity["held"]
    assert (out / "report.html").is_file() and not (out / "report.pdf").exists()  # formats: html


def test_body_warp_width_tracks_the_dose(body_warp):
    """Planted: torso_warp scales the torso horizontally by the dose, so width_ratio ≈ dose."""
    import pandas as pd

    m = pd.read_parquet(body_warp["out"] / "tables" / "measures.parquet")
    w = m[(m.name == "width") & (m.operator == "widen")]
    assert len(w) == 5 * 3 * N_BASES
    np.testing.assert_allclose(w.value, w.dose, atol=0.03)
    d = m[(m.name == "deformation") & (m.operator == "widen")].groupby("dose")["value"].mean()
    assert d[1.0] == 0 and d[0.8] > d[0.9] > 0 and d[1.2] > d[1.1] > 0


# ---------------------------------------------------------------- verify


def test_verify_recomputes_both_bundles(skin_tone, body_warp):
    from scoreaudit.reports.verify import verify

    for bundle in (skin_tone["out"], body_warp["out"]):
        assert verify(bundle) == []
        cmd = [sys.executable, "-c", "import sys; from scoreaudit.cli import main; sys.exit(main())",
               "verify", str(bundle)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=dict(os.environ))
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]


def test_plan_forward_passes_equal_the_runs(skin_tone, body_warp):
    """issue 26: what `scoreaudit plan` prints per scorer is what the run computed (fresh cache, no exclusions)."""
    from plan_forward import assert_forward_passes_match

    for case, name in ((skin_tone, "skin_tone"), (body_warp, "body_warp")):
        made = assert_forward_passes_match(case["root"] / f"{name}.audit", case["out"])
        assert all(n > 0 for n in made.values()), made
