"""Grammar-aware mutation fuzzer over every example: parse → check → render → fmt never raise,
never report an internal error (E0001/E0100), and every caret is on the line its offset is on.

Mutations keep the token classes the grammar knows (numbers become extreme numbers,
names become other names of the file or registry entries, strings become hostile paths
and escapes, comparison operators swap), plus line edits (duplicate, delete, swap a
declaration) and comments holding every character `str.splitlines` treats as a line
break. SCOREAUDIT_FUZZ_SEED picks another seed; SCOREAUDIT_FUZZ_N another count.
"""

from __future__ import annotations

import os
import random
import re
import time
from pathlib import Path

import pytest

from scoreaudit.compiler.check import check
from scoreaudit.compiler.fmt import format_module
from scoreaudit.diagnostics import has_errors, render_all, safe_text, source_lines
from scoreaudit.grammar import vocabulary
from scoreaudit.grammar.parser import parse
from scoreaudit.registry import REGISTRIES, load_plugins

pytestmark = pytest.mark.slow  # fuzz: grammar-aware fuzzing (11 s measured)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.audit"))
N = int(os.environ.get("SCOREAUDIT_FUZZ_N", "3000"))
SEED = int(os.environ.get("SCOREAUDIT_FUZZ_SEED", "20261201"))
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[A-Za-z_]\w*|\.\.|[<>]=?|\s+|.', re.S)
NUMBERS = ["0", "-1", "1", "2", "0.5", "-0.0", "1e308", "1e309", "-1e308", "1e-300", "9" * 400, "18446744073709551616",
           "-9223372036854775809", "1000000", "0.0000001", "3.14159", "100", "999", "1001"]
STRINGS = ['""', '"../x.csv"', '"/etc/passwd"', '"\\u001b[31m"', '"a\u2028b"', '"tab\\there"', '"x\\"y"',
           '"data/real.csv"', '"é\u0085ü"', '"' + "s" * 300 + '"']
SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
KEYWORDS = [*vocabulary.KEYWORDS, "column", "score"]  # every keyword of the language, and two common names
COMPARISONS = ["<", ">", "<=", ">=", "within"]


def _names() -> list[str]:
    load_plugins()
    return sorted({n for r in REGISTRIES.values() for n in r.names()})


def _mutate_tokens(rng: random.Random, text: str, names: list[str]) -> str:
    toks = TOKEN.findall(text)
    idx = [i for i, t in enumerate(toks) if not t.isspace() and not t.startswith("#")]
    file_names = [t for t in toks if re.fullmatch(r"[A-Za-z_]\w*", t)]
    for _ in range(rng.randint(1, 3)):
        i = rng.choice(idx)
        t = toks[i]
        if re.fullmatch(r"-?\d[\d.eE+-]*", t):
            toks[i] = rng.choice(NUMBERS)
        elif t.startswith('"'):
            toks[i] = rng.choice(STRINGS)
        elif re.fullmatch(r"[A-Za-z_]\w*", t):
            pool = rng.choice([file_names, names, KEYWORDS])
            toks[i] = rng.choice(pool)
        elif t in ("<", ">", "<=", ">="):
            toks[i] = rng.choice(COMPARISONS)
        else:
            toks[i] = rng.choice(["", t + t, ",", "(", ")", ":", "..", "|", "&", "*"])
    return "".join(toks)


def _mutate_lines(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    op = rng.randrange(4)
    if op == 0:
        lines.insert(j, lines[i])
    elif op == 1 and len(lines) > 1:
        del lines[i]
    elif op == 2:
        lines[i], lines[j] = lines[j], lines[i]
    else:  # a comment (or a string) holding characters other tools count as line breaks
        sep = "".join(rng.choice(SEPARATORS) for _ in range(rng.randint(1, 3)))
        lines[i] = lines[i] + f"  # note{sep}more" if rng.random() < 0.7 else lines[i].replace('"', f'"{sep}', 1)
    return "\n".join(lines)


def mutate(rng: random.Random, text: str, names: list[str]) -> str:
    out = text
    for _ in range(rng.randint(1, 2)):
        out = _mutate_tokens(rng, out, names) if rng.random() < 0.65 else _mutate_lines(rng, out)
    return out


def _caret_line_ok(text: str, d) -> bool:
    """The span's line is the line its start offset is on (the parser counts '\\n' only)."""
    s = d.span
    if s is None:
        return True
    lines = source_lines(text)
    if not 1 <= s.line <= len(lines):
        return False
    if s.start or s.end:
        return text.count("\n", 0, min(s.start, len(text))) + 1 == s.line
    return True


@pytest.mark.timeout(1200)
def test_grammar_aware_fuzz_finds_no_traceback_internal_error_or_misplaced_caret():
    rng = random.Random(SEED)
    names = _names()
    sources = [p.read_text(encoding="utf-8") for p in EXAMPLES]
    assert len(sources) >= 4
    counts = {"mutants": 0, "parsed": 0, "checked_ok": 0}
    problems: list[str] = []
    start = time.perf_counter()
    for n in range(N):
        text = mutate(rng, rng.choice(sources), names)
        counts["mutants"] += 1
        try:  # what `scoreaudit check` and `fmt` do, parsing once
            module, diags = parse(text, "fuzz.audit")
            diags = list(diags)
            if module is not None and not has_errors(diags):
                counts["parsed"] += 1
                ir, more = check(module, text, "fuzz.audit")
                diags += list(more)
                counts["checked_ok"] += ir is not None and not has_errors(more)
                format_module(module)
            rendered = render_all(diags, text)
        except Exception as exc:  # a traceback a user would see
            problems.append(f"#{n} {type(exc).__name__}: {exc} :: {text[:300]!r}")
            continue
        for d in diags:
            if d.code in ("E0001", "E0100"):
                problems.append(f"#{n} internal error {d.code}: {d.message} :: {d.notes} :: {text[:300]!r}")
            elif not _caret_line_ok(text, d):
                problems.append(f"#{n} caret on the wrong line ({d.code} line {d.span.line}): {text[:300]!r}")
        assert "\x1b" not in rendered and "\u2028" not in rendered
    elapsed = time.perf_counter() - start
    print(f"fuzz: {counts} in {elapsed:.1f}s (seed {SEED})")
    assert not problems, "\n".join(safe_text(p) for p in problems[:10]) + f"\n({len(problems)} problems)"
    assert counts["mutants"] >= 3000 or N < 3000
    assert counts["parsed"] > N // 4 and counts["checked_ok"] > 0  # the mutants reach the checker, some pass it
