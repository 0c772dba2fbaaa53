"""Tiny models of the five scorers, built once per session into a fake HF cache and local folders."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# huggingface_hub reads these when it is first imported, so they are set before any test
# module imports transformers or open_clip: the whole session is offline, on a fake cache.
_ROOT = Path(tempfile.mkdtemp(prefix="scoreaudit-tiny-"))
os.environ.update({"HF_HUB_CACHE": str(_ROOT / "hf"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                   "XDG_CACHE_HOME": str(_ROOT / "xdg")})


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/models" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.models)


@pytest.fixture(scope="session")
def tiny():
    pytest.importorskip("torch", reason="the models extra is not installed (pip install 'scoreaudit[models]')")
    pytest.importorskip("open_clip", reason="the models extra is not installed (pip install 'scoreaudit[models]')")
    pytest.importorskip("transformers", reason="the models extra is not installed (pip install 'scoreaudit[models]')")
    import tiny_models as tm

    root = _ROOT
    saved = tm.register_tiny_open_clip(root / "open_clip_cfgs")
    try:
        yield tm.build_all(root)
    finally:
        tm.restore_open_clip(saved)
        shutil.rmtree(_ROOT, ignore_errors=True)
