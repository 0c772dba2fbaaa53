"""Builders for the precomputed-table tests: a spec, its tables (a module name of its own: see conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from scoreaudit import api


def write_table(path: Path, rows: list[dict], fmt: str | None = None) -> Path:
    """Write records as CSV/TSV/parquet/JSON lines/JSON list (by suffix), values as given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = fmt or path.suffix.lstrip(".")
    cols = list(dict.fromkeys(k for r in rows for k in r))
    if fmt in ("csv", "tsv"):
        sep = "\t" if fmt == "tsv" else ","
        lines = [sep.join(cols)] + [sep.join("" if r.get(c) is None else str(r.get(c)) for c in cols) for r in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    elif fmt == "parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    elif fmt == "json":
        path.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    else:  # pragma: no cover - a test bug
        raise ValueError(fmt)
    return path


def check_spec(folder: Path, text: str, name: str = "a.audit"):
    """Compile only (parse + check): the tables these tests write come after the spec."""
    from scoreaudit.compiler.check import check
    from scoreaudit.diagnostics import has_errors

    path = folder / name
    path.write_text(text, encoding="utf-8")
    module, diags = api.parse(text, str(path))
    assert module is not None and not has_errors(diags), [d.message for d in diags]
    ir, diags = check(module, text, str(path))
    assert ir is not None and not has_errors(diags), [d.message for d in diags]
    return ir


WITHIN = '''audit "within" {{ version: 1 seed: 5 scale: raw bootstrap: 200 {settings} }}
scorer ir = precomputed()
scorer pick = pickscore(prompt: "a photo")
arm real = images("data/real", manifest: "data/real.csv", kind: real{arm_extra})
region skin = skin()
measure ita = ita(region: skin)
covariate clip = gamut_clip()
operator light = lab_shift(channel: L, region: skin) doses -10, -5, 0, 5, 10
placebo light_rest = lab_shift(channel: L) of light
select best2 = best_of 2 under light by ita
hypothesis H1 "t" {{
  fidelity_index(light) > 0 on real for ir
}}
{more}
'''


def within_spec(folder: Path, *, settings: str = "", arm_extra: str = ', scores: "results/scores.csv"',
                more: str = ""):
    return check_spec(folder, WITHIN.format(settings=settings, arm_extra=arm_extra, more=more))


def frame_rows(df: pd.DataFrame) -> list[tuple]:
    return [tuple(r) for r in df.itertuples(index=False, name=None)]
