"""Pre-registration: lock, then judge runs against the lock (pre-registered / deviation / not)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LATER, EARLIER = "2099-01-01T00:00:00Z", "2000-01-01T00:00:00Z"

from scoreaudit import api
from scoreaudit.diagnostics import DiagnosticError
from scoreaudit.reports.lock import lock_path, lock_status, normalise, write_lock, write_lock_status


@pytest.fixture()
def spec(tmp_path) -> Path:
    p = tmp_path / "skin_tone.audit"
    shutil.copy2(ROOT / "examples" / "skin_tone.audit", p)
    return p


def _ir(path: Path):
    checked = api.check(path)
    assert checked.ok, [d.message for d in checked.diagnostics]
    return checked.ir


def test_lock_file_contents(spec):
    import hashlib

    out = write_lock(spec, now="2026-11-28T08:00:00Z")
    assert out == lock_path(spec) and out.name == "skin_tone.audit.lock"
    lock = json.loads(out.read_text())
    assert lock["spec_sha256"] == hashlib.sha256(spec.read_bytes()).hexdigest()
    assert sorted(lock["hypotheses"]) == ["H1", "H2", "H3", "H4", "H5", "H6"]
    assert lock["locked_at"] == "2026-11-28T08:00:00Z" and lock["tool"]["name"] == "scoreaudit"
    assert len(lock["hypotheses_sha256"]) == 64


def test_lock_time_is_utc_iso8601(spec):
    from datetime import datetime, timezone

    lock = json.loads(write_lock(spec).read_text())
    t = datetime.fromisoformat(lock["locked_at"].replace("Z", "+00:00"))
    assert t.tzinfo is not None and abs((datetime.now(timezone.utc) - t).total_seconds()) < 120


def test_pre_registered_when_locked_before_scoring(spec):
    write_lock(spec, now=EARLIER)
    st = lock_status(spec, _ir(spec), first_score_at="2026-11-29T10:00:00Z")
    assert st["status"] == "pre-registered" and st["deviations"] == [] and not st["spec_changed"]


def test_formatting_and_comments_are_not_deviations(spec):
    write_lock(spec, now=EARLIER)
    text = spec.read_text()
    text = text.replace("fidelity_index(light) > 0 on real", "fidelity_index( light )  >  0   # reformatted\n   on real")
    spec.write_text(text + "\n# a trailing comment\n")
    st = lock_status(spec, _ir(spec), first_score_at=LATER)
    assert st["status"] == "pre-registered", st
    assert st["spec_changed"] is True


def test_changed_added_removed_hypotheses_are_named(spec):
    write_lock(spec, now=EARLIER)
    text = spec.read_text()
    text = text.replace("abs(asymmetry(light)) < 0.05", "abs(asymmetry(light)) < 0.10")  # H2 changed
    start = text.index('hypothesis H5 "')
    end = text.index("}", start) + 1
    text = text[:start] + text[end:]  # H5 removed
    text = text.replace("report {", 'hypothesis H7 "Hue matters" {\n  fidelity_index(hue) > 0 on real for each scorer\n}\n\nreport {')
    spec.write_text(text)
    st = lock_status(spec, _ir(spec), first_score_at=LATER)
    assert st["status"] == "deviation"
    assert [(d["hypothesis"], d["change"]) for d in st["deviations"]] == [
        ("H2", "changed"), ("H5", "removed"), ("H7", "added")]
    assert "hypothesis H2 (changed)" in st["detail"]
    h2 = st["deviations"][0]
    assert "0.05" in h2["locked"] and "0.1" in h2["current"]


def test_changed_title_is_a_deviation(spec):
    write_lock(spec, now=EARLIER)
    spec.write_text(spec.read_text().replace("Scorers prefer the unaltered image", "Scorers like originals"))
    st = lock_status(spec, _ir(spec), first_score_at=LATER)
    assert [(d["item"], d["change"]) for d in st["deviations"]] == [("hypothesis H1", "changed")]


def test_no_lock_or_late_lock_is_not_pre_registered(spec):
    st = lock_status(spec, _ir(spec), first_score_at=LATER)
    assert st["status"] == "not pre-registered" and "No lock file" in st["detail"]
    write_lock(spec, now="2026-11-30T00:00:00Z")
    st = lock_status(spec, _ir(spec), first_score_at="2026-11-29T10:00:00Z")
    assert st["status"] == "not pre-registered" and "postdates the first score" in st["detail"]
    assert "Locked after scoring began" in st["detail"]


def test_write_lock_rejects_a_spec_with_errors(tmp_path):
    bad = tmp_path / "bad.audit"
    bad.write_text('audit "x" { version: 1 }\nscorer s = no_such_scorer()\n')
    with pytest.raises(DiagnosticError):
        write_lock(bad)
    assert not lock_path(bad).exists()


def test_write_lock_status_reads_run_json(spec, tmp_path):
    write_lock(spec, now=EARLIER)
    bundle = tmp_path / "out"
    bundle.mkdir()
    (bundle / "run.json").write_text(json.dumps({"first_score_at": "2026-11-29T10:00:00Z"}))
    st = write_lock_status(bundle, spec, _ir(spec))
    on_disk = json.loads((bundle / "lock.json").read_text())
    assert on_disk == st and st["status"] == "pre-registered" and st["first_score_at"] == "2026-11-29T10:00:00Z"


def test_normalise_keeps_strings_and_drops_comments():
    assert normalise('a( b ,c )  # note\n d "x  # y"') == 'a(b,c)d "x  # y"'
    assert normalise("x < 0.05") != normalise("x < 0.10")


def test_cli_lock(spec, capsys):
    from scoreaudit.cli import main

    assert main(["lock", str(spec)]) == 0
    assert "locked:" in capsys.readouterr().out and lock_path(spec).exists()


def test_the_deviation_box_shows_each_deviation_once_with_locked_and_current_text(spec, tmp_path):
    """The report's box: every changed item once (in the table, not again in a sentence above it), its locked
    and current text side by side with the changed words marked, the lock's hash in the small print."""
    import re

    from fixture_bundle import BUILDERS
    from scoreaudit.reports.context import ReportContext
    from scoreaudit.reports.render import render_html

    write_lock(spec, now=EARLIER)
    spec.write_text(spec.read_text().replace("abs(asymmetry(light)) < 0.05", "abs(asymmetry(light)) < 0.10")
                    .replace("alpha: 0.05", "alpha: 0.1"))
    st = lock_status(spec, _ir(spec), first_score_at=LATER)
    assert st["status"] == "deviation" and {d["item"] for d in st["deviations"]} == {"hypothesis H2", "setting alpha"}
    d = BUILDERS["skin_tone"](tmp_path / "b")
    res = json.loads((d / "results.json").read_text())
    res["lock"] = st
    (d / "results.json").write_text(json.dumps(res))
    html = render_html(ReportContext.load(d))
    box = html[html.index('<section id="preregistration"'):]
    box = box[:box.index("</section>")]
    text = re.sub(r"<[^>]+>", "", box)
    for item in ("hypothesis H2", "setting alpha"):
        assert text.count(item) == 1, (item, text)
    assert "2 items differ from the lock" in text
    rows = re.findall(r"<tr>(.*?)</tr>", box, re.S)
    h2 = next(r for r in rows if "hypothesis H2" in r)
    locked, now = re.findall(r"<td[^>]*><code>(.*?)</code></td>", h2)
    assert "<mark>0.05</mark>" in locked and "<mark>0.10</mark>" in now  # the change, marked
    assert "asymmetry(light)" in re.sub(r"<[^>]+>", "", locked)  # the rest unmarked, in full
    alpha = next(r for r in rows if "setting alpha" in r)
    assert "<mark>0.05</mark>" in alpha and "<mark>0.1</mark>" in alpha
    assert st["lock_sha256"] in box and "self-attested" in text
