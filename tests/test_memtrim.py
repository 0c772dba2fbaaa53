"""Freed memory goes back between a run's stages (issue 33, memtrim.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from scoreaudit import memtrim

POOL = ("from scoreaudit.memtrim import prefer_system_allocator; prefer_system_allocator(); "
        "import pyarrow as pa; print(pa.default_memory_pool().backend_name)")


def _pool(env_pool: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if env_pool is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = env_pool
    return subprocess.run([sys.executable, "-c", POOL], capture_output=True, text=True, env=env,
                          check=True).stdout.strip()


def test_the_command_line_gives_arrow_the_system_allocator_unless_the_user_chose():
    pytest.importorskip("pyarrow")
    assert _pool(None) == "system"
    assert _pool("mimalloc") == "mimalloc"  # a user's choice is kept


def test_the_cli_sets_it_before_anything_runs(monkeypatch, capsys):
    from scoreaudit import cli

    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert os.environ.get("ARROW_DEFAULT_MEMORY_POOL") == "system"
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)


def test_trim_returns_a_large_freed_block_to_the_system():
    if memtrim._malloc_trim() is None:
        pytest.skip("no glibc malloc_trim here")

    def rss_kib() -> int:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS"))

    # many blocks below mmap's threshold (they live in glibc's heap) between small ones that stay: the freed
    # ones are holes inside the heap, whose pages free() alone keeps
    blocks, pins = [], []
    for i in range(40_000):  # ~160 MB, with a small block kept after every hundred
        blocks.append(bytearray(4000))
        if i % 100 == 99:
            pins.append(bytearray(1000))
    held = rss_kib()
    del blocks
    freed_alone = held - rss_kib()
    memtrim.trim()
    assert freed_alone < 50_000, "free() alone gave the pages back: this check cannot tell trim's effect"
    assert held - rss_kib() > 100_000, "trim gave back less than 100 MB of 160 MB freed"
    del pins
