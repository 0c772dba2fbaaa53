"""`scoreaudit` command line: a table of subcommands over the facade in `api`.

Exit codes: 0 success; 1 errors in the input (diagnostics printed), or a
verify mismatch; 2 `run --fail-on refuted` found a refuted cell; 3 the
environment cannot do what was asked (missing extra, weights or GPU).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from scoreaudit import api
from scoreaudit.diagnostics import DiagnosticError, render_all, to_json

def _err(msg: str) -> None:
    print(msg, file=sys.stderr)


# ---------------------------------------------------------------- commands


def cmd_check(args) -> int:
    status = 0
    all_diags = []
    for f in args.files:
        try:
            checked = api.check(f)
        except FileNotFoundError:
            _err(f"error: no such file: {f}")
            status = 1
            continue
        all_diags.extend(checked.diagnostics)
        if args.format == "text" and checked.diagnostics:
            _err(render_all(checked.diagnostics, checked.source))
        if not checked.ok:
            status = 1
    if args.format == "json":
        print(to_json(all_diags))
    elif status == 0:
        _err(f"ok: {len(args.files)} file(s) checked, no errors")
    return status


def _compile_or_report(path):
    try:
        return api.compile(path)
    except DiagnosticError as e:
        _err(str(e))
        return None


def cmd_plan(args) -> int:
    from scoreaudit.compiler.plan import render_plan

    compiled = _compile_or_report(args.file)
    if compiled is None:
        return 1
    ir, plan = compiled
    print(plan.model_dump_json(indent=2) if args.json else render_plan(plan))
    return 0


def cmd_fmt(args) -> int:
    from scoreaudit.compiler.fmt import format_module

    status = 0
    for f in args.files:
        source = api.read_source(f)
        module, diags = api.parse(source, f)
        if module is None or any(d.is_error for d in diags):
            _err(render_all(diags, source))
            status = 1
            continue
        out = format_module(module)
        if args.check:
            if out != source:
                _err(f"{f}: would reformat")
                status = 1
        elif args.write:
            Path(f).write_text(out, encoding="utf-8")
        else:
            sys.stdout.write(out)
    return status


def cmd_describe(args) -> int:
    from scoreaudit.compiler.describe import describe

    text = describe(args.name)
    if text is None:
        _err(f"error: nothing called {args.name!r}; try `scoreaudit scorers` or spec/language.md")
        return 1
    print(text)
    return 0


def cmd_scorers(args) -> int:
    from scoreaudit.runtime.scorers import list_scorers

    print(list_scorers(as_json=args.json))
    return 0


def cmd_run(args) -> int:
    from scoreaudit.plugins.base import ScorerUnavailable

    try:
        results = api.run(args.file, out=args.out, device=args.device, cache=args.cache,
                          progress=not args.quiet, allow_outside=args.allow_outside)
    except DiagnosticError as e:
        _err(str(e))
        return 1
    except ScorerUnavailable as e:
        _err(f"error: {e}")
        return 3
    out = Path(results.get("bundle", args.out or ""))
    for name in ("report.html", "report.pdf"):
        if (out / name).exists():
            print(f"{name[7:].upper()} report: {out / name}")
    if args.fail_on == "refuted" and any(c.get("outcome") == "refuted" for c in results.get("cells", [])):
        _err("refuted cells found (--fail-on refuted)")
        return 2
    return 0


def cmd_report(args) -> int:
    for p in api.render(args.dir):
        print(p)
    return 0


def cmd_verify(args) -> int:
    from scoreaudit.reports.verify import verify

    mismatches = verify(Path(args.dir))
    if mismatches:
        for m in mismatches:
            _err(f"mismatch: {m}")
        _err(f"verify failed: {len(mismatches)} mismatch(es)")
        return 1
    print(f"ok: every number in {args.dir} recomputes from its tables")
    return 0


def cmd_lock(args) -> int:
    from scoreaudit.reports.lock import write_lock

    try:
        path = write_lock(Path(args.file))
    except DiagnosticError as e:
        _err(str(e))
        return 1
    print(f"locked: {path}")
    return 0


def cmd_simulate(args) -> int:
    from scoreaudit.stats.simulate import simulate

    compiled = _compile_or_report(args.file)
    if compiled is None:
        return 1
    ir, plan = compiled
    table = simulate(ir, spec_path=Path(args.file), reps=args.reps, truth=args.truth,
                     out=args.out, progress=not args.quiet, n_boot=args.bootstrap)
    print(table)
    return 0


def cmd_lsp(args) -> int:
    try:
        from scoreaudit.lsp.server import main as serve
    except ImportError as e:  # pygls / lsprotocol are the `lsp` extra
        from scoreaudit.exitcodes import Exit

        _err(f"error: the language server needs the lsp extra ({e.name or e}): pip install 'scoreaudit[lsp]'")
        return int(Exit.ENVIRONMENT)
    return serve()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scoreaudit", description="Audit image aesthetic / preference scorers.")
    p.add_argument("--version", action="version", version=f"scoreaudit {_version()}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("check", help="check specs; exit 1 on errors")
    s.add_argument("files", nargs="+")
    s.add_argument("--format", choices=["text", "json"], default="text")
    s.set_defaults(func=cmd_check)

    s = sub.add_parser("plan", help="print the execution plan")
    s.add_argument("file")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_plan)

    s = sub.add_parser("fmt", help="canonical formatting")
    s.add_argument("files", nargs="+")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--write", "-w", action="store_true", help="rewrite the files in place")
    g.add_argument("--check", action="store_true", help="exit 1 when a file is not formatted")
    s.set_defaults(func=cmd_fmt)

    s = sub.add_parser("describe", help="documentation of a plugin or statistic")
    s.add_argument("name")
    s.set_defaults(func=cmd_describe)

    s = sub.add_parser("scorers", help="every scorer and whether it is ready here")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_scorers)

    s = sub.add_parser("run", help="run an audit (cached, resumable) and write the report")
    s.add_argument("file")
    s.add_argument("--out", default=None, help="results folder (default: out/<spec name> next to the spec)")
    s.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    s.add_argument("--executor", choices=["local"], default="local")
    s.add_argument("--cache", default=None, help="cache file (default: .scoreaudit/cache.sqlite next to the spec)")
    s.add_argument("--fail-on", choices=["refuted"], default=None)
    s.add_argument("--quiet", "-q", action="store_true", help="no progress bars")
    s.add_argument("--allow-outside", action="store_true",
                   help="let the spec read data outside its own folder (refused by default)")
    s.set_defaults(func=cmd_run)

    s = sub.add_parser("report", help="re-render the report from a results folder")
    s.add_argument("dir")
    s.set_defaults(func=cmd_report)

    s = sub.add_parser("verify", help="recompute every reported number; exit 1 on mismatch")
    s.add_argument("dir")
    s.set_defaults(func=cmd_verify)

    s = sub.add_parser("lock", help="pre-register: write FILE.lock")
    s.add_argument("file")
    s.set_defaults(func=cmd_lock)

    s = sub.add_parser("simulate", help="design diagnosis with planted scorers")
    s.add_argument("file")
    s.add_argument("--reps", type=int, default=200)
    s.add_argument("--truth", default=None, help="JSON file of true values per scorer")
    s.add_argument("--bootstrap", type=int, default=None,
                   help="bootstrap resamples per replication (default: the audit's `bootstrap` setting)")
    s.add_argument("--out", default=None)
    s.add_argument("--quiet", "-q", action="store_true")
    s.set_defaults(func=cmd_simulate)

    s = sub.add_parser("lsp", help="language server for editors, over stdin/stdout (the lsp extra)")
    s.set_defaults(func=cmd_lsp)
    return p


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("scoreaudit")
    except Exception:  # pragma: no cover
        return "0+unknown"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
