"""Runs one audit in a subprocess for the crash tests: python sa_crash_driver.py IR.json SPEC OUT CACHE.

$SA_EXECUTOR (local | ray) and $SA_RAY_ADDRESS choose the executor, $SA_TENSOR_PATH (auto | on | off) the path."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sa_fake_plugins  # noqa: E402

sa_fake_plugins.register()

from scoreaudit.compiler.ir import AuditIR  # noqa: E402
from scoreaudit.runtime.executor import execute  # noqa: E402

ir = AuditIR.model_validate_json(Path(sys.argv[1]).read_text(encoding="utf-8"))
import os  # noqa: E402

execute(ir, None, spec_path=Path(sys.argv[2]), out_dir=Path(sys.argv[3]), cache_path=Path(sys.argv[4]),
        progress=False, executor=os.environ.get("SA_EXECUTOR", "local"),
        ray_address=os.environ.get("SA_RAY_ADDRESS") or None, tensor_path=os.environ.get("SA_TENSOR_PATH", "auto"))
