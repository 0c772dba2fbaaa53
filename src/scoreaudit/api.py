"""The facade the CLI (and Python users) call: parse, check, compile, run, render.

Each function is a thin composition of one layer's entry point, so the CLI
never reaches into a layer's internals and layers stay one-directional:
grammar → compiler → runtime → stats → reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from scoreaudit.diagnostics import Diagnostic, DiagnosticError, has_errors


@dataclass(frozen=True)
class Checked:
    """The result of checking one file: the IR when there were no errors."""

    path: str
    source: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    ir: object | None = None  # scoreaudit.compiler.ir.AuditIR

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def read_source(path: str | Path) -> str:
    return Path(path).read_text(encoding="utf-8")


def parse(source: str, path: str = "<input>"):
    """Text → (ast.Module | None, diagnostics)."""
    from scoreaudit.grammar.parser import parse as _parse

    return _parse(source, path)


def check(path: str | Path, source: str | None = None, allow_outside: bool = False,
          tables: bool = True) -> Checked:
    """Parse and check a spec; never raises for problems in the spec.

    `tables`: also read any precomputed tables and check they cover every cell
    (`run` leaves this to the executor, which does the same check on the ids it
    will use, so the tables are read once per run).
    """
    from scoreaudit.compiler.check import check as _check

    path = str(path)
    source = read_source(path) if source is None else source
    module, diags = parse(source, path)
    ir = None
    if module is not None and not has_errors(diags):
        ir, more = _check(module, source, path)
        from scoreaudit.compiler.coverage import uses_precomputed

        if tables and ir is not None and not has_errors(more) and Path(path).is_file() and uses_precomputed(ir):
            # Precomputed tables: every (image, operator, dose, scorer) a hypothesis needs must be
            # present before anything runs.
            from scoreaudit.runtime.precomputed import check_precomputed

            spec_dir = Path(path).resolve().parent
            pre, _ = check_precomputed(ir, spec_dir, root=None if allow_outside else spec_dir)
            more = list(more) + list(pre)
            if has_errors(pre):
                ir = None
        diags = list(diags) + list(more)
    return Checked(path=path, source=source, diagnostics=list(diags), ir=ir)


def compile(path: str | Path, allow_outside: bool = False, tables: bool = True):
    """Spec file → (AuditIR, ExecutionPlan); raises DiagnosticError on errors."""
    from scoreaudit.compiler.plan import build_plan

    checked = check(path, allow_outside=allow_outside, tables=tables)
    if not checked.ok or checked.ir is None:
        raise DiagnosticError(checked.diagnostics, checked.source)
    return checked.ir, build_plan(checked.ir)


def run(path: str | Path, out: str | Path | None = None, device: str = "auto",
        cache: str | Path | None = None, progress: bool = True, render_report: bool = True,
        allow_outside: bool = False):
    """Compile, execute (cached, resumable), analyse and render. Returns the results dict."""
    from scoreaudit.runtime.executor import execute
    from scoreaudit.stats.engine import analyse

    path = Path(path)
    ir, plan = compile(path, allow_outside=allow_outside, tables=False)  # the executor checks the tables
    out = Path(out) if out is not None else path.parent / "out" / path.stem
    from scoreaudit.reports.lock import write_lock_status

    execute(ir, plan, spec_path=path, out_dir=out, device=device, cache_path=cache, progress=progress,
            allow_outside=allow_outside)
    write_lock_status(out, path, ir)  # pre-registration status, read by the statistics into results.json
    results = analyse(out, progress=progress)
    if render_report:
        render(out)
    return results


def render(bundle: str | Path, formats=None) -> list[Path]:
    """Results bundle → report.html (and report.pdf); recomputes nothing."""
    from scoreaudit.reports.render import render as _render

    return _render(Path(bundle), formats=formats)
