"""`scoreaudit verify DIR`: recompute every reported number from the bundle's runtime tables.

Three checks, each naming what differs:
1. Re-analysis: the runtime tables, ir.json and the run/lock/plan records are
   copied to a temporary folder and analysed afresh; every leaf of the fresh
   results.json is compared with the bundle's (numbers to a relative 1e-9), by
   JSON path ("cells[H1/laion/real].estimate: results.json says 0.071, tables
   give 0.069"). A hand-edited runtime table changes the fresh numbers; a
   hand-edited results.json differs from them.
2. Derived tables (cells.parquet, curves.parquet, ...) against the fresh ones,
   and table hashes when results.json records them (`table_sha256`).
3. The report: report.html is re-rendered from results.json and compared, so
   a hand-edited report is caught (the first differing numbers are named).
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from html import unescape
from pathlib import Path
from typing import Any

RUNTIME_TABLES = ("images", "scores", "measures", "regions", "exclusions", "probe",  # probe: optimisation probes
                  "probe_prompts")
RECORDS = ("ir.json", "run.json", "lock.json", "plan.json", "spec.audit", "run.log")
# keys whose values legitimately differ between two analyses of the same tables
VOLATILE = {"bundle", "environment", "tool"}
ID_KEYS = ("hypothesis", "selection", "scorer", "arm", "operator", "placebo", "measure", "factor", "level", "name",
           "method", "column", "source", "target", "dose", "cell")
RTOL, ATOL = 1e-9, 1e-12
MAX_REPORTED = 50


def _label(item: Any, index: int) -> str:
    if isinstance(item, dict):
        if item.get("id") is not None:
            return str(item["id"])
        parts = [f"{item[k]}" if k != "dose" else f"dose={item[k]}" for k in ID_KEYS
                 if k in item and isinstance(item[k], (str, int, float)) and not isinstance(item[k], bool)]
        if parts:
            return "/".join(parts)
    return str(index)


def _show(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, str) and len(v) > 60:
        return repr(v[:57] + "...")
    return repr(v) if isinstance(v, str) else str(v)


def _same_number(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=RTOL, abs_tol=ATOL)


def compare(stated: Any, fresh: Any, path: str = "") -> Iterator[str]:
    """Every difference between two JSON values, as 'PATH: results.json says X, tables give Y'."""
    where = path or "(root)"
    if isinstance(stated, dict) and isinstance(fresh, dict):
        for k in list(stated) + [k for k in fresh if k not in stated]:
            if k in VOLATILE and not path:
                continue
            sub = f"{path}.{k}" if path else str(k)
            if k not in fresh:
                yield f"{sub}: results.json has it, the re-analysis does not"
            elif k not in stated:
                yield f"{sub}: missing from results.json (the re-analysis gives {_show(fresh[k])})"
            else:
                yield from compare(stated[k], fresh[k], sub)
        return
    if isinstance(stated, list) and isinstance(fresh, list):
        ls = [_label(x, i) for i, x in enumerate(stated)]
        lf = [_label(x, i) for i, x in enumerate(fresh)]
        if len(set(ls)) == len(ls) and len(set(lf)) == len(lf) and set(ls) == set(lf):
            by = dict(zip(lf, fresh))
            for lab, x in zip(ls, stated):
                yield from compare(x, by[lab], f"{path}[{lab}]")
            return
        if len(stated) != len(fresh):
            yield f"{where}: results.json lists {len(stated)} entries, the tables give {len(fresh)}"
            return
        for i, (x, y) in enumerate(zip(stated, fresh)):
            yield from compare(x, y, f"{path}[{ls[i]}]")
        return
    num = (int, float)
    if isinstance(stated, num) and isinstance(fresh, num) and not isinstance(stated, bool) and not isinstance(fresh, bool):
        if not _same_number(float(stated), float(fresh)):
            yield f"{where}: results.json says {_show(stated)}, tables give {_show(fresh)}"
        return
    if stated != fresh:
        yield f"{where}: results.json says {_show(stated)}, tables give {_show(fresh)}"


def _reanalyse(bundle: Path, work: Path) -> dict:
    from scoreaudit.stats.engine import analyse

    (work / "tables").mkdir(parents=True)
    for name in RECORDS:
        if (bundle / name).exists():
            shutil.copy2(bundle / name, work / name)
    for t in RUNTIME_TABLES:
        src = bundle / "tables" / f"{t}.parquet"
        if src.exists():
            shutil.copy2(src, work / "tables" / f"{t}.parquet")
    if (bundle / "inputs").is_dir():  # copies of the external tables statistics read (stats/inputs.py)
        shutil.copytree(bundle / "inputs", work / "inputs", symlinks=True)
    return analyse(work, progress=False)


def _inside_bundle(bundle: Path, rel: str) -> bool:
    """Whether a path results.json names stays in the bundle: relative, no `..`, resolving under it."""
    from scoreaudit.safeio import inside

    p = Path(rel)
    return not p.is_absolute() and ".." not in p.parts and inside(bundle / p, bundle)


def _compare_tables(bundle: Path, work: Path, names: dict) -> Iterator[str]:
    import numpy as np
    import pandas as pd

    for name, rel in sorted(names.items()):
        if name in RUNTIME_TABLES and name != "exclusions":
            continue
        if not _inside_bundle(bundle, rel):  # results.json is data: a path out of the bundle is never opened
            yield f"results.json tables.{name}: {rel!r} is not a path inside the bundle"
            continue
        a_path, b_path = bundle / rel, work / rel
        if not a_path.exists():
            yield f"{rel}: listed in results.json but missing from the bundle"
            continue
        if not b_path.exists():
            continue
        a, b = pd.read_parquet(a_path), pd.read_parquet(b_path)
        if list(a.columns) != list(b.columns) or len(a) != len(b):
            yield f"{rel}: shape {len(a)}×{len(a.columns)} differs from the re-analysis ({len(b)}×{len(b.columns)})"
            continue
        for col in a.columns:
            x, y = a[col], b[col]
            if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y) and not pd.api.types.is_bool_dtype(x):
                xv, yv = x.to_numpy(dtype=float, na_value=np.nan), y.to_numpy(dtype=float, na_value=np.nan)
                bad = ~(np.isclose(xv, yv, rtol=RTOL, atol=ATOL) | (np.isnan(xv) & np.isnan(yv)))
            else:
                bad = np.array([not _same_cell(p, q) for p, q in zip(x.tolist(), y.tolist())], dtype=bool)
            if bad.any():
                i = int(np.argmax(bad))
                yield (f"{rel} row {i} column {col}: the bundle says {_show(x.iloc[i])}, "
                       f"the re-analysis gives {_show(y.iloc[i])} ({int(bad.sum())} cell(s) differ)")


def _is_null(v: Any) -> bool:
    try:
        import pandas as pd

        return v is None or bool(pd.isna(v))
    except (TypeError, ValueError):  # arrays and lists are not null
        return False


def _same_cell(a: Any, b: Any) -> bool:
    if _is_null(a) or _is_null(b):
        return _is_null(a) and _is_null(b)
    if isinstance(a, float) and isinstance(b, float):
        return _same_number(a, b)
    return str(a) == str(b)


def _table_hashes(bundle: Path, stated: dict) -> Iterator[str]:
    from scoreaudit.safeio import read_regular

    for name, sha in sorted((stated or {}).items()):
        rel = name if "/" in name else f"tables/{name}.parquet"
        if not _inside_bundle(bundle, rel):  # never opened: results.json cannot point verify elsewhere
            yield f"results.json table_sha256: {rel!r} is not a path inside the bundle"
            continue
        p = bundle / rel
        if not p.exists():
            yield f"{rel}: results.json records sha256 {sha[:12]}… but the file is missing"
        elif hashlib.sha256(read_regular(p, root=bundle)).hexdigest() != sha:
            yield f"{rel}: its sha256 is not the one results.json records (the table was changed after analysis)"


_NUMBER = re.compile(r"[\u2212+-]?\d[\d,]*(?:\.\d+)?(?:×10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?%?")


def _visible_text(html: str) -> list[str]:
    text = re.sub(r"<style.*?</style>", " ", html, flags=re.S)
    text = re.sub(r"<[^>]+>", "\n", text)
    return [t for t in (unescape(line).strip() for line in text.splitlines()) if t]


def compare_reports(stated_html: str, fresh_html: str, name: str = "report.html") -> list[str]:
    if stated_html == fresh_html:
        return []
    a, b = _visible_text(stated_html), _visible_text(fresh_html)
    out = []
    for x, y in zip(a, b):
        if x != y:
            nx, ny = _NUMBER.findall(x), _NUMBER.findall(y)
            diff = next(((p, q) for p, q in zip(nx, ny) if p != q), None)
            if diff:
                out.append(f"{name}: shows {diff[0]} where the results give {diff[1]} (in: {x[:100]!r})")
            else:
                out.append(f"{name}: text {x[:80]!r} differs from the re-rendered {y[:80]!r}")
            if len(out) >= 5:
                break
    if not out:
        if len(a) != len(b):
            out.append(f"{name}: {len(a)} text lines, the re-rendered report has {len(b)}")
        else:
            line = next(i for i, (p, q) in enumerate(zip(stated_html.splitlines(), fresh_html.splitlines())) if p != q) \
                if stated_html.splitlines() != fresh_html.splitlines() else 0
            out.append(f"{name}: markup differs from the re-rendered report (line {line + 1})")
    return out


def _check_report(bundle: Path, results_path: Path) -> list[str]:
    from scoreaudit.reports.context import DATA_ERRORS, ReportContext
    from scoreaudit.reports.render import render_html

    html_path = bundle / "report.html"
    if not html_path.exists():
        return []
    ctx = ReportContext.load(bundle)
    try:
        fresh = render_html(ctx)
    except DATA_ERRORS as e:  # the stated data cannot be rendered: a mismatch naming why, not a traceback
        return [f"report.html: cannot be rendered again from the bundle ({type(e).__name__}: {str(e)[:200]})"]
    return compare_reports(html_path.read_text(encoding="utf-8"), fresh)


def _check_pdf(bundle: Path, results: dict) -> list[str]:
    """Every hypothesis sentence the results give must be in report.pdf's text (needs pdftotext)."""
    import shutil
    import subprocess

    from scoreaudit.reports.sentences import cell_sentence

    pdf = bundle / "report.pdf"
    if not pdf.exists():
        return []
    if shutil.which("pdftotext") is None:
        raise PdfNotChecked("report.pdf was not checked: pdftotext (poppler-utils) is not installed; install it "
                            "to compare the PDF's text with the results")
    try:
        text = subprocess.run(["pdftotext", str(pdf), "-"], check=True, capture_output=True, text=True,
                              timeout=120).stdout
    except (subprocess.SubprocessError, OSError) as e:
        return [f"report.pdf: cannot read its text ({e})"]
    text = re.sub(r"\s+", " ", text)
    from scoreaudit.reports.context import ReportContext
    from scoreaudit.reports.sections.first_screen import labelled

    ctx = ReportContext.load(bundle)  # the report names scorers and arms by their display labels
    out = []
    for cell in results.get("cells") or []:
        sentence = re.sub(r"\s+", " ", labelled(cell_sentence(cell), cell, ctx))
        if sentence not in text:
            out.append(f"report.pdf: does not show the sentence of cell {cell.get('id')}: {sentence[:100]!r}")
            if len(out) >= 5:
                break
    return out


