"""`scoreaudit` command line: a table of subcommands over the facade in `api` (it imports nothing else
of the package but diagnostics rendering and the exit-code table).

Exit codes are the table in `scoreaudit.exitcodes` (printed by `--help`): 0 ok, 1 spec errors,
2 usage, 3 environment, 4 `--fail-on` triggered, 5 verify mismatch, 6 I/O, 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from scoreaudit import api, version
from scoreaudit.diagnostics import DiagnosticError, render_all, safe_text, to_json  # safe_text: termsafe's
from scoreaudit.exitcodes import Exit, epilog

OUTCOMES = ("supported", "refuted", "inconclusive")


def _err(msg: str) -> None:
    """A line on stderr; spec, data and argument text in it is shown, never obeyed (termsafe)."""
    print(safe_text(msg, keep_newlines=True), file=sys.stderr)


def _out(text: str) -> None:
    """Text for people on stdout (summaries, tables), escaped like `_err`; JSON output is json.dumps's."""
    print(safe_text(text, keep_newlines=True))


class UsageError(Exception):
    """A command line that names something that does not exist (exit 2, like argparse's own)."""


# ---------------------------------------------------------------- commands


def cmd_check(args) -> int:
    status = Exit.OK
    all_diags = []
    for f in args.files:
        if not Path(f).exists():
            _err(f"error: no such file: {safe_text(f)}")
            status = max(status, Exit.IO) if status != Exit.SPEC else status
            continue
        try:
            checked = api.check(f, allow_outside=args.allow_outside, environment=True)
        except OSError as e:  # a folder, a FIFO, not UTF-8, unreadable: one line, then the next file
            _err(_os_message(e))
            status = max(status, Exit.IO) if status != Exit.SPEC else status
            continue
        all_diags.extend(checked.diagnostics)
        if args.format == "text" and checked.diagnostics:
            _err(render_all(checked.diagnostics, checked.source))
        if not checked.ok:
            status = Exit.SPEC
    if args.format == "json":
        print(to_json(all_diags))
    elif status == Exit.OK:
        _err(_check_summary(len(args.files), all_diags))
    return status


def _check_summary(n_files: int, diags) -> str:
    """The last line of a clean `check`: "ok" only when nothing was left unchecked (W0621: missing data)."""
    missing = sum(1 for d in diags if d.code == "W0621")
    warnings = sum(1 for d in diags if not d.is_error)
    if missing:
        return (f"{n_files} file(s) checked, no errors, but {missing} data file(s) not found: what they hold "
                f"was not checked ({warnings} warning(s) above)")
    return f"ok: {n_files} file(s) checked, no errors" + (f", {warnings} warning(s)" if warnings else "")


def cmd_plan(args) -> int:
    ir, plan = api.compile(args.file, allow_outside=args.allow_outside)
    status = None
    if args.cache is not None:  # which steps the cache holds (reads manifests and file metadata only)
        status = api.cache_status(ir, plan, spec_path=Path(args.file), allow_outside=args.allow_outside,
                              cache_path=None if args.cache == "" else Path(args.cache))
        if status is None:
            _err("no cache yet: every step will run")
    if args.format == "json":
        data = plan.model_dump(mode="json")
        if status is not None:
            data["cache"] = status
        print(json.dumps(data, indent=2))
    else:
        print(safe_text(api.plan_text(plan, status), keep_newlines=True))
    return Exit.OK


def cmd_fmt(args) -> int:
    status = Exit.OK
    for f in args.files:
        source = api.read_source(f)
        out, diags = api.format_source(source, f)
        if out is None:
            _err(render_all(diags, source))
            status = Exit.SPEC
            continue
        if args.check:
            if out != source:
                _err(f"{f}: would reformat (run `scoreaudit fmt --write {f}`)")
                status = Exit.SPEC
        elif args.write:
            if out != source:
                api.write_spec(f, out)  # temp file + rename: never half a spec
        else:  # the spec's own text: escaped only where a terminal would obey it (a pipe gets it whole)
            sys.stdout.write(safe_text(out, keep_newlines=True) if sys.stdout.isatty() else out)
    return status


