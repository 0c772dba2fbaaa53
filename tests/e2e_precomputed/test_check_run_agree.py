"""`check` rejects what `run` would reject (issue 26): each case runs both commands and expects one verdict.

A case is a small project whose data exist at check time. `check` must fail
with a located diagnostic exactly when `run` refuses (same code, same line and
column, exit 1: the spec's error, never 3, "environment"), and both must pass
when the spec is fine.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from scoreaudit import cli
from scoreaudit.exitcodes import Exit

HEAD = 'audit "Agree" { version: 1 seed: 3 scale: sd bootstrap: 200 }\n'
PAIRS_ARM = 'arm wide = pairs("data/wide.json", preferred: original, other: distorted, images: false)\n'
ACCURACY = 'hypothesis W1 "acc" {\n  pairwise_accuracy() > 0.5 on wide for each scorer\n}\n'
FACTORS_ARM = 'arm gen = images("data/img", manifest: "data/m.csv", cluster: cluster, factors: [gender, job]{strata})\n'


def _pairs(folder):
    (folder / "data").mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"p{k}", "a": 0.1 * k, "b": 0.05 * k + 0.2, "c": 0.3} for k in range(12)]
    (folder / "data" / "wide.json").write_text(json.dumps(rows), encoding="utf-8")


def _factors(folder):
    """10 clusters × gender × job, scores in a manifest column `s` (a gender gap of 0.5 planted)."""
    rng = np.random.default_rng(0)
    (folder / "data" / "img").mkdir(parents=True, exist_ok=True)
    rows = []
    for c in range(10):
        for g in ("man", "woman"):
            for j in ("doctor", "nurse"):
                i = f"c{c}_{g}_{j}"
                Image.fromarray(rng.integers(0, 255, (8, 8, 3)).astype(np.uint8)).save(folder / "data" / "img" / f"{i}.png")
                rows.append({"id": i, "path": f"{i}.png", "cluster": f"c{c}", "gender": g, "job": j,
                             "race": "A" if c % 2 else "B", "s": rng.normal() + (0.5 if g == "man" else 0.0)})
    pd.DataFrame(rows).to_csv(folder / "data" / "m.csv", index=False)


def _images(folder, rows: int = 24, first_path: str | None = None, first_id: str | None = None):
    """An images arm's files and manifest (scores in column `s`); `first_path`/`first_id` replace row 1's."""
    rng = np.random.default_rng(1)
    (folder / "data" / "img").mkdir(parents=True, exist_ok=True)
    out = []
    for k in range(rows):
        Image.fromarray(rng.integers(0, 255, (8, 8, 3)).astype(np.uint8)).save(folder / "data" / "img" / f"i{k}.png")
        out.append({"id": first_id if k == 0 and first_id is not None else f"i{k}", "path": first_path if k == 0 and first_path else f"i{k}.png",
                    "s": rng.normal(), "r": rng.normal()})
    pd.DataFrame(out, columns=["id", "path", "s", "r"]).to_csv(folder / "data" / "m.csv", index=False)


IMAGES = ('scorer s = precomputed(column: s)\narm a = images("data/img", manifest: "data/m.csv"{policy})\n'
          'hypothesis H "t" {{\n  spearman(column: r) within [-1, 1] on a for each scorer\n}}\n')
DATA = {"pairs": _pairs, "factors": _factors, "images": _images,
        "empty manifest": lambda f: _images(f, rows=0), "missing file": lambda f: _images(f, first_path="gone.png"),
        "empty id": lambda f: _images(f, first_id="")}

GAPS = ('hypothesis G1 "gap" {{\n  difference(group_gap({f}, "{a}", "{b}") where job = "doctor", '
        'group_gap({f}, "{a}", "{b}") where job = "nurse") within [-3, 3] on gen for each scorer\n}}\n')

CASES = {
    # precomputed(...) argument combinations: before, check passed and run stopped with exit 3, no location
    "column and sides": ("pairs", "scorer s = precomputed(column: c, preferred: a, other: b)\n" + PAIRS_ARM + ACCURACY,
                         ("E0303", 2, 35)),
    "one side only": ("pairs", "scorer s = precomputed(preferred: a)\n" + PAIRS_ARM + ACCURACY, ("E0303", 2, 24)),
    # column: on a pairs arm: before, check passed and run excluded every image (every cell undefined)
    "column on a pairs arm": ("pairs", "scorer s = precomputed(column: c)\n" + PAIRS_ARM + ACCURACY,
                              ("E0807", 2, 24)),
    "sides on a pairs arm": ("pairs", "scorer s = precomputed(preferred: a, other: b)\n" + PAIRS_ARM + ACCURACY, None),
    # a comparison of group gaps on a factor: before, check passed and the cell was undefined at run time
    "group gaps on a factor": ("factors", "scorer s = precomputed(column: s)\n" + FACTORS_ARM.format(strata="")
                               + GAPS.format(f="gender", a="man", b="woman"), ("E0477", 5, 14)),
    "group gaps on a stratum": ("factors", "scorer s = precomputed(column: s)\n"
                                + FACTORS_ARM.format(strata=", strata: race") + GAPS.format(f="race", a="A", b="B"),
                                None),
    # a manifest without rows: before, check passed and run stopped with E0705
    "empty manifest": ("empty manifest", IMAGES.format(policy=""), ("E0705", 3, 5)),
    # under on_error: fail a row without an id stops the run (E0708); before, check passed
    "empty id, on_error fail": ("empty id", IMAGES.format(policy=", on_error: fail"), ("E0708", 3, 5)),
    "empty id, on_error skip": ("empty id", IMAGES.format(policy=""), None),  # an exclusion, both pass
    "missing file, on_error skip": ("missing file", IMAGES.format(policy=""), None),  # an exclusion, both pass
}

LOCATED = re.compile(r"a\.audit:(\d+):(\d+): error\[(E\d{4})\]")


CODES = re.compile(r"error\[(E\d{4})\]")


def _verdict(capsys, argv) -> tuple[int, list[tuple[str, int, int]], set[str]]:
    """(exit code, errors located in the spec as (code, line, column), every error code printed)."""
    capsys.readouterr()
    rc = cli.main(argv)
    err = capsys.readouterr().err
    return rc, sorted({(code, int(line), int(col)) for line, col, code in LOCATED.findall(err)}), \
        set(CODES.findall(err))


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_and_run_reach_the_same_verdict(case, tmp_path, capsys, monkeypatch):
    data, text, expected = CASES[case]
    DATA[data](tmp_path)
    spec = tmp_path / "a.audit"
    spec.write_text(HEAD + text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    check_rc, check_errors, check_codes = _verdict(capsys, ["check", "a.audit"])
    run_rc, run_errors, run_codes = _verdict(capsys, ["run", "a.audit", "--out", "out", "--device", "cpu", "--quiet"])
    if expected is None:
        assert (check_rc, run_rc) == (Exit.OK, Exit.OK), (check_errors, run_errors)
        results = json.loads((tmp_path / "out" / "results.json").read_text())
        assert all(c["estimate"] is not None for c in results["cells"]), results["cells"]
        return
    assert check_rc == run_rc == Exit.SPEC
    assert expected in check_errors  # at the spec's line and column
    assert run_codes == check_codes == {expected[0]}  # the run refuses for the same reason
    if run_errors:  # refused by the run's own check: the same located diagnostics
        assert run_errors == check_errors
    assert not (tmp_path / "out").exists()
