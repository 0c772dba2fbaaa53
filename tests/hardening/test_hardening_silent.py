"""Nothing silent: dropped rows are exclusions with reasons, duplicates and animations are warnings, SD 0 says so."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from PIL import Image

from hardening_helpers import project
from scoreaudit import cli

RATED = '''audit "r" { version: 1 seed: 1 bootstrap: 100 }
scorer sharp = sharpness()
arm real = images("data/real", manifest: "data/real.csv", kind: real)
hypothesis A1 "agree" { spearman(score, column: rating) > 0 on real for each scorer
                        pearson(score, column: rating) > 0 on real for each scorer }
'''


def _add_column(d: Path, name: str, values: list[str]) -> None:
    path = d / "data" / "real.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    for r, v in zip(rows, values):
        r[name] = v
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_rows_a_correlation_drops_are_exclusions_counted_as_images(tmp_path):
    d = tmp_path / "p"
    spec = project(d, RATED, n_real=6)
    _add_column(d, "rating", ["1", "2", "", "abc", "5", "6"])
    out = tmp_path / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    res = json.loads((out / "results.json").read_text())
    mine = [e for e in res["exclusions"] if e["stage"] == "statistic"]
    assert {e["image_id"] for e in mine} == {"astro_002", "astro_003"}
    reasons = {e["image_id"]: e["reason"] for e in mine if e["reason"].startswith("spearman")}
    assert "missing" in reasons["astro_002"] and "not a number ('abc')" in reasons["astro_003"]
    assert len(mine) == 4  # two statistics, two images
    assert res["arms"]["real"]["n_excluded"] == 2  # images, not entries
    html = (out / "report.html").read_text()
    assert "2 excluded images (4 entries" in html


def test_duplicate_and_animated_images_are_warnings(tmp_path, capsys):
    d = tmp_path / "p"
    spec = project(d)
    real = d / "data" / "real"
    shutil.copy2(real / "astro_000.png", real / "astro_001.png")  # same pixels under two ids
    im = Image.open(real / "astro_002.png").convert("RGB")
    im.save(real / "astro_002.png", save_all=True, append_images=[im.rotate(90)], duration=100, loop=0)
    assert Image.open(real / "astro_002.png").n_frames == 2
    out = tmp_path / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "identical pixels (astro_000, astro_001)" in err
    assert "astro_002" in err and "animated (2 frames)" in err
    run = json.loads((out / "run.json").read_text())
    assert len(run["warnings"]) == 2 and "warning: arm 'real'" in (out / "run.log").read_text()


def test_an_arm_whose_scores_do_not_vary_says_so(tmp_path):
    d = tmp_path / "p"
    spec = project(d)
    real = d / "data" / "real"
    for i in range(1, 4):
        shutil.copy2(real / "astro_000.png", real / f"astro_00{i}.png")
    out = tmp_path / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    res = json.loads((out / "results.json").read_text())
    reasons = {e["reason"] for e in res["exclusions"] if e["stage"] == "statistic"}
    # whatever is left out says why: never "missing score" when every score is there
    assert all("is 0 (all 4 original images scored the same)" in r for r in reasons), reasons
    assert not any("missing score" in r for r in reasons)
    # the cell itself (scale: sd, the default) is undefined and says why, not a bare "—"
    (cell,) = res["cells"]
    assert cell["outcome"] == "inconclusive" and cell["estimate"] is None
    assert cell["undefined"] == ("the SD of sharp's scores on arm 'real' is 0 (all 4 original images scored the same): "
                                 "a score change in SD units is undefined (use `scale: raw`, or check why sharp "
                                 "gives every image the same score)")
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "is 0 (all 4 original images scored the same)" in html
    # under `scale: raw` the same data gives a defined cell (the originals tie; the shifted images do not)
    raw = spec.read_text().replace("bootstrap: 100", "bootstrap: 100 scale: raw")
    spec.write_text(raw)
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "raw"), "--quiet"]) == 0
    (cell,) = json.loads((tmp_path / "raw" / "results.json").read_text())["cells"]
    assert cell["undefined"] is None and cell["estimate"] is not None and cell["estimate"] > 0


STRATA = '''audit "m" { version: 1 seed: 1 bootstrap: 100 scale: raw }
scorer sharp = sharpness()
arm real = images("data/real", manifest: "data/real.csv", kind: real, strata: race)
operator light = lab_shift(channel: L) doses -5, 0, 5
hypothesis H1 "h" { homogeneous(curve(light), by: race, margin: 0.1) on real for each scorer }
'''


def test_an_image_without_a_stratum_is_an_exclusion_not_dropped(tmp_path):
    """`homogeneous(..., by: race)`: an empty race left the image out of every stratum without a word."""
    d = tmp_path / "p"
    spec = project(d, STRATA, n_real=6)
    _add_column(d, "race", ["a", "b", "a", "", "b", "a"])
    out = tmp_path / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    res = json.loads((out / "results.json").read_text())
    excl = [e for e in res["exclusions"] if e["stage"] == "statistic"]
    assert len(excl) == 1 and "its 'race' value is empty, so it is in no stratum" in excl[0]["reason"]
    (cell,) = res["cells"]
    strata = {s["stratum"]: s["n_clusters"] for s in cell["detail"]["strata"]}
    assert strata == {"a": 3, "b": 2} and cell["detail"]["n_images_without_stratum"] == 1