def cmd_describe(args) -> int:
    if args.list is not None or args.name is None:
        kind = args.list or None
        groups = api.describable(kind)
        if args.format == "json":
            print(json.dumps(groups, indent=2))
        else:
            for k, names in groups.items():
                _out(f"{k}:")
                _out("  " + ", ".join(names))
        return Exit.OK
    text = api.describe(args.name)
    if text is None:
        everything = sorted({n for names in api.describable().values() for n in names})
        close = api.did_you_mean(args.name, everything)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise UsageError(f"nothing called {args.name!r}{hint} (`scoreaudit describe --list` shows every name)")
    if args.format == "json":
        print(json.dumps({"name": args.name, "text": text}, indent=2))
    else:
        _out(text)
    return Exit.OK


def cmd_scorers(args) -> int:
    print(api.scorers_listing(args.format))
    return Exit.OK


def cmd_weights(args) -> int:
    """List (with --download: first fetch) every file the named model scorers need; 3 while any is missing."""
    try:
        reports, failed = api.weights(args.targets, download=args.download, echo=_err)
    except ValueError as e:  # an unknown scorer name
        raise UsageError(str(e)) from None
    for f in failed:
        _err(f"  failed: {f.label}: {f.error}")
    listing = api.weights_listing(reports, args.format)
    if args.format == "json":
        print(listing)
    else:
        _out(listing)  # paths from a spec, escaped
    return Exit.OK if all(r.ready for r in reports) else Exit.ENVIRONMENT


def fail_on_list(text: str | None) -> tuple[str, ...]:
    """`refuted,inconclusive` → ("refuted", "inconclusive"); unknown words are a usage error."""
    if not text:
        return ()
    words = tuple(dict.fromkeys(w.strip() for w in text.split(",") if w.strip()))
    bad = [w for w in words if w not in OUTCOMES]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown outcome(s) {', '.join(bad)}: use a comma-separated list of {', '.join(OUTCOMES)}")
    return words


def report_formats(text: str | None) -> tuple[str, ...] | None:
    """`html,pdf` → ("html", "pdf") for --formats (None: what the spec's report block asks); unknown words
    are a usage error (raised by the command, so that `main` returns its status as for every usage error)."""
    if not text:
        return None
    words = tuple(dict.fromkeys(w.strip().lower() for w in text.split(",") if w.strip()))
    unknown = [w for w in words if w not in ("html", "pdf")]
    if unknown or not words:
        raise UsageError(f"unknown report format(s) {', '.join(map(safe_text, unknown)) or safe_text(repr(text))}: "
                         "use --formats html, pdf or html,pdf")
    return words


def summary_lines(results: dict, paths: list[Path]) -> list[str]:
    """What a run found, in a few terminal lines: counts, refuted sentences, verdicts, report paths."""
    cells = results.get("cells") or []
    counts = {o: sum(1 for c in cells if c.get("outcome") == o) for o in OUTCOMES}
    lines = [f"{len(cells)} cells: " + ", ".join(f"{counts[o]} {o}" for o in OUTCOMES)]
    refuted = [c for c in cells if c.get("outcome") == "refuted"]
    if refuted:
        lines.append("refuted:")
        lines += [f"  {c.get('id')}: {c.get('sentence') or c.get('claim_text') or ''}" for c in refuted]
    for v in results.get("verdicts") or []:
        axis = f"{v.get('measure', '?')} x {v.get('operator', '?')}"
        if v.get("verdict") == "bias-measurement":
            lines.append(f"verdict {axis}: bias measurement")
        else:
            failed = [c.get("name", "?") for c in v.get("conditions") or [] if not c.get("held")]
            lines.append(f"verdict {axis}: stress test only" + (f" ({', '.join(failed)} not met)" if failed else ""))
    lines += lock_lines(results.get("lock"))
    for w in results.get("warnings") or []:  # the statistics' warnings (W0421 ...); the runtime's went to stderr
        if isinstance(w, dict):
            lines.append(f"warning[{w.get('code', '?')}]: {safe_text(str(w.get('message', '')))}")
    for p in paths:
        lines.append(f"{p.suffix[1:].upper()} report: {p}")
    return lines


