"""The command line a newcomer meets: help on every option, documented exit codes, one JSON spelling,
describe with did-you-mean and --list, scorer parameters in the language's words, plain progress lines."""

from __future__ import annotations

import argparse
import io
import json
import re
from pathlib import Path

import pytest

from scoreaudit import cli
from scoreaudit.exitcodes import DESCRIPTIONS, Exit

ROOT = Path(__file__).resolve().parents[2]


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices
    return {}


def test_every_option_of_every_subcommand_has_help_and_the_epilog_lists_exit_codes():
    parser = cli.build_parser()
    subs = _subparsers(parser)
    assert {"check", "plan", "run", "report", "verify", "lock", "simulate", "scorers", "describe", "fmt"} <= set(subs)
    for name, sub in subs.items():
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{name}: {action.option_strings or action.dest} has no help text"
        text = sub.format_help()
        for code in Exit:
            assert re.search(rf"^\s*{int(code)}\s+{re.escape(DESCRIPTIONS[code])}", text, re.M), (name, code)


def test_readme_documents_every_exit_code():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for code in Exit:
        assert re.search(rf"^\| {int(code)} \| {re.escape(DESCRIPTIONS[code])} \|$", readme, re.M), code


def test_json_is_spelled_format_json_everywhere_and_the_old_flag_still_works(capsys):
    subs = _subparsers(cli.build_parser())
    for name in ("check", "plan", "scorers", "describe", "run"):
        opts = {o for a in subs[name]._actions for o in a.option_strings}
        assert "--format" in opts, name
    assert cli.main(["scorers", "--format", "json"]) == 0
    new = capsys.readouterr().out
    assert cli.main(["scorers", "--json"]) == 0
    assert capsys.readouterr().out == new
    rows = json.loads(new)
    # parameter types in the language's words, never Python's
    types = [p["type"] for r in rows for p in r["params"]]
    assert types and not any(re.search(r"Optional|NoneType|typing|Annotated|<class|str\b|float\b", t) for t in types)


