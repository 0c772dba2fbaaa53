"""The lock commits to the bytes of every image and mask, titles verbatim; layout is never a deviation."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from containment_helpers import MASK_SPEC, project
from scoreaudit import api, cli
from scoreaudit.exitcodes import Exit
from scoreaudit.reports.lock import lock_status, write_lock

EARLIER, LATER = "2000-01-01T00:00:00Z", "2099-01-01T00:00:00Z"


def _status(spec: Path) -> dict:
    checked = api.check(spec, tables=False)
    assert checked.ok, [d.message for d in checked.diagnostics]
    return lock_status(spec, checked.ir, first_score_at=LATER)


def _items(st: dict) -> list[str]:
    return [d["item"] for d in st["deviations"]]


def _repaint(path: Path) -> None:
    """Change one pixel in place (same format, same name)."""
    img = np.array(Image.open(path).convert("RGB"))
    img[0, 0] = 255 - img[0, 0]
    Image.fromarray(img).save(path)


@pytest.fixture()
def masked(tmp_path) -> Path:
    return project(tmp_path / "p", spec=MASK_SPEC, n_real=3)


def _mask_of(spec: Path, row: int) -> Path:
    rows = list(csv.DictReader((spec.parent / "data/real.csv").open()))
    return spec.parent / "data/real" / rows[row]["face_mask"]


def _image_of(spec: Path, row: int) -> Path:
    rows = list(csv.DictReader((spec.parent / "data/real.csv").open()))
    return spec.parent / "data/real" / rows[row]["path"]


def test_image_pixels_edited_in_place_are_a_deviation(masked):
    write_lock(masked, now=EARLIER)
    _repaint(_image_of(masked, 1))
    st = _status(masked)
    assert st["status"] == "deviation" and _items(st) == ["data files of arm real"]


def test_mask_pixels_edited_in_place_are_a_deviation(masked):
    write_lock(masked, now=EARLIER)
    _repaint(_mask_of(masked, 0))
    st = _status(masked)
    assert st["status"] == "deviation" and _items(st) == ["data files of arm real"]


def test_a_same_size_swap_in_a_folder_arm_is_a_deviation(tmp_path):
    spec = project(tmp_path / "p", spec=MASK_SPEC.replace(', manifest: "data/real.csv"', "").replace(
        "region face = mask(column: face_mask)\n", "").replace("(channel: L, region: face)", "(channel: L)"))
    folder = spec.parent / "data/real"
    files = sorted(p for p in folder.iterdir() if p.suffix == ".png")
    a, b = files[0].read_bytes(), files[1].read_bytes()
    same = max(len(a), len(b))
    files[0].write_bytes(a.ljust(same, b"\0"))  # trailing bytes after IEND: both still decode
    files[1].write_bytes(b.ljust(same, b"\0"))
    write_lock(spec, now=EARLIER)
    files[0].write_bytes(b.ljust(same, b"\0"))  # swapped: same names, same sizes, other pictures
    files[1].write_bytes(a.ljust(same, b"\0"))
    st = _status(spec)
    assert st["status"] == "deviation" and _items(st) == ["data files of arm real"]


def test_unchanged_data_is_not_a_deviation(masked):
    write_lock(masked, now=EARLIER)
    assert _status(masked)["status"] == "pre-registered"


def test_a_title_edit_after_a_colon_is_a_deviation(tmp_path):
    spec = project(tmp_path / "p", spec=MASK_SPEC.replace('hypothesis H1 "h"', 'hypothesis H1 "Light: raises"'))
    write_lock(spec, now=EARLIER)
    spec.write_text(spec.read_text().replace('"Light: raises"', '"Light:raises"'))
    st = _status(spec)
    assert st["status"] == "deviation" and _items(st) == ["hypothesis H1"]


LAYOUT = [  # edits that cannot change an outcome
    ("comment", lambda s: "# a comment\n" + s.replace("scorer sharp", "# another\nscorer sharp")),
    ("whitespace", lambda s: s.replace("doses -5, 0, 5", "doses   -5 ,  0,5").replace("{ curve", "{\n    curve")),
    ("reordering", lambda s: "\n".join([s.splitlines()[0], s.splitlines()[3], s.splitlines()[1],
                                        s.splitlines()[2], *s.splitlines()[4:]]) + "\n"),
]


@pytest.mark.parametrize("what, edit", LAYOUT, ids=[e[0] for e in LAYOUT])
def test_layout_is_not_a_deviation(masked, what, edit):
    write_lock(masked, now=EARLIER)
    masked.write_text(edit(masked.read_text()))
    assert api.check(masked, tables=False).ok
    st = _status(masked)
    assert st["status"] == "pre-registered" and st["spec_changed"], st["detail"]


def test_fmt_is_not_a_deviation(masked):
    write_lock(masked, now=EARLIER)
    assert cli.main(["fmt", "--write", str(masked)]) == 0
    assert _status(masked)["status"] == "pre-registered"


def test_deleting_the_cache_does_not_make_a_late_lock_early(masked, capsys):
    assert cli.main(["run", str(masked), "--out", str(masked.parent / "out"), "--quiet"]) == 0
    shutil.rmtree(masked.parent / ".scoreaudit")
    assert cli.main(["lock", str(masked)]) == Exit.USAGE  # the bundle under the project holds its scores
    assert "scores of this spec exist already" in capsys.readouterr().err


def test_run_prints_the_deviations(masked, capsys):
    write_lock(masked, now=EARLIER)
    masked.write_text(masked.read_text().replace("doses -5, 0, 5", "doses -5, 0, 5, 10"))
    _repaint(_image_of(masked, 0))
    assert cli.main(["run", str(masked), "--out", str(masked.parent.parent / "o"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "pre-registration: deviation" in out
    assert "  operator light: changed" in out and "  data files of arm real: changed" in out


def test_a_prompts_file_edit_is_a_deviation(tmp_path):
    """A generated arm names its prompts file; the lock commits to its lines, not only to its name."""
    d = tmp_path / "p"
    d.mkdir()
    (d / "prompts.txt").write_text("a portrait of a nurse\na portrait of a doctor\n")
    (d / "g.audit").write_text('''audit "g" { version: 1 seed: 1 bootstrap: 100 }
scorer sharp = sharpness()
arm gen = generate("org/pipe", prompts: "prompts.txt", seeds: 1, steps: 2, size: 32, kind: synthetic)
operator blur = gaussian_blur() doses 0, 1, 2
hypothesis H1 "h" { curve(blur) < 0 on gen for each scorer }
''')
    spec = d / "g.audit"
    write_lock(spec, now=EARLIER)
    assert _status(spec)["status"] == "pre-registered"
    (d / "prompts.txt").write_text("a portrait of a nurse\na portrait of a CEO\n")
    st = _status(spec)
    assert st["status"] == "deviation" and _items(st) == ["data prompts of arm gen"]