def lock_lines(lock) -> list[str]:
    """The pre-registration status when the spec has a lock, each deviation named (item, change)."""
    if not isinstance(lock, dict) or not lock.get("path"):
        return []
    lines = [f"pre-registration: {safe_text(str(lock.get('status')))} ({safe_text(str(lock.get('path')))})"]
    devs = [d for d in lock.get("deviations") or [] if isinstance(d, dict)]
    if devs:
        lines.append(f"deviations from the lock ({len(devs)}):")
        lines += [f"  {safe_text(str(d.get('item')))}: {safe_text(str(d.get('change')))}" for d in devs]
    return lines


def cmd_run(args) -> int:
    formats = report_formats(args.formats)
    results = api.run(args.file, out=args.out, device=args.device, cache=args.cache,
                      progress=not args.quiet, allow_outside=args.allow_outside,
                      executor=args.executor, ray_address=args.ray_address, tensor_path=args.tensor_path,
                      formats=formats)
    out = Path(results.get("bundle", args.out or ""))
    paths = [out / n for n in ("report.html", "report.pdf") if (out / n).exists()]
    triggered = [c for c in results.get("cells") or [] if c.get("outcome") in args.fail_on]
    if args.format == "json":
        cells = results.get("cells") or []
        print(json.dumps({
            "bundle": str(out), "reports": [str(p) for p in paths],
            "outcomes": {o: sum(1 for c in cells if c.get("outcome") == o) for o in OUTCOMES},
            "refuted": [{"id": c.get("id"), "sentence": c.get("sentence")} for c in cells if c.get("outcome") == "refuted"],
            "verdicts": [{"measure": v.get("measure"), "operator": v.get("operator"), "verdict": v.get("verdict")}
                         for v in results.get("verdicts") or []],
            "fail_on": {"outcomes": list(args.fail_on), "cells": [c.get("id") for c in triggered]},
            "warnings": [w for w in results.get("warnings") or [] if isinstance(w, dict)],
        }, indent=2))
    else:
        _out("\n".join(summary_lines(results, paths)))
        asked = api.spec_formats(out) if formats is not None and "pdf" not in formats else []
        if asked is None or "pdf" in asked:  # None: ir.json unreadable, so say it anyway
            # while iterating (a hypothesis edited, run again) the PDF's layout is most of a re-run: say how to get it
            sys.stdout.flush()
            _err(f"report.pdf: not written (--formats {','.join(formats)}); `scoreaudit report {safe_text(str(out))} "
                 "--formats pdf` lays it out from this bundle, recomputing nothing")
    if triggered:
        _err(f"--fail-on {','.join(args.fail_on)}: {len(triggered)} cell(s) triggered it:")
        for c in triggered:
            _err(f"  {c.get('outcome')}: {c.get('id')}: {c.get('sentence') or ''}")
        return Exit.FAIL_ON
    return Exit.OK


def cmd_report(args) -> int:
    formats = report_formats(args.formats)
    if args.export:  # a paper's table or a model card's summary, from the same cells as the HTML
        print(safe_text(str(api.export(args.dir, args.export))))
        if formats is None:
            return Exit.OK
    # a bar on a terminal, plain `progress:` lines on stderr elsewhere (a CI log is never silent); -q: none
    for p in api.render(args.dir, formats=formats, progress=not args.quiet):
        print(safe_text(str(p)))
    return Exit.OK


def cmd_verify(args) -> int:
    mismatches, unchecked = api.verify_bundle(args.dir)
    if getattr(args, "format", "text") == "json":  # {"ok", "mismatches", "unchecked"}; same exit codes
        import json

        status = Exit.MISMATCH if mismatches else (Exit.ENVIRONMENT if unchecked else Exit.OK)
        print(json.dumps({"bundle": str(args.dir), "ok": status == Exit.OK, "status":
                          {Exit.OK: "ok", Exit.MISMATCH: "mismatch", Exit.ENVIRONMENT: "incomplete"}[status],
                          "mismatches": list(mismatches), "unchecked": list(unchecked)}, indent=2))
        return status
    if mismatches:
        for m in mismatches:
            _err(f"mismatch: {safe_text(m)}")
        _err(f"verify failed: {len(mismatches)} mismatch(es)")
        return Exit.MISMATCH
    if unchecked:  # never a silent pass: what could not be checked here is said, with its own exit code
        for u in unchecked:
            _err(f"not checked: {u}")
        _err(f"verify incomplete: every other number and file in {safe_text(args.dir)} checks out")
        return Exit.ENVIRONMENT
    print(f"ok: every number in {safe_text(args.dir)} recomputes from its tables and every file matches manifest.json")
    return Exit.OK


