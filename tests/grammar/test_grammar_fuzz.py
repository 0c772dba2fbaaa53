"""Fuzz: 10,000+ seeded mutations of the examples never make `parse` raise, and every
diagnostic points inside the file. Inputs that parse also go through the checker
and through `fmt`, which must not raise either."""

from __future__ import annotations

import random
import re
import time

from grammar_testutil import EXAMPLES

from scoreaudit.compiler.check import check
from scoreaudit.compiler.fmt import format_module
from scoreaudit.grammar.ast import strip_spans
from scoreaudit.grammar.parser import parse

N_INPUTS = 10_000
SEED = 20261129
TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|-?\d+(?:\.\d+)?|[A-Za-z_]\w*|\.\.|[<>]=?|\s+|.', re.S)
JUNK = ['"', "{", "}", "(", ")", "[", "]", ",", ":", "=", "..", ".", "-", "#", "\\", "\x00", "\ufeff",
        "\r", "\n", "\t", "é", "\u2028", "\x1c", "not", "doses", "for each scorer", "abs(", "1e", "-0.5",
        "audit", "on", "step", "'", ";", "*", "&", "|", "\udcff"]


def _mutate(rng: random.Random, text: str) -> str:
    kind = rng.randrange(7)
    if kind == 0:  # random character edits
        chars = list(text)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(chars) + 1)
            op = rng.randrange(3)
            piece = rng.choice(JUNK) if rng.random() < 0.7 else chr(rng.randrange(0, 0x3000))
            if op == 0:
                chars.insert(i, piece)
            elif op == 1 and chars:
                del chars[min(i, len(chars) - 1)]
            elif chars:
                chars[min(i, len(chars) - 1)] = piece
        return "".join(chars)
    if kind == 1:  # truncation
        return text[: rng.randrange(len(text) + 1)]
    if kind == 6:  # random bytes decoded as latin-1 / utf-8 with junk
        raw = bytes(rng.randrange(256) for _ in range(rng.randint(0, 80)))
        return raw.decode("latin-1") if rng.random() < 0.5 else raw.decode("utf-8", "replace")
    toks = TOKEN.findall(text)
    code = [i for i, t in enumerate(toks) if not t.isspace()]
    if not code:
        return text
    for _ in range(rng.randint(1, 3)):
        i, j = rng.choice(code), rng.choice(code)
        if kind == 2:  # swap two tokens
            toks[i], toks[j] = toks[j], toks[i]
        elif kind == 3:  # delete a token
            toks[i] = ""
        elif kind == 4:  # duplicate a token
            toks[i] = toks[i] + " " + toks[i]
        else:  # replace a token by another from the file
            toks[i] = toks[j]
    return "".join(toks)


def _sources() -> list[str]:
    texts = [p.read_text(encoding="utf-8") for p in EXAMPLES]
    out = []
    for t in texts:
        lines = t.split("\n")
        out.append(t)
        # smaller windows keep the run fast and put errors everywhere
        for k in range(0, len(lines), 4):
            out.append('audit "w" { version: 1 }\n' + "\n".join(lines[k : k + 8]))
    return out


def test_fuzz_parse_never_raises_and_spans_stay_inside():
    rng = random.Random(SEED)
    sources = _sources()
    n_parsed = n_checked = 0
    start = time.perf_counter()
    for n in range(N_INPUTS):
        text = _mutate(rng, rng.choice(sources))
        if rng.random() < 0.1:
            text = _mutate(rng, text)
        module, diags = parse(text, "fuzz.audit")  # must not raise
        n_lines = text.count("\n") + 1
        for d in diags:
            assert d.code.startswith("E01") or d.code == "E0472", (text, d)  # E0472: the parser's own (readings compared with <)
            assert d.span is not None and d.message and d.help, (text, d)
            s = d.span
            assert 1 <= s.line <= n_lines and 1 <= s.end_line <= n_lines, (text, d)
            assert 0 <= s.start <= s.end <= len(text), (text, d)
            assert s.column >= 1, (text, d)
        if module is not None:
            n_parsed += 1
            assert diags == []
            out = format_module(module)
            assert strip_spans(parse(out)[0]) == strip_spans(module), (text, out)
            check(module, text, "fuzz.audit")  # must not raise
            n_checked += 1
    elapsed = time.perf_counter() - start
    # the mutations must exercise both paths
    assert 200 < n_parsed < N_INPUTS - 2000, n_parsed
    print(f"fuzz: {N_INPUTS} inputs, {n_parsed} parsed, {n_checked} checked, {elapsed:.1f}s")


def test_pathological_inputs():
    cases = [
        "",
        "\x00" * 1000,
        "(" * 100_000,
        'audit "t" { v: 1 }\nregion r = ' + "(" * 50_000 + "a" + ")" * 50_000,
        'audit "t" { v: 1 }\nregion r = ' + " | ".join(["a"] * 5000),
        'audit "t" { v: 1 }\nregion r = ' + "not " * 5000 + "a",
        'audit "t" { v: 1 }\nscorer s = f(' + "[" * 3000 + "]" * 3000 + ")",
        '"' * 10_000,
        "\ufeff" + 'audit "t" { v: 1 }',
        "audit " + "x" * 100_000,
        "\n" * 100_000 + "}",
        "\r\r\r\n\r",
        "# c\n" * 10_000,
        'audit "t" { v: 1 }\n' + "scorer s = f()\n" * 3000 + "oops",
        'audit "t" { v: 1 }\n' + "scorer s = f(\n" * 200,
    ]
    for text in cases:
        module, diags = parse(text)
        n_lines = text.count("\n") + 1
        for d in diags:
            assert 1 <= d.span.line <= n_lines
        assert len(diags) <= 20
    assert parse("\ufeff" + 'audit "t" { v: 1 }')[0] is not None
