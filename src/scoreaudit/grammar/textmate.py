"""The VS Code TextMate grammar (`editors/vscode/syntaxes/audit.tmLanguage.json`), made from the vocabulary.

`python -m scoreaudit.grammar.textmate --write` rewrites the file from
`grammar/vocabulary.py`; `--check` exits 1 when the committed file is stale
(tests/editors/test_textmate_generated.py holds it current). The rules are flat
and line-local, like the Pygments lexer in `highlight.py`: no multi-line
regions, so an unfinished block never swallows the rest of the file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from scoreaudit.grammar import vocabulary

#: Where the file lives in a checkout, relative to the repository's root.
RELATIVE_PATH = Path("editors") / "vscode" / "syntaxes" / "audit.tmLanguage.json"

_WORD = "[A-Za-z_][A-Za-z0-9_]*"
_NOT_KEY = "(?![ \\t]*:)"  # a word followed by `:` is a key (as in the grammar: never a keyword)


def _alternation(words) -> str:
    return "|".join(words)


def grammar() -> dict[str, Any]:
    """The TextMate grammar as JSON data."""
    naming = _alternation(vocabulary.NAMING_KEYWORDS)
    statements = _alternation(vocabulary.NAMING_KEYWORDS + vocabulary.BLOCK_KEYWORDS)
    keys_only = [k for k in vocabulary.KEYWORDS_OTHER if k.key_only]
    others = sorted(k.word for k in vocabulary.KEYWORDS_OTHER if not k.key_only)
    keyword_rules: list[dict[str, Any]] = [
        {"match": f"\\b({k.word})\\b(?=[ \\t]*:)", "name": "keyword.other.audit", "comment": k.doc}
        for k in keys_only
    ]
    keyword_rules.append({"match": f"\\b({_alternation(others)})\\b{_NOT_KEY}", "name": "keyword.other.audit"})
    order = ["comment", "string", "declaration", "call", "keyword", "key", "number", "operator", "punctuation",
             "name", "illegal"]
    return {
        "name": "scoreaudit audit",
        "scopeName": "source.audit",
        "fileTypes": ["audit"],
        "comment": "Generated from src/scoreaudit/grammar/vocabulary.py by "
                   "`python -m scoreaudit.grammar.textmate --write`: edit the vocabulary, not this file. "
                   "Flat, line-local rules (no multi-line regions, so an unfinished block never swallows the "
                   "file). A keyword followed by `:` is a key, as in the grammar; `word(` is a call whatever "
                   "the word, so new statistics highlight unchanged; anything else is invalid.illegal.",
        "patterns": [{"include": f"#{name}"} for name in order],
        "repository": {
            "comment": {
                "match": "(#).*$",
                "name": "comment.line.number-sign.audit",
                "captures": {"1": {"name": "punctuation.definition.comment.audit"}},
            },
            "string": {
                "match": '(")((?:[^"\\\\]|\\\\.)*)(")',
                "name": "string.quoted.double.audit",
                "captures": {
                    "1": {"name": "punctuation.definition.string.begin.audit"},
                    "2": {"patterns": [{"match": "\\\\.", "name": "constant.character.escape.audit"}]},
                    "3": {"name": "punctuation.definition.string.end.audit"},
                },
            },
            "declaration": {
                "patterns": [
                    {
                        "match": f"\\b({naming})\\b{_NOT_KEY}[ \\t]+({_WORD})\\b{_NOT_KEY}",
                        "captures": {
                            "1": {"name": "storage.type.declaration.audit"},
                            "2": {"name": "entity.name.declaration.audit"},
                        },
                    },
                    {"match": f"\\b({statements})\\b{_NOT_KEY}", "name": "storage.type.declaration.audit"},
                ]
            },
            "call": {"match": f"\\b({_WORD})(?=[ \\t]*\\()", "name": "entity.name.function.call.audit"},
            "key": {"match": f"\\b({_WORD})(?=[ \\t]*:)", "name": "variable.parameter.key.audit"},
            "keyword": {"patterns": keyword_rules},
            "number": {
                "match": "(?<![A-Za-z0-9_])-?[0-9]+(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?",
                "name": "constant.numeric.audit",
            },
            "operator": {
                "patterns": [
                    {"match": "\\.\\.", "name": "keyword.operator.range.audit"},
                    {"match": ">=|<=|>|<", "name": "keyword.operator.comparison.audit"},
                    {"match": "=", "name": "keyword.operator.assignment.audit"},
                    {"match": "[&|*]", "name": "keyword.operator.audit"},
                ]
            },
            "punctuation": {
                "patterns": [
                    {"match": "\\{", "name": "punctuation.section.block.begin.audit"},
                    {"match": "\\}", "name": "punctuation.section.block.end.audit"},
                    {"match": "\\(", "name": "punctuation.section.parens.begin.audit"},
                    {"match": "\\)", "name": "punctuation.section.parens.end.audit"},
                    {"match": "\\[", "name": "punctuation.section.brackets.begin.audit"},
                    {"match": "\\]", "name": "punctuation.section.brackets.end.audit"},
                    {"match": ",", "name": "punctuation.separator.comma.audit"},
                    {"match": ":", "name": "punctuation.separator.key-value.audit"},
                ]
            },
            "name": {"match": f"\\b{_WORD}\\b", "name": "variable.other.audit"},
            "illegal": {"match": "[^ \\t\\r\\n]", "name": "invalid.illegal.audit"},
        },
    }


def render() -> str:
    """The file's exact text (two-space JSON, a final newline)."""
    return json.dumps(grammar(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scoreaudit.grammar.textmate", description=__doc__.split("\n")[0])
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the file")
    mode.add_argument("--check", action="store_true", help="exit 1 when the file differs from the vocabulary")
    ap.add_argument("--path", type=Path, default=RELATIVE_PATH,
                    help=f"the grammar file (default: {RELATIVE_PATH}, from the repository's root)")
    args = ap.parse_args(argv)
    text = render()
    if args.write:
        args.path.write_text(text, encoding="utf-8")
        return 0
    if args.check:
        current = args.path.read_text(encoding="utf-8") if args.path.is_file() else None
        if current != text:
            print(f"{args.path} is stale: run `python -m scoreaudit.grammar.textmate --write`", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
