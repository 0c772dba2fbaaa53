"""Pre-registration commits to everything that can change an outcome; late locks are said to be late."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hardening_helpers import project
from scoreaudit import api, cli
from scoreaudit.compiler.lock import lock_items
from scoreaudit.exitcodes import Exit
from scoreaudit.reports.lock import LockRefused, lock_path, lock_status, write_lock

ROOT = Path(__file__).resolve().parents[2]
EARLIER, LATER = "2000-01-01T00:00:00Z", "2099-01-01T00:00:00Z"


@pytest.fixture()
def spec(tmp_path) -> Path:
    p = tmp_path / "skin_tone.audit"
    shutil.copy2(ROOT / "examples" / "skin_tone.audit", p)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "real.csv").write_text("id,path,race\na,a.png,x\n")
    (tmp_path / "data" / "other.csv").write_text("id,path,race\nb,b.png,y\n")
    return p


def _status(spec: Path) -> dict:
    checked = api.check(spec, tables=False)
    assert checked.ok, [d.message for d in checked.diagnostics]
    return lock_status(spec, checked.ir, first_score_at=LATER)


EDITS = [  # (what, old, new, the item that must be named)
    ("alpha", "alpha: 0.05", "alpha: 0.5", "setting alpha"),
    ("correction", "correction: bh", "correction: none", "setting correction"),
    ("bootstrap", "bootstrap: 10000", "bootstrap: 1000", "setting bootstrap"),
    ("new doses", "doses 0, 1, 2, 4", "doses 0, 1, 2, 4, 8", "operator blur"),
    ("new scorer", "scorer hps", 'scorer sharp = sharpness()\nscorer hps', "scorer sharp"),
    ("scorer parameter", 'hpsv2(version: "2.1"', 'hpsv2(version: "2.0"', "scorer hps"),
    ("another manifest", 'manifest: "data/real.csv"', 'manifest: "data/other.csv"', "arm real"),
    ("region", "region face = face()", "region face = face(pad: 0.3)", "region face"),
    ("placebo", "placebo light_rest = lab_shift(channel: L, region: rest)",
     "placebo light_rest = lab_shift(channel: a, region: rest)", "placebo light_rest"),
    ("measure", "measure ita = ita(region: skin)", "measure ita = ita(region: face)", "measure ita"),
    ("selection", "best_of 4 under light", "best_of 3 under light", "select best4"),
    ("validation", "r2 >= 0.5", "r2 >= 0.1", "validate ita under light"),
]


@pytest.mark.parametrize("what, old, new, item", EDITS, ids=[e[0] for e in EDITS])
def test_every_outcome_changing_edit_is_a_named_deviation(spec, what, old, new, item):
    write_lock(spec, now=EARLIER)
    text = spec.read_text()
    assert old in text
    spec.write_text(text.replace(old, new, 1))
    st = _status(spec)
    assert st["status"] == "deviation", st["detail"]
    named = {d["item"]: d for d in st["deviations"]}
    assert item in named, named
    d = named[item]
    if d["change"] == "changed":
        assert d["locked"] != d["current"] and d["locked"] and d["current"]


def test_changed_manifest_content_is_a_deviation(spec):
    write_lock(spec, now=EARLIER)
    (spec.parent / "data" / "real.csv").write_text("id,path,race\na,a.png,z\n")
    st = _status(spec)
    assert st["status"] == "deviation"
    assert [d["item"] for d in st["deviations"]] == ["data data/real.csv"]


def test_comments_layout_and_explicit_defaults_are_not_deviations(spec):
    write_lock(spec, now=EARLIER)
    text = spec.read_text().replace("scale: sd", "scale: sd\n  # a new comment\n  test: ttest")
    text = text.replace("doses -15, -10, -5, 0, 5, 10, 15", "doses   -15,-10, -5,0,  5, 10 ,15   # same")
    spec.write_text(text)
    st = _status(spec)
    assert st["status"] == "pre-registered", st["deviations"]
    assert "self-attested" in st["detail"] and st["lock_sha256"] in st["detail"]


def test_lock_items_are_canonical_text():
    checked = api.check(ROOT / "examples" / "skin_tone.audit", tables=False)
    items = lock_items(checked.ir)
    assert items["setting alpha"] == "0.05" and items["setting correction"] == '"bh"'
    assert items["operator light"].endswith("doses -15.0, -10.0, -5.0, 0.0, 5.0, 10.0, 15.0")
    assert "hypothesis H2" in items and "setting title" not in items


def test_lock_refuses_when_scores_exist_and_records_after_scoring(tmp_path, capsys):
    spec = project(tmp_path / "p")
    assert cli.main(["run", str(spec), "--quiet"]) == 0  # default cache next to the spec, bundle under out/
    capsys.readouterr()
    assert cli.main(["lock", str(spec)]) == Exit.USAGE
    assert "--after-scoring" in capsys.readouterr().err and not lock_path(spec).exists()
    with pytest.raises(LockRefused):
        write_lock(spec)
    assert cli.main(["lock", str(spec), "--after-scoring"]) == 0
    lock = json.loads(lock_path(spec).read_text())
    assert lock["after_scoring"] is True and lock["scores_seen"]["first_score_seen"]
    # a fresh cache after re-locking does not launder the late lock
    out = tmp_path / "fresh"
    assert cli.main(["run", str(spec), "--out", str(out), "--cache", str(tmp_path / "new.sqlite"), "--quiet"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["lock"]["status"] == "not pre-registered"
    assert "Locked after scoring began" in res["lock"]["detail"]
    html = (out / "report.html").read_text()
    assert "Locked after scoring began" in html and "self-attested" in html


def test_a_lock_before_scoring_is_pre_registered_and_a_later_edit_is_listed_in_the_report(tmp_path):
    spec = project(tmp_path / "p")
    assert cli.main(["lock", str(spec)]) == 0
    spec.write_text(spec.read_text().replace("bootstrap: 100", "bootstrap: 100 alpha: 0.5"))
    out = tmp_path / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["lock"]["status"] == "deviation"
    assert [(d["item"], d["locked"], d["current"]) for d in res["lock"]["deviations"]] == [
        ("setting alpha", "0.05", "0.5")]
    html = (out / "report.html").read_text()
    assert "setting alpha" in html and "DEVIATION" in html


def test_reports_lock_does_not_parse_or_check_specs():
    text = (ROOT / "src" / "scoreaudit" / "reports" / "lock.py").read_text()
    assert "grammar.parser" not in text and "compiler.check" not in text