def test_scorers_text_uses_language_words(capsys):
    assert cli.main(["scorers", "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "Optional[" not in out and "= None" not in out
    assert "string | none = none" in out


def test_describe_did_you_mean_and_unknown_is_a_usage_error(capsys):
    assert cli.main(["describe", "lab_shfit"]) == Exit.USAGE
    err = capsys.readouterr().err
    assert "did you mean 'lab_shift'" in err
    assert cli.main(["describe", "fidelity_indx"]) == Exit.USAGE
    assert "fidelity_index" in capsys.readouterr().err


@pytest.mark.parametrize("kind,expected", [("operators", "lab_shift"), ("scorers", "sharpness"),
                                           ("statistics", "fidelity_index"), ("regions", "skin"),
                                           ("measures", "ita"), ("settings", "alpha")])
def test_describe_list(kind, expected, capsys):
    assert cli.main(["describe", "--list", kind]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{kind}:") and expected in out
    assert cli.main(["describe", "--list", kind, "--format", "json"]) == 0
    assert expected in json.loads(capsys.readouterr().out)[kind]


def test_describe_list_everything(capsys):
    assert cli.main(["describe", "--list"]) == 0
    out = capsys.readouterr().out
    for kind in ("operators:", "scorers:", "statistics:", "regions:", "measures:", "settings:"):
        assert kind in out


def test_fail_on_takes_a_list_and_rejects_unknown_outcomes(capsys):
    assert cli.fail_on_list("refuted,inconclusive") == ("refuted", "inconclusive")
    assert cli.fail_on_list(" refuted ") == ("refuted",)
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "x.audit", "--fail-on", "refuted,wrong"])
    assert e.value.code == Exit.USAGE
    assert "unknown outcome(s) wrong" in capsys.readouterr().err


def test_missing_files_are_io_errors(tmp_path, capsys):
    assert cli.main(["check", str(tmp_path / "nope.audit")]) == Exit.IO
    assert cli.main(["plan", str(tmp_path / "nope.audit")]) == Exit.IO
    assert cli.main(["report", str(tmp_path)]) == Exit.IO
    assert "error" in capsys.readouterr().err


def test_progress_off_a_terminal_is_plain_periodic_lines(monkeypatch, capsys):
    from scoreaudit.runtime.progress import Progress

    monkeypatch.setenv("SCOREAUDIT_PROGRESS_SECONDS", "0")
    with Progress(True) as p:  # pytest's captured stderr is not a terminal
        p.task("real: score laion", 4)
        for _ in range(4):
            p.advance("real: score laion")
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert lines[-1].startswith("progress: real: score laion 4/4 (100%)") and lines[-1].endswith("/s")
    assert len(lines) == 4 and "\x1b" not in err


def test_progress_lines_are_throttled(monkeypatch):
    from scoreaudit.runtime.progress import PlainLines

    buf = io.StringIO()
    p = PlainLines(stream=buf, every=3600)
    p.add("stage", 100)
    for _ in range(100):
        p.advance("stage", 1)
    assert buf.getvalue().count("progress:") == 1  # only the completion line within the interval


def test_cli_goes_through_the_api_facade_only():
    src = (ROOT / "src" / "scoreaudit" / "cli.py").read_text(encoding="utf-8")
    imports = set(re.findall(r"^\s*(?:from|import) (scoreaudit[\w.]*)", src, re.M))
    # the language server is another front end over the same facade (it imports api itself), not a layer
    # so is the bundle explorer (`view`, `diff`): it reads bundles only, through the reports' reader
    assert imports <= {"scoreaudit", "scoreaudit.diagnostics", "scoreaudit.exitcodes", "scoreaudit.lsp.server",
                       "scoreaudit.view.app", "scoreaudit.view.compare"}, imports


def test_statistics_stage_prints_progress_lines_off_a_terminal(monkeypatch, capsys, tmp_path):
    """The statistics stage (and its robustness seeds) say where they are in a CI log, like the runtime stages."""
    import sys as _sys

    _sys.path.insert(0, str(ROOT / "tests" / "reports"))
    from real_bundle import planted_bundle

    from scoreaudit.stats.engine import analyse

    monkeypatch.setenv("SCOREAUDIT_PROGRESS_SECONDS", "3600")  # only the completion line of each stage
    d = planted_bundle(tmp_path / "b", clusters=12, bootstrap=100)
    ir = json.loads((d / "ir.json").read_text())
    ir["settings"]["robustness"] = 3  # two more seeds: their stage reports too
    (d / "ir.json").write_text(json.dumps(ir))
    capsys.readouterr()
    res = analyse(d, progress=True)  # pytest's captured stderr is not a terminal
    err = capsys.readouterr().err
    n = len(res["cells"])
    assert f"progress: statistics: cells {n}/{n} (100%)" in err and "\x1b" not in err
    assert "progress: statistics: robustness seeds 2/2 (100%)" in err
    analyse(d, progress=False)
    assert capsys.readouterr().err == ""


def test_simulate_prints_progress_lines_off_a_terminal(monkeypatch, capsys):
    from scoreaudit.plainprogress import stage_bar

    monkeypatch.setenv("SCOREAUDIT_PROGRESS_SECONDS", "0")
    bar = stage_bar(True, "simulate", 3)
    for _ in range(3):
        bar.advance(1, "ignored off a terminal")
    bar.close()
    lines = capsys.readouterr().err.strip().splitlines()
    assert [ln.split(" (")[0] for ln in lines] == ["progress: simulate 1/3", "progress: simulate 2/3",
                                                    "progress: simulate 3/3"]
    assert stage_bar(False, "simulate", 3) is None


def test_python_dash_m_runs_the_same_command_line():
    import os
    import subprocess
    import sys as _sys

    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    r = subprocess.run([_sys.executable, "-m", "scoreaudit", "describe", "lab_shif"], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == Exit.USAGE and "did you mean 'lab_shift'" in r.stderr
    r = subprocess.run([_sys.executable, "-m", "scoreaudit", "--help"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and "exit codes:" in r.stdout and "usage: scoreaudit" in r.stdout


def test_version_is_printed_on_stdout_and_looked_up_only_when_asked(capsys, monkeypatch):
    from importlib.metadata import version as dist_version

    calls = []
    real = cli.version
    monkeypatch.setattr(cli, "version", lambda: calls.append(1) or real())
    cli.build_parser()
    assert calls == []  # other commands never pay for reading the installed metadata
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    out = capsys.readouterr().out
    assert e.value.code == 0 and out == f"scoreaudit {dist_version('scoreaudit')}\n" and calls == [1]
