"""`--executor ray`: a generation run SIGKILLed mid-way resumes from the store; nothing committed is redone.

The CLI runs in a subprocess (its own session) with a local Ray instance; the images come from the
pipeline actor and the driver commits each one, so the kill loses at most the batches in flight.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("diffusers")
pytest.importorskip("ray", reason="the ray extra is installed by scripts/bootstrap.sh test")

from scoreaudit import api  # noqa: E402
from scoreaudit.testing.tiny_diffusion import save_tiny_sd  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]  # slow: Ray: a local cluster per test

SPEC = '''audit "Generated" { seed: 1 }
scorer p = planted(fidelity: 0.5, noise: 0.1)
arm gen = generate("pipe", prompts: "prompts.txt", seeds: 6, steps: 25, guidance: 1.0, size: 32, kind: synthetic)
'''


def _kill_session(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver and whatever it started in its session
    except ProcessLookupError:
        pass
    proc.wait()


def test_sigkilled_ray_generation_resumes_from_the_store(tmp_path):
    save_tiny_sd(tmp_path / "pipe", seed=3)
    (tmp_path / "prompts.txt").write_text("a red car\na blue house\n")
    spec = tmp_path / "gen.audit"
    spec.write_text(SPEC)
    cache = tmp_path / "cache.sqlite"
    store = tmp_path / "cache.sqlite.generated"
    env = {**os.environ, "PYTHONPATH": str(Path(api.__file__).resolve().parents[1]),
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32), "RAY_USAGE_STATS_ENABLED": "0"}
    cmd = [sys.executable, "-c", "import sys; from scoreaudit.cli import main; sys.exit(main())", "run", str(spec),
           "--out", str(tmp_path / "out"), "--cache", str(cache), "--device", "cpu", "-q", "--executor", "ray"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        t0 = time.monotonic()
        while len(list(store.rglob("*.png"))) < 3:
            if proc.poll() is not None:
                pytest.fail(f"run ended before 3 images were committed: {proc.stderr.read().decode()[-2000:]}")
            assert time.monotonic() - t0 < 900, "generation did not progress"
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        _kill_session(proc)
    done = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in store.rglob("*.png")}
    assert 3 <= len(done) < 12
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200, start_new_session=True)
    assert res.returncode == 0, res.stderr[-2000:]
    log = (tmp_path / "out" / "run.log").read_text()
    assert f"generate gen: 12 images, {len(done)} from the store, {12 - len(done)} new" in log
    assert "executor ray: generate gen: pipeline actor pid" in log
    assert all((store / n[:2] / n).read_bytes() == b and (store / n[:2] / n).stat().st_mtime_ns == m
               for n, (b, m) in done.items())  # nothing rewritten
    assert len(list(store.rglob("*.png"))) == 12
    # the same images as a local run makes
    api.run(spec, out=tmp_path / "local", device="cpu", cache=tmp_path / "l.sqlite", progress=False,
            render_report=False)
    local = {p.name: p.read_bytes() for p in (tmp_path / "l.sqlite.generated").rglob("*.png")}
    assert local == {p.name: p.read_bytes() for p in store.rglob("*.png")}
