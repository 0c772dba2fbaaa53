"""`scoreaudit weights SPEC` totals what is missing (issue 30): each file once, at the size its scorer documents."""

from __future__ import annotations

from pathlib import Path

from scoreaudit import cli
from scoreaudit.runtime.weights import about_bytes

ROOT = Path(__file__).resolve().parents[2]


def test_documented_sizes_parse():
    assert about_bytes("about 3.9 GB") == 3_900_000_000
    assert about_bytes("about 3.7 MB") == 3_700_000
    assert about_bytes("a few KB") == 5_000
    assert about_bytes("") is None


def test_skin_tone_needs_about_9_4_gb(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cli.main(["weights", str(ROOT / "examples" / "skin_tone.audit")])
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith("missing: 14 files, about 9.40 GB to download"), last
