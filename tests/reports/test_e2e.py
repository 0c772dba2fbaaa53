"""End to end: lock the demo spec, run it, and find the lock status and the report in the bundle.

Nothing here skips: a failure to make the demo data, an error from `api.run`
or a missing lock status is a failure of the product.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_lock_run_report(tmp_path):
    from scoreaudit import api
    from scoreaudit.reports.lock import write_lock

    spec = tmp_path / "demo.audit"
    text = (ROOT / "examples" / "demo.audit").read_text().replace("bootstrap: 2000", "bootstrap: 200")
    spec.write_text(text)
    made = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_demo_data.py"), "--out",
                           str(tmp_path / "data" / "demo"), "--real", "20", "--prompts", "8"],
                          capture_output=True, text=True)
    assert made.returncode == 0, f"demo data could not be made: {made.stderr[-2000:]}"
    write_lock(spec)
    api.run(spec, out=tmp_path / "out", progress=False)
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert (tmp_path / "out" / "lock.json").exists(), "api.run wrote no lock status"
    assert results["lock"]["status"] == "pre-registered", results["lock"]
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Pre-registered" in html
    from scoreaudit.reports.verify import verify

    assert verify(tmp_path / "out") == []
    shutil.rmtree(tmp_path / "data", ignore_errors=True)