def cmd_lock(args) -> int:
    print(f"locked: {safe_text(str(api.lock(args.file, after_scoring=args.after_scoring)))}")
    return Exit.OK


def cmd_simulate(args) -> int:
    table = api.simulate(args.file, reps=args.reps, truth=args.truth, out=args.out, progress=not args.quiet,
                         n_boot=args.bootstrap)
    _out(table)
    return Exit.OK


# ---------------------------------------------------------------- parser


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the exit-code table's layout and shows defaults."""


def _format_option(s) -> None:
    """`--format text|json` on every subcommand that can print JSON (one spelling everywhere)."""
    s.add_argument("--format", choices=["text", "json"], default="text",
                   help="text for people (default) or json for programs")
    # the old spelling, kept working for scripts: --json == --format json
    s.add_argument("--json", dest="format", action="store_const", const="json", help=argparse.SUPPRESS)


def cmd_lsp(args) -> int:
    try:  # the language server is a second front end over the facade, not a part of it
        from scoreaudit.lsp.server import main as serve
    except ImportError as e:  # pygls / lsprotocol are the `lsp` extra
        _err(f"error: the language server needs the lsp extra ({e.name or e}): pip install 'scoreaudit[lsp]'")
        return int(Exit.ENVIRONMENT)
    return serve()


SHELLS = ("bash", "zsh", "fish")


def cmd_completion(args) -> int:
    """The shell code that makes SHELL complete `scoreaudit` (argcomplete's, for this executable name)."""
    import argcomplete

    sys.stdout.write(argcomplete.shellcode(["scoreaudit"], shell=args.shell))
    return Exit.OK


class _Paths:
    """An argcomplete completer, built only while completing (argcomplete is not imported otherwise).

    `suffix`: complete files with that extension (and folders, to descend into); None: folders only."""

    def __init__(self, suffix: str | None = None) -> None:
        self.suffix = suffix

    def __call__(self, **kwargs):
        from argcomplete.completers import DirectoriesCompleter, FilesCompleter

        inner = FilesCompleter(allowednames=(self.suffix,)) if self.suffix else DirectoriesCompleter()
        return inner(**kwargs)


def _complete(action, suffix: str | None = None):
    action.completer = _Paths(suffix)
    return action


def _autocomplete(parser: argparse.ArgumentParser) -> None:
    """Answer a shell's completion request and exit (argcomplete's protocol: `_ARGCOMPLETE` is set).

    Checked before argcomplete is imported, so a command that is not completing pays nothing for it."""
    if "_ARGCOMPLETE" in os.environ:
        import argcomplete

        argcomplete.autocomplete(parser)


def cmd_view(args) -> int:
    try:  # the explorer is another front end over bundles, like the language server (the view extra)
        from scoreaudit.view.app import serve
    except ImportError as e:  # starlette / uvicorn
        _err(f"error: scoreaudit view needs the view extra ({e.name or e}): pip install 'scoreaudit[view]'")
        return int(Exit.ENVIRONMENT)
    missing = [d for d in args.dirs if not Path(d).is_dir()]
    if missing:  # a typo in a path is a usage slip, not a bundle to show as broken
        for d in missing:
            _err(f"error: {safe_text(str(d))}: no such folder (give the results folder of `scoreaudit run --out`)")
        return int(Exit.IO)
    serve(args.dirs, port=args.port, echo=lambda line: print(safe_text(line), flush=True))
    return Exit.OK


def cmd_diff(args) -> int:
    from scoreaudit.view.compare import diff_bundles, text_lines, triggers_fail_on

    cmp = diff_bundles(args.a, args.b)
    if args.format == "json":
        print(json.dumps(cmp.as_json(), indent=2))
    else:
        _out("\n".join(text_lines(cmp)))
    triggered = triggers_fail_on(cmp) if args.fail_on else []
    if triggered:
        _err(f"--fail-on changed: {len(triggered)} cell(s) changed outcome or are in one bundle only:")
        for cid in triggered:
            _err(f"  {cid}")
        return Exit.FAIL_ON
    return Exit.OK


