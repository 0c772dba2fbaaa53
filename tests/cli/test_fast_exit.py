"""The command ends without Python's teardown (cli.leave), and loses nothing by it.

`scoreaudit` and `python -m scoreaudit` run `cli.entry`: after the command, the process flushes its
output, runs the exit handlers libraries registered and ends with the command's status, skipping the
interpreter's module-by-module teardown (issue 33: an eighth of a cached re-run). Each test runs the
command in a fresh interpreter, as a user's shell does, and checks what a user relies on: every byte
of the output through a pipe, the exit code, the atexit handlers, and a thread still at work.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)


ENTRY = "import sys; sys.argv[0] = 'scoreaudit'; from scoreaudit.cli import entry; entry()"


def test_large_output_through_a_pipe_is_complete_and_the_status_kept(tmp_path):
    """Everything printed reaches the pipe (64 KiB and more: several buffer flushes), and an error's exit
    code is the documented one."""
    p = _run(ENTRY, "plan", "examples/skin_tone.audit", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # a truncated stream would not parse
    assert len(p.stdout) > 65536 and doc["steps"]
    bad = tmp_path / "bad.audit"
    bad.write_text('audit "x" { seed: 1 }\nscorer s = nosuch_scorer()\n', encoding="utf-8")
    p = _run(ENTRY, "check", str(bad))
    assert p.returncode == 1 and "nosuch_scorer" in p.stdout + p.stderr


def test_python_m_scoreaudit_is_the_same_command():
    p = subprocess.run([sys.executable, "-m", "scoreaudit", "check", "examples/demo.audit"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300,
                       env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT / "src")})
    assert p.returncode == 0, p.stderr


def test_exit_handlers_still_run():
    code = ("import atexit; atexit.register(lambda: print('exit handler ran', flush=True)); " + ENTRY)
    p = _run(code, "check", "examples/demo.audit")
    assert p.returncode == 0, p.stderr
    assert p.stdout.rstrip().endswith("exit handler ran")


def test_a_thread_still_at_work_is_waited_for(tmp_path):
    """A thread that is not a daemon finishes before the process ends (Python's ordinary exit)."""
    done = tmp_path / "written-by-the-thread"
    code = ("import threading, time, pathlib\n"
            "def work():\n"
            "    time.sleep(1.0)\n"
            f"    pathlib.Path({str(done)!r}).write_text('done')\n"
            "threading.Thread(target=work).start()\n" + ENTRY.replace("; ", "\n"))
    p = _run(code, "check", "examples/demo.audit")
    assert p.returncode == 0, p.stderr
    assert done.read_text() == "done"
