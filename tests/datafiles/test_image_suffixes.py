"""The plan counts the images the run reads: one list of image suffixes (scoreaudit/datafiles.py).

`compiler/plan.py` once listed its own suffixes without `.gif`, so a folder
with `a.png` and `b.gif` was planned as 1 image and run as 2 (issue 29).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
from PIL import Image

from scoreaudit import api, cli
from scoreaudit.compiler.plan import count_images
from scoreaudit.runtime.manifests import load_manifest

SPEC = '''audit "g" { version: 1 seed: 1 bootstrap: 100 }
scorer sharp = sharpness()
arm real = images("imgs", kind: real)
operator blur = gaussian_blur() doses 0, 1, 2
hypothesis H1 "blur: lowers sharpness" { curve(blur) < 0 on real for each scorer }
'''


def project(tmp_path, names):
    (tmp_path / "imgs").mkdir()
    rng = np.random.default_rng(0)
    for n in names:
        Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(tmp_path / "imgs" / n)
    spec = tmp_path / "s.audit"
    spec.write_text(SPEC)
    return spec


def test_png_and_gif_folder_is_planned_as_2_and_run_as_2(tmp_path, capsys):
    spec = project(tmp_path, ["a.png", "b.gif"])
    assert cli.main(["plan", str(spec), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["images"] == {"real": 2}
    out = tmp_path / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["arms"]["real"]["n_images"] == 2 and results["arms"]["real"]["n_excluded"] == 0
    assert results["plan"]["images"] == {"real": 2}
    assert json.loads((out / "run.json").read_text())["counts"]["images"] == {"real": 2}


def test_plan_and_loader_agree_on_every_kind_of_folder_entry(tmp_path):
    """Upper-case suffixes count; a folder named like an image and a non-image file count for neither."""
    spec = project(tmp_path, ["a.png", "b.gif", "C.JPG", "d.webp", "e.tiff", "g.GIF"])
    (tmp_path / "imgs" / "f.png").mkdir()
    (tmp_path / "imgs" / "notes.txt").write_text("not an image")
    arm = api.check(spec).ir.arms["real"]
    planned = count_images(arm, tmp_path)
    res = load_manifest(arm, tmp_path)
    assert res.ok and not res.exclusions
    assert sorted(r.image_id for r in res.records) == ["C", "a", "b", "d", "e", "g"]
    assert planned == len(res.records) == 6


def test_datafiles_imports_no_table_library():
    """The compiler uses it, so importing it must not pull in pandas, polars or pyarrow."""
    code = ("import sys, scoreaudit.datafiles; "
            "print(sorted({'pandas', 'polars', 'pyarrow', 'numpy'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
