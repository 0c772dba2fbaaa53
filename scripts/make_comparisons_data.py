"""Build the data of `examples/comparisons.audit`: scores computed elsewhere, with planted truths.

Everything the example reads comes from tables (spec/precomputed.md), as when a
user audits a paper's cached scores; the images are small placeholders the
runtime decodes but never scores.

- `data/comparisons/real/`, `real.csv`: 120 real faces, each its own cluster,
  `race` (Black / White, alternating) and a judge's 0/1 label `judge` (-1 = the
  judge gave none).
- `data/comparisons/synthetic/`, `synthetic.csv`: 40 prompts × 4 faces,
  `prompt_id` the cluster, `tone` (dark / light, two of each per prompt).
- `data/comparisons/pairs.json`: 300 pairs (no image files), `judge` label
  per pair; scored under the original prompt (arm `orig`) and a
  wide-spectrum prompt (arm `wide`).
- `data/comparisons/scores.csv`, `measures.csv`: long tables for every arm.

Planted (raw score units, three scorers laion, hps, ir):
- fidelity index: s(i, d) = b_i − F·u² + β·(m(i, d) − m(i, 0)) + ε, u = d/10;
  F = 1.0 (laion), 0.03 (hps), 1.2 (ir), the same for both races;
- the ITA measure m rises 1.5° per dose unit; β = 0.004 per degree on real
  faces and 0.02 on synthetic ones (the asymmetry: real ≈ 0.2× synthetic);
- synthetic tone gap: original scores carry β·m0 (dark faces ≈ 30° darker)
  plus a confound of −0.9 for dark faces, so 60% of the gap is confound;
- pairs: accuracy ≈ 0.8 (ir), 0.75 (hps), 0.6 (laion) under the original
  prompt; hps drops to ≈ 0.55 under the wide prompt.

Deterministic.

    python scripts/make_comparisons_data.py [--out examples/data]
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
from PIL import Image

DOSES = (-10, -5, 0, 5, 10)
SCORERS = ("laion", "hps", "ir")
CURVATURE = {"laion": 1.0, "hps": 0.03, "ir": 1.2}
BETA = {"real": 0.004, "synthetic": 0.02}
ITA_SLOPE = 1.5
CONFOUND_DARK = -0.9


def _placeholder(path: Path, rng: np.random.Generator, tone: float) -> None:
    arr = rng.integers(40, 215, (24, 24, 3)).astype(np.uint8)
    skin = np.clip(np.array([200, 150, 120]) * tone, 0, 255).astype(np.uint8)
    arr[6:18, 6:18] = skin
    Image.fromarray(arr).save(path)


def _write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def _dose_rows(arm: str, iid: str, m0: float, base: dict, beta: float, rng: np.random.Generator,
               scores: list, measures: list) -> None:
    for d in DOSES:
        u = d / 10
        m = m0 + ITA_SLOPE * d + (rng.normal(0, 0.3) if d else 0.0)
        measures.append({"arm": arm, "id": iid, "operator": "light", "dose": d, "measure": "ita", "value": round(m, 6)})
        for s in SCORERS:
            v = base[s] - CURVATURE[s] * u * u + beta * (m - m0) + (rng.normal(0, 0.02) if d else 0.0)
            scores.append({"arm": arm, "id": iid, "operator": "light", "dose": d, "scorer": s,
                           "score": round(v, 6)})


def build(out: Path) -> Path:
    root = out / "comparisons"
    rng = np.random.default_rng(20261201)
    scores: list[dict] = []
    measures: list[dict] = []

    # real faces: each image its own cluster
    real = []
    (root / "real").mkdir(parents=True, exist_ok=True)
    for k in range(120):
        iid = f"real_{k:03d}"
        race = "Black" if k % 2 else "White"
        m0 = (20.0 if race == "Black" else 45.0) + rng.normal(0, 4)
        base = {s: rng.normal(0, 1.0) for s in SCORERS}
        _placeholder(root / "real" / f"{iid}.png", rng, 0.6 if race == "Black" else 1.0)
        # the judge's label tracks laion's original score (AUROC well above 0.5), 10% unlabelled
        label = -1 if k % 10 == 3 else int(base["laion"] + rng.normal(0, 0.7) > 0)
        real.append({"id": iid, "path": f"{iid}.png", "race": race, "judge": label})
        _dose_rows("real", iid, m0, base, BETA["real"], rng, scores, measures)
    _write_csv(root / "real.csv", real)

    # synthetic faces: 40 prompts, two dark and two light faces each
    syn = []
    (root / "synthetic").mkdir(parents=True, exist_ok=True)
    for p in range(40):
        prompt_base = rng.normal(0, 0.5)
        for j in range(4):
            iid = f"syn_{p:02d}_{j}"
            tone = "dark" if j % 2 else "light"
            m0 = (15.0 if tone == "dark" else 45.0) + rng.normal(0, 3)
            b = prompt_base + BETA["synthetic"] * m0 + (CONFOUND_DARK if tone == "dark" else 0.0)
            base = {s: b + rng.normal(0, 0.15) for s in SCORERS}
            _placeholder(root / "synthetic" / f"{iid}.png", rng, 0.6 if tone == "dark" else 1.0)
            syn.append({"id": iid, "path": f"{iid}.png", "prompt_id": f"prompt_{p:02d}", "tone": tone})
            _dose_rows("synthetic", iid, m0, base, BETA["synthetic"], rng, scores, measures)
    _write_csv(root / "synthetic.csv", syn)

    # pairs: a faithful and a polished image per prompt, scored under two prompts
    pairs = []
    from scipy.stats import norm

    acc = {("orig", "ir"): 0.8, ("orig", "hps"): 0.75, ("orig", "laion"): 0.6,
           ("wide", "ir"): 0.8, ("wide", "hps"): 0.55, ("wide", "laion"): 0.6}
    weight = {"ir": 1.5, "hps": 0.5, "laion": 0.2}  # how much a scorer sees of what the judge sees
    for k in range(300):
        pid = f"pair_{k:03d}"
        q = rng.normal()  # how much better the faithful image is, as the judge sees it
        label = -1 if k % 10 == 7 else int(q + rng.normal(0, 0.6) > 0)
        pairs.append({"id": pid, "faithful": f"{pid}_f.png", "polished": f"{pid}_p.png", "judge": label})
        z = {s: rng.normal() for s in SCORERS}  # one draw per pair and scorer, shared by both prompts
        for arm in ("orig", "wide"):
            for s in SCORERS:
                w = weight[s]
                cut = -norm.ppf(acc[(arm, s)]) * np.sqrt(w * w + 1)  # P(w·q + z > cut) = the accuracy
                gap = 0.5 * (w * q + z[s] - cut)  # > 0: the faithful image scores higher
                pref = rng.normal(0, 0.3)
                other = pref - gap
                scores.append({"arm": arm, "id": f"{pid}:preferred", "operator": "", "dose": "", "scorer": s,
                               "score": round(pref, 6)})
                scores.append({"arm": arm, "id": f"{pid}:other", "operator": "", "dose": "", "scorer": s,
                               "score": round(other, 6)})
    (root / "pairs.json").write_text(json.dumps(pairs, indent=1), encoding="utf-8")
    _write_csv(root / "scores.csv", scores)
    _write_csv(root / "measures.csv", measures)
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "examples" / "data"))
    args = ap.parse_args()
    root = build(Path(args.out))
    print(f"wrote {root}")


if __name__ == "__main__":
    main()
