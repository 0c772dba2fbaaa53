"""Crash safety on the tensor path: SIGKILL at three points, resume, same tables as an uninterrupted run.

The scenario is test_runtime_crash.run_scenario's (operators lab_shift and gaussian_blur, whose
torch twins sweep on the device here); only $SA_TENSOR_PATH differs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the models extra is not installed (pip install 'scoreaudit[models]')")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_runtime_crash import run_scenario  # noqa: E402


@pytest.mark.timeout(600)
def test_sigkill_at_three_points_then_resume_on_the_tensor_path(tmp_path):
    run_scenario(tmp_path, dict(os.environ, SA_EXECUTOR="local", SA_TENSOR_PATH="on"))
    log = (tmp_path / "out" / "run.log").read_text()
    assert "# tensor path on" in log
