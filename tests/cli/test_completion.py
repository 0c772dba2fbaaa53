"""Shell completion for bash, zsh and fish through argcomplete (issue 30).

`scoreaudit completion SHELL` prints the shell's registration code; the
round trip runs the real `scoreaudit` under argcomplete's protocol (the
shell's side: `_ARGCOMPLETE=1`, `COMP_LINE`, `COMP_POINT`, the answer written
to `_ARGCOMPLETE_STDOUT_FILENAME`) and reads back what a user would be offered
after pressing Tab. A command that is not completing never imports argcomplete.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCOREAUDIT = Path(sys.executable).parent / "scoreaudit"
IFS = "\013"  # argcomplete's default separator between candidates


def _env(**extra: str) -> dict[str, str]:
    return {"PATH": f"{SCOREAUDIT.parent}:/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", **extra}


def _script(shell: str) -> str:
    p = subprocess.run([str(SCOREAUDIT), "completion", shell], capture_output=True, text=True, timeout=120,
                       env=_env())
    assert p.returncode == 0, p.stderr
    return p.stdout


def complete(line: str, cwd: Path, tmp_path: Path) -> list[str]:
    """What Tab offers after `line` (the cursor at its end), from the real executable."""
    out = tmp_path / "completions.out"
    out.unlink(missing_ok=True)
    p = subprocess.run([str(SCOREAUDIT)], cwd=cwd, capture_output=True, text=True, timeout=120,
                       env=_env(_ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
                                _ARGCOMPLETE_STDOUT_FILENAME=str(out)))
    assert p.returncode == 0, p.stderr
    return [c.strip() for c in out.read_text().split(IFS) if c.strip()]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_each_shell_gets_code_that_names_scoreaudit(shell):
    text = _script(shell)
    assert text.strip() and "scoreaudit" in text
    marker = {"bash": "complete ", "zsh": "#compdef scoreaudit", "fish": "complete --command scoreaudit"}[shell]
    assert marker in text


def test_an_unknown_shell_is_a_usage_error():
    p = subprocess.run([str(SCOREAUDIT), "completion", "powershell"], capture_output=True, text=True, timeout=120,
                       env=_env())
    assert p.returncode == 2 and "bash" in p.stderr


def test_round_trip_subcommands_and_choices(tmp_path):
    assert complete("scoreaudit ch", tmp_path, tmp_path) == ["check"]
    assert set(complete("scoreaudit report --format ", tmp_path, tmp_path)) == {"tex", "md"}
    assert set(complete("scoreaudit verify --format ", tmp_path, tmp_path)) == {"text", "json"}
    assert {"bash", "zsh", "fish"} <= set(complete("scoreaudit completion ", tmp_path, tmp_path))


def test_file_arguments_offer_audit_files_and_folders(tmp_path):
    (tmp_path / "a.audit").write_text('audit "a" { version: 1 }\n')
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "out").mkdir()
    offered = set(complete("scoreaudit check ", tmp_path, tmp_path))
    assert "a.audit" in offered and "out/" in offered and "notes.txt" not in offered, offered
    assert complete("scoreaudit run a", tmp_path, tmp_path) == ["a.audit"]
    dirs = set(complete("scoreaudit verify ", tmp_path, tmp_path))  # a results folder: folders only
    assert "out/" in dirs and "a.audit" not in dirs, dirs


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not installed")
def test_bash_registers_the_completion(tmp_path):
    (tmp_path / "c.bash").write_text(_script("bash"))
    p = subprocess.run(["bash", "-c", f"source {tmp_path / 'c.bash'} && complete -p scoreaudit"],
                       capture_output=True, text=True, timeout=60, env=_env())
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith(" scoreaudit") and "-F _python_argcomplete" in p.stdout, p.stdout
    # and bash itself, through the sourced function, gets the candidates (what Tab fills in)
    call = ('COMP_LINE="scoreaudit ch"; COMP_POINT=13; COMP_WORDS=(scoreaudit ch); COMP_CWORD=1; COMP_TYPE=9; '
            '_python_argcomplete scoreaudit ch scoreaudit; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "-c", f"source {tmp_path / 'c.bash'} && {call}"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60, env=_env())
    assert p.returncode == 0 and [x.strip() for x in p.stdout.splitlines() if x.strip()] == ["check"], \
        p.stdout + p.stderr


def test_a_command_that_is_not_completing_never_imports_argcomplete():
    code = ("import sys; from scoreaudit.cli import main; rc = main(['check', 'examples/skin_tone.audit']); "
            "print('argcomplete' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**_env(), "PYTHONPATH": str(ROOT / "src")})
    assert p.stdout.strip().splitlines()[-1] == "False", p.stdout + p.stderr
