"""`python -m scoreaudit ...`: the same command line as the `scoreaudit` script (e.g. without the venv's bin on PATH)."""

import sys

from scoreaudit.cli import main

sys.exit(main())
