"""The code's habits are enforced by `make test`: ruff and mypy run on src/ with the project's own settings
(pyproject.toml [tool.ruff] and [tool.mypy]) and any finding fails the suite, listed in the failure.

Both tools come from the venv that runs the tests (the test extra). mypy keeps its cache in .mypy_cache/
(git-ignored): a cold run takes minutes, a warm one seconds, so the src/ run is marked slow; the planted
checks show each tool really reads this configuration and reports what it finds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"


def _tool(name: str) -> str:
    exe = Path(sys.executable).parent / name
    if not exe.exists():
        pytest.fail(f"{name} is not installed next to {sys.executable}: install the test extra "
                    f"(scripts/bootstrap.sh test, which `make test` runs)")
    return str(exe)


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def ruff(*paths: str) -> subprocess.CompletedProcess:
    # --config: the project's settings, never a user-level ruff.toml or a newer ruff's defaults
    return _run([_tool("ruff"), "check", "--config", str(PYPROJECT), "--no-cache", "--output-format", "concise",
                 *paths], timeout=300)


def mypy(*args: str) -> subprocess.CompletedProcess:
    return _run([_tool("mypy"), "--config-file", str(PYPROJECT), *args], timeout=1500)


def test_ruff_is_clean_on_src():
    res = ruff("src")
    assert res.returncode == 0, f"ruff check src found:\n{res.stdout}{res.stderr}"


def test_ruff_reports_a_planted_finding_with_the_project_rules(tmp_path):
    bad = tmp_path / "planted.py"
    # F401 (pyflakes), B006 (bugbear) and RUF100 (a noqa for a rule the project does not select)
    bad.write_text("import os\n\n\ndef f(x=[]):  # noqa: PLC0415\n    return x\n", "utf-8")
    res = ruff(str(bad))
    assert res.returncode == 1
    for code in ("F401", "B006", "RUF100"):
        assert f" {code} " in res.stdout, res.stdout


@pytest.mark.slow  # cold: about 4-6 minutes on a loaded 2-core machine; warm (.mypy_cache): seconds
@pytest.mark.timeout(1800)
def test_mypy_is_clean_on_src():
    res = mypy()  # [tool.mypy] files = ["src"]
    assert res.returncode == 0, f"mypy src found:\n{res.stdout}{res.stderr}"


@pytest.mark.timeout(600)
def test_mypy_reports_a_planted_finding_with_the_project_settings(tmp_path):
    bad = tmp_path / "planted.py"
    # pandas ships no types: the project's override makes it Any instead of an import-untyped error
    bad.write_text("import pandas\n\n\ndef half(n: int) -> int:\n    return n / 2\n", "utf-8")
    res = mypy("--cache-dir", str(tmp_path / "cache"), str(bad))
    assert res.returncode == 1, res.stdout
    assert "planted.py:5: error" in res.stdout and "[return-value]" in res.stdout, res.stdout
    assert "import-untyped" not in res.stdout, res.stdout
