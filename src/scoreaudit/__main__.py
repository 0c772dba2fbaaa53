"""`python -m scoreaudit ...`: the same command line as the `scoreaudit` script (e.g. without the venv's bin on PATH)."""

from scoreaudit.cli import entry

entry()
