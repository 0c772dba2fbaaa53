"""The VS Code TextMate grammar is generated from the vocabulary, and the committed file is current."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scoreaudit.grammar import textmate, vocabulary

ROOT = Path(__file__).resolve().parents[2]
GRAMMAR = ROOT / textmate.RELATIVE_PATH


def test_committed_grammar_is_generated_from_the_vocabulary():
    assert GRAMMAR.read_text(encoding="utf-8") == textmate.render(), \
        "stale: run `python -m scoreaudit.grammar.textmate --write`"


def test_every_keyword_is_in_the_generated_rules():
    rules = textmate.grammar()["repository"]
    declaration = json.dumps(rules["declaration"])
    keyword = json.dumps(rules["keyword"])
    for word in vocabulary.STATEMENT_KEYWORDS:
        assert f"|{word}|" in declaration or f"({word}|" in declaration or f"|{word})" in declaration
    for word in vocabulary.OTHER_KEYWORDS:
        assert f"|{word}|" in keyword or f"({word}|" in keyword or f"|{word})" in keyword or f"({word})" in keyword


def test_check_fails_on_a_stale_file_and_write_repairs_it(tmp_path):
    stale = tmp_path / "audit.tmLanguage.json"
    stale.write_text(GRAMMAR.read_text(encoding="utf-8").replace("|probe", ""), encoding="utf-8")
    run = [sys.executable, "-m", "scoreaudit.grammar.textmate", "--path", str(stale)]
    out = subprocess.run(run + ["--check"], capture_output=True, text=True)
    assert out.returncode == 1 and "stale" in out.stderr
    assert subprocess.run(run + ["--write"]).returncode == 0
    assert stale.read_text(encoding="utf-8") == textmate.render()
    assert subprocess.run(run + ["--check"]).returncode == 0