def _at_least(low: int):
    """An argparse type: an integer >= `low` (a usage error, exit 2, otherwise; never a crash later)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below {low}")
        return value
    parse.__name__ = f"integer >= {low}"
    return parse


class _Version(argparse.Action):
    """`--version`, looked up only when asked: reading the installed metadata costs every other command
    ~0.07 s (importlib.metadata scans every distribution), a tenth of `check`."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"scoreaudit {version()}")  # on stdout, as argparse's own version action prints it
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scoreaudit", description="Audit image aesthetic / preference scorers.",
                                epilog=epilog(), formatter_class=_Formatter)
    p.add_argument("--version", action=_Version, help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str, description: str | None = None):
        return sub.add_parser(name, help=help, description=description or help, epilog=epilog(),
                              formatter_class=_Formatter)

    outside = {"action": "store_true",
               "help": "let the spec read data outside its own folder (refused by default)"}

    s = command("check", "check specs (and the manifests and tables they name) without running anything")
    _complete(s.add_argument("files", nargs="+", metavar="FILE", help=".audit file(s) to check"), "audit")
    _format_option(s)
    s.add_argument("--allow-outside", **outside)
    s.set_defaults(func=cmd_check)

    s = command("plan", "print the execution plan: steps, images, forward passes per scorer")
    _complete(s.add_argument("file", metavar="FILE", help=".audit file"), "audit")
    _format_option(s)
    s.add_argument("--allow-outside", **outside)
    s.add_argument("--cache", nargs="?", const="", default=None, metavar="FILE",
                   help="also say which steps the cache holds and which will run "
                        "(default cache: .scoreaudit/cache.sqlite next to the spec)")
    s.set_defaults(func=cmd_plan)

    s = command("fmt", "canonical formatting (prints the formatted spec unless --write or --check)")
    _complete(s.add_argument("files", nargs="+", metavar="FILE", help=".audit file(s) to format"), "audit")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--write", "-w", action="store_true", help="rewrite the files in place")
    g.add_argument("--check", action="store_true", help="exit 1 when a file is not formatted (nothing is written)")
    s.set_defaults(func=cmd_fmt)

    s = command("describe", "documentation of an operator, scorer, statistic, region, measure or setting")
    s.add_argument("name", nargs="?", metavar="NAME", help="what to describe (e.g. lab_shift, fidelity_index, alpha)")
    s.add_argument("--list", nargs="?", const="", choices=["", *api.DESCRIBE_KINDS], metavar="KIND",
                   help="list every name (of one kind: " + ", ".join(api.DESCRIBE_KINDS) + ")")
    _format_option(s)
    s.set_defaults(func=cmd_describe)

    s = command("scorers", "every scorer, its parameters, and whether it is ready on this machine")
    _format_option(s)
    s.set_defaults(func=cmd_scorers)

    s = command("run", "run an audit (cached, resumable), write the results bundle and the report")
    _complete(s.add_argument("file", metavar="FILE", help=".audit file"), "audit")
    _complete(s.add_argument("--out", default=None, metavar="DIR",
                             help="results folder (default: out/<spec name> next to the spec)"))
    s.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                   help="where scorers run (default auto: cuda when available)")
    s.add_argument("--tensor-path", choices=["auto", "on", "off"], default="auto",
                   help="keep each image on the device through operators, measures and scorer preprocessing "
                        "(torch ops); default auto: on with a CUDA device, off (the numpy/OpenCV reference) on the CPU")
    s.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="how steps are executed: local (this process, the default) or ray (Ray tasks and "
                        "actors; pip install 'scoreaudit[ray]')")
    s.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="with --executor ray: join this cluster (HOST:PORT); default: a local Ray instance")
    s.add_argument("--cache", default=None, metavar="FILE",
                   help="score cache (default: .scoreaudit/cache.sqlite next to the spec)")
    s.add_argument("--fail-on", type=fail_on_list, default=(), metavar="OUTCOMES",
                   help="exit 4 when any cell has one of these outcomes, e.g. refuted or refuted,inconclusive "
                        "(the cells are printed); for CI gates")
    s.add_argument("--formats", default=None, metavar="LIST",
                   help="the report files to write: html, pdf or html,pdf (default: what the spec's report block "
                        "asks); --formats html skips the PDF's layout while iterating, and `scoreaudit report DIR "
                        "--formats pdf` writes it later from the bundle")
    _format_option(s)
    s.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    s.add_argument("--allow-outside", **outside)
    s.set_defaults(func=cmd_run)

    s = command("report", "re-render the report from a results folder (no recompute)")
    _complete(s.add_argument("dir", metavar="DIR", help="results folder written by `scoreaudit run`"))
    s.add_argument("--formats", default=None, metavar="LIST",
                   help="html, pdf or html,pdf (default: what the spec's report block asks)")
    s.add_argument("--format", dest="export", choices=["tex", "md"], default=None,
                   help="also (or, without --formats, only) export the hypotheses' outcomes: tex = a booktabs "
                        "LaTeX table (report.tex), md = a Markdown summary (report.md)")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress output while rendering")
    s.set_defaults(func=cmd_report)

    s = command("verify", "recompute every reported number from the bundle's tables; exit 5 on a mismatch")
    _complete(s.add_argument("dir", metavar="DIR", help="results folder written by `scoreaudit run`"))
    s.add_argument("--format", choices=["text", "json"], default="text",
                   help="json: {bundle, ok, status, mismatches, unchecked} on stdout (exit codes as for text)")
    s.set_defaults(func=cmd_verify)

    s = command("lock", "pre-register: write FILE.lock (every outcome-changing item, UTC time)")
    _complete(s.add_argument("file", metavar="FILE", help=".audit file to lock"), "audit")
    s.add_argument("--after-scoring", action="store_true",
                   help="lock although scores of the spec exist already (recorded: the report says so)")
    s.set_defaults(func=cmd_lock)

    s = command("simulate", "design diagnosis with planted scorers: power, false-positive rate, CI coverage")
    _complete(s.add_argument("file", metavar="FILE", help=".audit file"), "audit")
    s.add_argument("--reps", type=_at_least(1), default=200, help="simulated replications (default 200)")
    s.add_argument("--truth", default=None, metavar="FILE", help="JSON file of true values per scorer")
    s.add_argument("--bootstrap", type=_at_least(1), default=None, metavar="N",
                   help="bootstrap resamples per replication (default: the audit's `bootstrap` setting)")
    s.add_argument("--out", default=None, metavar="DIR", help="folder for the simulation tables")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    s.set_defaults(func=cmd_simulate)

    s = command("weights", "every file the model scorers need, where it is, and `hf download` lines; "
                "--download fetches the missing ones (exit 3 while any is missing)")
    s.add_argument("targets", nargs="*", metavar="SCORER|FILE.audit",
                   help="scorer names or specs (default: every model scorer)")
    s.add_argument("--download", action="store_true",
                   help="fetch the missing files into the Hugging Face cache (the only command that downloads)")
    _format_option(s)
    s.set_defaults(func=cmd_weights)

    s = command("lsp", "language server for editors, over stdin/stdout (the lsp extra)")
    s.set_defaults(func=cmd_lsp)

    s = command("view", "explore bundles in a browser: cells, images, exclusions, two runs side by side "
                "(127.0.0.1 only; the view extra)")
    _complete(s.add_argument("dirs", nargs="+", metavar="DIR", help="results folder(s) written by `scoreaudit run`"))
    s.add_argument("--port", type=_at_least(0), default=0, help="port on 127.0.0.1 (default 0: a free one)")
    s.set_defaults(func=cmd_view)

    s = command("diff", "compare two bundles cell by cell: changed outcomes, estimate changes, paired intervals")
    _complete(s.add_argument("a", metavar="A", help="results folder (before)"))
    _complete(s.add_argument("b", metavar="B", help="results folder (after)"))
    _format_option(s)
    s.add_argument("--fail-on", choices=["changed"], default=None,
                   help="exit 4 when a cell changed outcome or is in one bundle only (for CI)")
    s.set_defaults(func=cmd_diff)

    s = command("completion", "print the shell code for tab completion: eval \"$(scoreaudit completion bash)\" "
                "(zsh: the same with zsh; fish: scoreaudit completion fish | source)")
    s.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash, zsh or fish")
    s.set_defaults(func=cmd_completion)
    return p


