"""Process exit codes of the `scoreaudit` command: one table, documented in the README and `--help`.

Scripts and CI gates branch on these numbers, so each meaning has exactly one code
and argparse's own usage code (2) never doubles as an audit outcome.
"""

from __future__ import annotations

from enum import IntEnum


class Exit(IntEnum):
    OK = 0            # success
    SPEC = 1          # the spec has errors (diagnostics printed)
    USAGE = 2         # bad command line (argparse)
    ENVIRONMENT = 3   # missing extra, weights, device or external tool (e.g. pdftotext)
    FAIL_ON = 4       # `run --fail-on` triggered by a cell outcome, `diff --fail-on changed` by a changed cell
    MISMATCH = 5      # `verify` found a mismatch
    IO = 6            # a file or folder is missing, unreadable, unwritable, corrupt or not a bundle
    INTERRUPTED = 130  # Ctrl-C


DESCRIPTIONS: dict[Exit, str] = {
    Exit.OK: "success",
    Exit.SPEC: "the spec has errors",
    Exit.USAGE: "bad command line",
    Exit.ENVIRONMENT: "environment: missing extra, weights, device or tool",
    Exit.FAIL_ON: "--fail-on triggered (run: a cell had a listed outcome; diff: a cell changed)",
    Exit.MISMATCH: "verify found a mismatch",
    Exit.IO: "a file or folder is missing, unreadable, unwritable, corrupt or not a bundle",
    Exit.INTERRUPTED: "interrupted",
}


def epilog() -> str:
    """The exit-code table as `--help` prints it."""
    return "exit codes:\n" + "\n".join(f"  {int(c):>3}  {DESCRIPTIONS[c]}" for c in Exit)
