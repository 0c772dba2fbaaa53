"""Crash safety: SIGKILL a run at three points, resume, and get the uninterrupted run's tables
without recomputing anything that was committed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtime_helpers import HERE, call, fake_calls, make_images, make_ir, run_steps, table_bytes, write_ir
from scoreaudit.compiler.ir import OperatorIR

DRIVER = HERE / "sa_crash_driver.py"


def _ir():
    ops = {"light": OperatorIR(name="light", call=call("lab_shift", channel="L", region="all"),
                               doses=(-10.0, 0.0, 10.0), identity=0.0, pixel_local=True, region="all"),
           "blur": OperatorIR(name="blur", call=call("gaussian_blur"), doses=(0.0, 1.0, 2.0), identity=0.0,
                              pixel_local=True)}
    return make_ir(batch_size=2, operators=ops)


def _start(ir_path, spec, out, cache, env):
    return subprocess.Popen([sys.executable, str(DRIVER), str(ir_path), str(spec), str(out), str(cache)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _committed_scores(cache: Path) -> set[str]:
    if not cache.exists():
        return set()
    try:
        db = sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=5)
        try:
            return {k for (k,) in db.execute("SELECT key FROM entries WHERE kind='score'")}
        finally:
            db.close()
    except sqlite3.OperationalError:  # not created yet
        return set()


def _kill_after(proc, cache: Path, n_scores: int, timeout: float = 60.0) -> None:
    t0 = time.monotonic()
    while len(_committed_scores(cache)) < n_scores:
        if proc.poll() is not None:
            pytest.fail(f"run ended before {n_scores} scores were committed: {proc.stderr.read().decode()}")
        if time.monotonic() - t0 > timeout:
            proc.kill()
            pytest.fail("run did not progress")
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL


def _settled(path: Path, quiet: float = 2.0) -> int:
    """Calls logged once no killed worker is still writing (Ray ends a dead driver's tasks shortly after)."""
    n, t = len(fake_calls(path)), time.monotonic()
    while time.monotonic() - t < quiet:
        time.sleep(0.25)
        m = len(fake_calls(path))
        if m != n:
            n, t = m, time.monotonic()
    return n


def run_scenario(tmp_path: Path, env: dict, kills=(5, 25, 45)) -> None:
    """Reference run; SIGKILL at each count of committed scores, resuming each time; then finish.

    Nothing committed is ever recomputed, and the final tables equal the uninterrupted run's.
    `env` chooses the executor ($SA_EXECUTOR, $SA_RAY_ADDRESS; see sa_crash_driver.py).
    """
    spec = make_images(tmp_path, n_random=11)  # 12 images × (1 original + 2 + 2 variants) = 60 scores
    ir_path = tmp_path / "ir.json"
    write_ir(_ir(), ir_path)
    env = dict(env, PYTHONPATH=os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]))

    ref_log = tmp_path / "ref_calls.tsv"
    ref = subprocess.run([sys.executable, str(DRIVER), str(ir_path), str(spec), str(tmp_path / "ref"),
                          str(tmp_path / "ref.sqlite")], env=dict(env, SA_FAKE_LOG=str(ref_log)),
                         capture_output=True, text=True, timeout=600)
    assert ref.returncode == 0, ref.stderr
    assert len(fake_calls(ref_log)) == 60

    cache = tmp_path / "cache.sqlite"
    out = tmp_path / "out"
    calls_log = tmp_path / "calls.tsv"
    slow = dict(env, SA_FAKE_LOG=str(calls_log), SA_FAKE_SLEEP="0.04")
    for n in kills:  # kill after the first batch, mid-way, near the end
        before = _committed_scores(cache)
        proc = _start(ir_path, spec, out, cache, slow)
        _kill_after(proc, cache, n, timeout=300.0)
        after = _committed_scores(cache)
        assert before < after
        ran = {s["key"] for s in run_steps(out) if s["kind"] == "score" and s["status"] == "ran"}
        assert not (ran & before), "a committed score was recomputed after a crash"
        db = sqlite3.connect(cache)
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        db.close()

    n_before_final = _settled(calls_log)
    committed = _committed_scores(cache)
    final = subprocess.run([sys.executable, str(DRIVER), str(ir_path), str(spec), str(out), str(cache)],
                           env=dict(env, SA_FAKE_LOG=str(calls_log)), capture_output=True, text=True, timeout=600)
    assert final.returncode == 0, final.stderr
    steps = [s for s in run_steps(out) if s["kind"] == "score"]
    ran = [s for s in steps if s["status"] == "ran"]
    assert not ({s["key"] for s in ran} & committed)
    assert len(fake_calls(calls_log)) - n_before_final == len(ran) == 60 - len(committed)
    assert table_bytes(out) == table_bytes(tmp_path / "ref")


@pytest.mark.timeout(180)
def test_sigkill_at_three_points_then_resume(tmp_path):
    run_scenario(tmp_path, dict(os.environ, SA_EXECUTOR="local"))
