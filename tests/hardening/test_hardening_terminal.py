"""Spec, data and command-line text reaches the terminal shown, never obeyed (issue 27).

A group_gap level holding ESC/BEL/CSI (C1)/a bidi override, matching a manifest's stratum value, makes a
refuted cell whose sentence quotes the claim; `--out` holds an ESC too. Before the fix `run` printed the
sentence, the `--fail-on` lines and the report path raw (an ANSI colour change, a bell, a reordered line).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from hardening_helpers import make_demo_data

from scoreaudit import cli
from scoreaudit.exitcodes import Exit
from scoreaudit.plainprogress import PlainLines
from scoreaudit.termsafe import safe_text

EVIL = "da\x1b[31mrk\x07\x9b2J\u202e"  # ESC colour, BEL, C1 CSI (clear screen), right-to-left override
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
SPEC = ('audit "t" {{ version: 1 seed: 1 bootstrap: 100 }}\n'
        'scorer sharp = sharpness()\n'
        'arm syn = images("data/synthetic", manifest: "data/synthetic.csv", kind: synthetic, cluster: prompt_id, '
        'factors: [tone])\n'
        'hypothesis H "h" {{ group_gap(tone, "{level}", "light") > 100 on syn for each scorer }}\n')


def _project(d: Path) -> Path:
    make_demo_data.build(d / "data", n_real=2, n_prompts=6)
    path = d / "data" / "synthetic.csv"
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    for r in rows:
        r["tone"] = EVIL if r["tone"] == "dark" else r["tone"]
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    spec = d / "t.audit"
    spec.write_text(SPEC.format(level=EVIL), encoding="utf-8")
    return spec


def test_run_prints_spec_data_and_out_strings_escaped(tmp_path, capsys):
    spec = _project(tmp_path / "p")
    assert cli.main(["check", str(spec)]) == Exit.OK  # the literal is a valid spec: escaping is the printer's job
    capsys.readouterr()
    out_dir = tmp_path / "o\x1b]0;pwned\x07ut"
    rc = cli.main(["run", str(spec), "--out", str(out_dir), "--fail-on", "refuted"])  # progress lines on
    got = capsys.readouterr()
    assert rc == Exit.FAIL_ON, got.err
    assert "refuted:" in got.out and "--fail-on refuted: 1 cell(s)" in got.err
    for stream in (got.out, got.err):
        assert not RAW.findall(stream), RAW.findall(stream)
    visible = safe_text(EVIL)
    assert visible in got.out and visible in got.err  # shown, escaped: the sentence still names the level
    assert "o\\x1b]0;pwned\\x07ut" in got.out  # the report path under --out
    # re-rendering a bundle whose manifest is gone warns with the bundle's path: escaped too
    (out_dir / "manifest.json").unlink()
    cli.main(["report", str(out_dir)])
    got = capsys.readouterr()
    assert "o\\x1b]0;pwned\\x07ut" in got.out + got.err
    for stream in (got.out, got.err):
        assert not RAW.findall(stream), RAW.findall(stream)


def test_check_shows_the_offending_line_escaped(tmp_path, capsys):
    spec = _project(tmp_path / "p")
    bad = spec.read_text(encoding="utf-8").replace("on syn", "on sny")  # an error on the literal's line
    spec.write_text(bad, encoding="utf-8")
    assert cli.main(["check", str(spec)]) == Exit.SPEC
    got = capsys.readouterr()
    assert not RAW.findall(got.err) and "\\x1b[31m" in got.err


def test_progress_lines_and_logs_escape_labels_and_messages():
    buf = io.StringIO()
    lines = PlainLines(buf, every=0)
    lines.add("arm \x1b[2J", 1)
    lines.advance("arm \x1b[2J", 1)
    lines.log("warning: \x1b]8;;http://x\x07link\u202e")
    assert not RAW.findall(buf.getvalue()) and "\\x1b[2J" in buf.getvalue() and "\\u202e" in buf.getvalue()


def test_escaping_is_idempotent_and_keeps_ordinary_text():
    for s in ("plain text, ünïcödé, 日本語", EVIL, "a\tb\nc"):
        once = safe_text(s, keep_newlines=True)
        assert safe_text(once, keep_newlines=True) == once
    assert safe_text("plain text, ünïcödé, 日本語") == "plain text, ünïcödé, 日本語"
    assert safe_text("a\nb") == "a\\nb" and safe_text("a\nb", keep_newlines=True) == "a\nb"