IO_CODES = frozenset({"E0720", "E0730"})  # diagnostics about unusable files rather than the spec


def _os_message(e: OSError) -> str:
    """One line for an OSError: the path and the reason (a refused path carries its own sentence)."""
    if getattr(e, "message", None):  # safeio.UnsafePath: not a regular file, not UTF-8, a link ...
        return f"error: {safe_text(str(e))}"
    if isinstance(e, FileNotFoundError):
        return f"error: no such file or folder: {safe_text(str(e.filename or e))}"
    where = f"{safe_text(str(e.filename))}: " if getattr(e, "filename", None) else ""
    hint = {PermissionError: " (check the permissions, or choose another place with --out / --cache)",
            IsADirectoryError: " (a file was expected)"}.get(type(e), "")
    return f"error: {where}{e.strerror or e or type(e).__name__}{hint}"


def _quiet_stdout() -> None:
    """After a closed pipe: send what is left to /dev/null, so exiting prints no second error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _dispatch(args) -> int:
    """Run one subcommand; each kind of failure a user can cause is one line and its documented code."""
    import sqlite3

    try:
        return int(args.func(args) or 0)
    except DiagnosticError as e:
        _err(str(e))
        # the cache file or a data file cannot be used: an I/O problem, not an error in the spec
        io_only = e.diagnostics and all(d.code in IO_CODES for d in e.diagnostics if d.is_error)
        return int(Exit.IO if io_only else Exit.SPEC)
    except UsageError as e:
        _err(f"error: {e}")
        return int(Exit.USAGE)
    except api.refused_errors() as e:
        _err(f"error: {safe_text(str(e))}")
        return int(Exit.USAGE)
    except api.unavailable_errors() as e:
        _err(f"error: {e}")
        return int(Exit.ENVIRONMENT)
    except api.bundle_errors() as e:
        _err(f"error: {safe_text(str(e))}")
        return int(Exit.IO)
    except BrokenPipeError:  # the reader went away (`scoreaudit plan --json | head`): end quietly, as `cat` does
        _quiet_stdout()
        return int(Exit.IO)
    except UnicodeDecodeError as e:
        _err(f"error: a file is not UTF-8 text ({e.reason} at byte {e.start}); save it as UTF-8")
        return int(Exit.IO)
    except sqlite3.DatabaseError as e:
        _err(f"error: the score cache cannot be read ({e}); delete the cache file (by default "
             ".scoreaudit/cache.sqlite next to the spec) or give another with --cache, then run again")
        return int(Exit.IO)
    except OSError as e:  # missing, a folder, not a regular file, unwritable, a link: one line
        _err(_os_message(e))
        return int(Exit.IO)
    except KeyboardInterrupt:
        _err("interrupted")
        return int(Exit.INTERRUPTED)


def main(argv: list[str] | None = None) -> int:
    api.prefer_system_allocator()  # this process is the command's own: Arrow's pages go back between stages
    parser = build_parser()
    _autocomplete(parser)
    args = parser.parse_args(argv)
    status = _dispatch(args)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # closed while flushing what the command printed last
        _quiet_stdout()
    return status


def entry() -> None:
    """The `scoreaudit` command (and `python -m scoreaudit`): `main`, then `leave`."""
    leave(main())


def leave(status: int) -> None:
    """End the process once the command has finished, without tearing the interpreter down.

    Python's own exit frees every module and object one by one (numpy, pyarrow, polars, pandas): about
    0.15 s after the work is done, an eighth of a cached re-run (issue 33). Nothing of the command is
    left to do by then, so the process flushes its output, runs the exit handlers that libraries
    registered (atexit: logging, Ray, multiprocessing) and ends. A thread still running that is not a
    daemon gets Python's ordinary exit, which waits for it.
    """
    import atexit
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(status)
    _flush()
    atexit._run_exitfuncs()  # what Python runs at exit before the teardown this skips
    _flush()
    os._exit(int(status))


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:  # the reader is gone: nothing more can reach it
            _quiet_stdout()
        except (OSError, ValueError):  # closed or replaced by the caller
            pass


if __name__ == "__main__":  # pragma: no cover
    entry()