class PdfNotChecked(Exception):
    """report.pdf exists but cannot be read here (no pdftotext): verification is incomplete, not passed."""


def verify(bundle_dir: Path) -> list[str]:
    """Mismatch descriptions (empty when every number recomputes); see `verify_bundle` for what was not checked."""
    return verify_bundle(bundle_dir)[0]


def verify_bundle(bundle_dir: Path) -> tuple[list[str], list[str]]:
    """(mismatches, unchecked): what differs, and what could not be checked here (e.g. the PDF)."""
    unchecked: list[str] = []
    mismatches = _verify(bundle_dir, unchecked)
    return mismatches, unchecked


def _verify(bundle_dir: Path, unchecked: list[str]) -> list[str]:
    bundle = Path(bundle_dir)
    results_path = bundle / "results.json"
    from scoreaudit.reports.context import BundleError, load_json
    from scoreaudit.safeio import links_outside

    if not bundle.exists():
        raise BundleError(f"{bundle} not found: give the results folder written by `scoreaudit run`")
    if not bundle.is_dir():  # not a bundle at all: an I/O problem (exit 6), not a mismatch
        raise BundleError(f"{bundle} is not a folder: give the results folder written by `scoreaudit run`")
    if not os.path.lexists(results_path):  # not a bundle at all (e.g. `verify /`): exit 6, nothing walked
        raise BundleError(f"{results_path} not found: is {bundle} a results folder written by `scoreaudit run`?")
    outside = links_outside(bundle)
    if outside:  # a bundle is data: nothing outside it is read
        return [f"{rel}: a link that points outside the results folder" for rel in outside]

    stated = load_json(results_path)  # BundleError: not a results folder
    if not isinstance(stated, dict) or "cells" not in stated:
        raise BundleError(f"{results_path} has no 'cells': it is not a scoreaudit results file")
    if not (bundle / "ir.json").exists():
        return [f"{bundle / 'ir.json'} is missing: the audit cannot be re-analysed without it"]
    from scoreaudit.reports.context import IR_SHAPE, RESULTS_SHAPE, shape_problems

    misshapen = (shape_problems(stated, RESULTS_SHAPE, "results.json")
                 + shape_problems(load_json(bundle / "ir.json"), IR_SHAPE, "ir.json"))
    if misshapen:  # edited by hand (or another version): a mismatch, and nothing is rendered from it
        return [f"{m}: not what `scoreaudit run` writes" for m in misshapen]
    mismatches: list[str] = []
    with tempfile.TemporaryDirectory(prefix="scoreaudit-verify-") as tmp:
        work = Path(tmp) / "bundle"
        try:
            fresh = _reanalyse(bundle, work)
        except ImportError as e:
            return [f"cannot re-analyse: the statistics engine is not importable ({e})"]
        except Exception as e:  # noqa: BLE001 - a broken table is a verification failure, not a crash
            return [f"cannot re-analyse the bundle's tables: {type(e).__name__}: {e}"]
        mismatches.extend(compare(stated, fresh))
        mismatches.extend(_compare_tables(bundle, work, stated.get("tables") or {}))
    mismatches.extend(_table_hashes(bundle, stated.get("table_sha256") or {}))
    mismatches.extend(_check_report(bundle, results_path))
    try:
        mismatches.extend(_check_pdf(bundle, fresh))
    except PdfNotChecked as e:
        unchecked.append(str(e))
    from scoreaudit.reports.manifest import check_manifest

    mismatches.extend(check_manifest(bundle))
    if len(mismatches) > MAX_REPORTED:
        extra = len(mismatches) - MAX_REPORTED
        mismatches = mismatches[:MAX_REPORTED] + [f"... and {extra} more mismatch(es)"]
    return mismatches
