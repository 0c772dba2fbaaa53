"""Builders for the end-to-end precomputed tests: a project folder, its data, one `api.run`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from scoreaudit import api


def write_spec(folder: Path, text: str, name: str = "a.audit") -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def run(spec: Path, out: Path, render: bool = False) -> dict:
    """`scoreaudit run` through the facade, progress off, with the project's own cache."""
    return api.run(spec, out=out, progress=False, render_report=render, device="cpu")


def cells(results: dict) -> dict[str, dict]:
    return {c["id"]: c for c in results["cells"]}


def face_images(folder: Path, n: int = 12, size: int = 32, seed: int = 0) -> Path:
    """folder/data/real/*.png: skin-coloured faces on a varied background + data/real.csv (id, path, group)."""
    rng = np.random.default_rng(seed)
    imgs = folder / "data" / "real"
    imgs.mkdir(parents=True, exist_ok=True)
    rows = []
    for k in range(n):
        arr = rng.integers(20, 235, (size, size, 3)).astype(np.uint8)
        skin = np.array([200 - 12 * k, 150 - 8 * k, 120 - 6 * k], dtype=np.int64)
        noise = rng.integers(-6, 7, (size // 2, size // 2, 3))
        arr[size // 4: 3 * size // 4, size // 4: 3 * size // 4] = np.clip(skin + noise, 0, 255).astype(np.uint8)
        Image.fromarray(arr).save(imgs / f"img_{k:03d}.png")
        rows.append({"id": f"img_{k:03d}", "path": f"img_{k:03d}.png", "group": f"g{k % 6}"})
    pd.DataFrame(rows).to_csv(folder / "data" / "real.csv", index=False)
    return folder / "data" / "real.csv"


def write_json(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1), encoding="utf-8")
    return path


# ---------------------------------------------------------------- the within-image audit (done-means 2)

BODY = '''
arm real = images("data/real", manifest: "data/real.csv", kind: real, cluster: group{tables})
region skin = skin()
region rest = not skin
measure ita = ita(region: skin)
covariate clip = gamut_clip()
operator light = lab_shift(channel: L, region: skin) doses -10, -5, 0, 5, 10
placebo light_rest = lab_shift(channel: L, region: rest) of light
validate ita under light: r2 >= 0.5, monotonic >= 0.9
hypothesis H1 "Scorers prefer the unaltered image" {{
  fidelity_index(light) > 0 on real for each scorer
}}
hypothesis H2 "No directional preference" {{
  abs(asymmetry(light)) < 0.05 on real for each scorer
}}
hypothesis H3 "Not specific to skin" {{
  placebo_ratio(light, light_rest) within [0.5, 2] on real for each scorer
}}
'''
HEAD = 'audit "Within-image" { version: 1 seed: 11 scale: raw bootstrap: 200 }\n'  # 6 clusters: the t-test's level holds, the SD-unit bootstrap's would not
COMPUTED = HEAD + '''scorer sharp = sharpness()
scorer pl = planted(fidelity: 1.5, asymmetry: 0.1, noise: 0.3, slope_by: ita, slope: 0.05)
''' + BODY.format(tables="")
TABLES = ', scores: "results/scores.parquet", measures: "results/measures.parquet"'
FROM_TABLES = {
    # every scorer `precomputed()`: scores only from the table
    "precomputed": HEAD + "scorer sharp = precomputed()\nscorer pl = precomputed()\n" + BODY.format(tables=TABLES),
    # the scorers as declared, but a table gives their rows: the table wins, the model is not run
    "table wins": COMPUTED.replace(BODY.format(tables=""), BODY.format(tables=TABLES)),
}


def copy_inputs(computed: Path, folder: Path, tables=("scores", "measures")) -> None:
    """A fresh project: the computed run's images and manifest, and its bundle tables as results/*.parquet."""
    shutil.copytree(computed / "data", folder / "data")
    (folder / "results").mkdir()
    for name in tables:
        shutil.copy2(computed / "out" / "tables" / f"{name}.parquet", folder / "results" / f"{name}.parquet")
