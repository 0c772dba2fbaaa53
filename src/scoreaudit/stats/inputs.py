"""External tables a statistic reads (`correlate(..., table:)`), kept inside the bundle.

A bundle is data: `scoreaudit report` and `verify` read only files inside the
bundle folder. So `run` copies every table a statistic names into
`inputs/` under a name derived from the spec's text for it (never from a
path, so a crafted ir.json cannot point outside), and the statistics read
the copy.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the run names the copies (input_name) on every run; only the statistics read them
    import pandas as pd

from scoreaudit.compiler.lock import table_params  # the one walker; executor imports it from here

INPUTS_DIR = "inputs"
SUFFIXES = (".csv", ".tsv", ".parquet")


def input_name(table: str) -> str:
    """Bundle-relative name of the copy of the table the spec calls `table`."""
    suffix = Path(table).suffix.lower()
    suffix = suffix if suffix in SUFFIXES else ".csv"
    return f"{INPUTS_DIR}/{hashlib.sha256(table.encode('utf-8')).hexdigest()[:20]}{suffix}"


def read_inputs(bundle: Path, ir_dump: dict) -> dict[str, pd.DataFrame]:
    """The spec's `table:` name → DataFrame, read from the bundle's copies (missing copies are left out)."""
    import pandas as pd

    from scoreaudit.safeio import read_regular

    out: dict[str, pd.DataFrame] = {}
    for table in dict.fromkeys(table_params(ir_dump)):
        path = Path(bundle) / input_name(table)
        try:
            data = read_regular(path, root=bundle)  # a bundle is read only inside itself
        except OSError:
            continue
        try:
            buf = io.BytesIO(data)
            out[table] = (pd.read_parquet(buf) if path.suffix == ".parquet"
                          else pd.read_csv(buf, sep="\t" if path.suffix == ".tsv" else ","))
        except Exception:  # noqa: BLE001 - a malformed copy: the estimator reports the table as unreadable
            continue
    return out
