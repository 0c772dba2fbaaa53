"""Tiny models of the five scorers, built once per session into a fake HF cache and local folders."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# The session's fake Hugging Face cache is set up by tests/conftest.py (before any import of
# huggingface_hub); the tiny models are built into it.
_ROOT = Path(os.environ["HF_HUB_CACHE"]).parent


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
        built = tm.build_all(root)
        built["open_clip_cfgs"] = root / "open_clip_cfgs"  # tiny configs under the real names
        yield built
    finally:
        tm.restore_open_clip(saved)
        shutil.rmtree(_ROOT, ignore_errors=True)
