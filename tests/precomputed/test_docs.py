"""spec/precomputed.md documents exactly the codes the precomputed modules emit, with the catalogue's text."""

from __future__ import annotations

import re
from pathlib import Path

from scoreaudit.compiler.coverage import PRECOMPUTED_CODES

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [*sorted((ROOT / "src" / "scoreaudit" / "runtime" / "precomputed").glob("*.py")),
           ROOT / "src" / "scoreaudit" / "compiler" / "coverage.py"]


def test_every_emitted_code_is_in_the_catalogue_entries():
    used = set()
    for p in SOURCES:
        text = p.read_text(encoding="utf-8").split("PRECOMPUTED_CODES:")[0]  # emitted, not catalogued
        used |= set(re.findall(r'"([EW]08\d\d)"', text))
    assert used == {c[0] for c in PRECOMPUTED_CODES}


def test_spec_page_matches_the_catalogue_entries():
    doc = (ROOT / "spec" / "precomputed.md").read_text(encoding="utf-8")
    for code, title, cause, fix, _ in PRECOMPUTED_CODES:
        severity = "warning" if code.startswith("W") else "error"
        block = (f"## {code}: {title}\n\n*{severity}, reported by the run time.*\n\n"
                 f"**Cause.** {cause}\n\n**Fix.** {fix}\n")
        assert block in doc, code
    assert re.findall(r"^## ([EW]\d{4}):", doc, flags=re.M) == [c[0] for c in PRECOMPUTED_CODES]
