"""The facade the CLI (and Python users) call: parse, check, compile, run, render.

Each function is a thin composition of one layer's entry point, so the CLI
never reaches into a layer's internals and layers stay one-directional:
grammar → compiler → runtime → stats → reports. `register_scorer` makes a
Python callable a scorer a spec can call (see examples/custom_scorer/).

    from scoreaudit import api
    checked = api.check("audit.audit")          # diagnostics, never raises for spec problems
    ir, plan = api.compile("audit.audit")       # raises DiagnosticError on errors
    results = api.run("audit.audit", out="out") # results.json as a dict; report.html written
    api.render("out")                           # re-render the report from the bundle
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from scoreaudit.diagnostics import Diagnostic, DiagnosticError, has_errors

if TYPE_CHECKING:  # the compiler is imported when a function needs it
    from collections.abc import Iterable

    from scoreaudit.compiler.ir import AuditIR


@dataclass(frozen=True)
class Checked:
    """The result of checking one file: the IR when there were no errors."""

    path: str
    source: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    ir: AuditIR | None = None

    @property
    def ok(self) -> bool:
        return not has_errors(self.diagnostics)


def read_source(path: str | Path) -> str:
    """A spec's text: a regular UTF-8 file (a directory, FIFO or other encoding is refused with a message)."""
    from scoreaudit.safeio import UnsafePath, read_regular

    try:
        return read_regular(path).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise UnsafePath(f"{path} is not UTF-8 text ({e.reason} at byte {e.start}); save it as UTF-8") from None


def parse(source: str, path: str = "<input>"):
    """Text → (ast.Module | None, diagnostics)."""
    from scoreaudit.grammar.parser import parse as _parse

    return _parse(source, path)


def check(path: str | Path, source: str | None = None, allow_outside: bool = False,
          tables: bool = True, environment: bool = False) -> Checked:
    """Parse and check a spec; never raises for problems in the spec.

    `tables`: also read the manifests that exist (every column the spec names, W0620
    without an id column) and any precomputed tables, and check they cover every cell
    (`run` leaves this to the executor, which does the same check on the ids it
    will use, so the tables are read once per run).
    `environment`: also warn about what this machine lacks: each scorer that cannot run here (W0810)
    and each data file the spec names that does not exist, with what was therefore not checked
    (W0621); `scoreaudit check` asks for it; a spec's validity does not depend on it.
    """
    from scoreaudit.compiler.check import check as _check

    path = str(path)
    source = read_source(path) if source is None else source
    module, diags = parse(source, path)
    ir = None
    if module is not None and not has_errors(diags):
        ir, more = _check(module, source, path)
        from scoreaudit.compiler.coverage import uses_precomputed

        if ir is not None and not has_errors(more):  # model files only from the model roots (E0707)
            from scoreaudit.runtime.model_paths import model_path_diagnostics

            outside = model_path_diagnostics(ir, path, allow_outside)
            more = list(more) + outside
            if outside:
                ir = None

        if tables and ir is not None and not has_errors(more) and Path(path).is_file():
            # The manifests that exist: every missing or misspelled column now, not at run time.
            from scoreaudit.runtime.manifest_check import check_manifests

            spec_dir = Path(path).resolve().parent
            cols = check_manifests(ir, path, root=None if allow_outside else spec_dir)
            more = list(more) + cols
            if has_errors(cols):
                ir = None
        if environment and tables and ir is not None and not has_errors(more) and Path(path).is_file():
            # The data files that do not exist yet (W0621): each named, with what of it was not checked.
            from scoreaudit.runtime.missing_data import missing_data

            more = list(more) + missing_data(ir, path)
        if tables and ir is not None and not has_errors(more) and Path(path).is_file() and uses_precomputed(ir):
            # Precomputed tables: every (image, operator, dose, scorer) a hypothesis needs must be
            # present before anything runs.
            from scoreaudit.runtime.precomputed import check_precomputed

            spec_dir = Path(path).resolve().parent
            pre, given = check_precomputed(ir, spec_dir, root=None if allow_outside else spec_dir)
            more = list(more) + list(pre)
            if has_errors(pre):
                ir = None
            else:  # W0423: a discrete test that cannot reach alpha on the data already on disk
                from scoreaudit.runtime.attainable import level_diagnostics

                more += level_diagnostics(ir, path, given, None if allow_outside else spec_dir)
        if environment and ir is not None and not has_errors(more):
            # Scorers that cannot run here (missing extra or weights), every missing file named.
            from scoreaudit.runtime.scorers import readiness_diagnostics

            more = list(more) + readiness_diagnostics(ir, Path(path).resolve().parent, str(path))
        diags = list(diags) + list(more)
    return Checked(path=path, source=source, diagnostics=list(diags), ir=ir)


def compile(path: str | Path, allow_outside: bool = False, tables: bool = True):
    """Spec file → (AuditIR, ExecutionPlan); raises DiagnosticError on errors."""
    from scoreaudit.compiler.plan import build_plan

    checked = check(path, allow_outside=allow_outside, tables=tables)
    if not checked.ok or checked.ir is None:
        raise DiagnosticError(checked.diagnostics, checked.source)
    return checked.ir, build_plan(checked.ir)


def prefer_system_allocator() -> None:
    """For a process of its own (the command line), before anything runs: Arrow allocates with the C
    library's malloc, whose freed pages a run gives back between its stages (memtrim.py)."""
    from scoreaudit.memtrim import prefer_system_allocator as _prefer

    _prefer()


def run(path: str | Path, out: str | Path | None = None, device: str = "auto",
        cache: str | Path | None = None, progress: bool = True, render_report: bool = True,
        allow_outside: bool = False, executor: str = "local", ray_address: str | None = None,
        tensor_path: str = "auto", formats: Iterable[str] | None = None):
    """Compile, execute (cached, resumable), analyse and render. Returns the results dict.

    `formats`: the report files to write ("html", "pdf"); None: what the spec's report block asks. A run
    that writes a PDF starts WeasyPrint in a process of its own at once (reports/pdf_process.py).
    `executor`: "local" or "ray" (`ray_address`: an existing cluster; None: a local Ray instance).
    `tensor_path`: "auto" (on for a CUDA device), "on" or "off": keep each image on the device through
    operators, measures and model-scorer preprocessing (runtime/tensor_steps.py).
    """
    from scoreaudit.runtime.cache import cache_files
    from scoreaudit.runtime.executor import default_cache_path, execute
    from scoreaudit.safeio import check_output_dir, refuse_planted_links, staging_for, swap_in

    path = Path(path)
    ir, plan = compile(path, allow_outside=allow_outside, tables=False)  # the executor checks the tables
    out = Path(out) if out is not None else path.parent / "out" / path.stem
    project = path.resolve().parent
    # writes never pass through a link planted in the project (spec/containment.md), whatever --out says
    refuse_planted_links(out, project, "output folder")
    for f in cache_files(Path(cache) if cache is not None else default_cache_path(path)):
        refuse_planted_links(f, project, "score cache")
    if out.exists():
        check_output_dir(out)  # a link or a file at --out itself: refused before anything runs
    work = staging_for(out)  # a re-run writes beside the old bundle and swaps it in at the end
    refuse_planted_links(work, project, "output folder")
    wanted = [f.lower() for f in (formats if formats is not None else ir.report.formats)]
    from scoreaudit.reports.lock import write_lock_status

    with _pdf_process(render_report and "pdf" in wanted) as pdf_process:
        execute(ir, plan, spec_path=path, out_dir=work, device=device, cache_path=cache, progress=progress,
                allow_outside=allow_outside, executor=executor, ray_address=ray_address, tensor_path=tensor_path)
        from scoreaudit.memtrim import trim

        trim()  # what the pipeline freed goes back to the system before the statistics and the report peak
        write_lock_status(work, path, ir)  # pre-registration status, read by the statistics into results.json
        from scoreaudit.runtime.thumbnails import write_thumbnails

        previous = out if out.is_dir() else None  # the bundle this run replaces: unchanged outputs are copied from it
        write_thumbnails(ir, path, work, root=None if allow_outside else project, previous=previous)
        from scoreaudit.stats import results_cache

        # statistics whose inputs did not change are copied from the old bundle (stats/results_cache.py), and the
        # engine (scipy, statsmodels) is imported only when something must be computed
        stats_key = results_cache.inputs_key(work)
        results = results_cache.adopt(previous, work, stats_key)
        if results is None:
            from scoreaudit.stats.engine import analyse

            results = analyse(work, progress=progress)
            results_cache.write_record(work, stats_key, results)
            trim()
        from scoreaudit.runtime.movers import write_mover_thumbnails

        write_mover_thumbnails(ir, path, work, root=None if allow_outside else project, progress=progress,
                               previous=previous)  # top movers
        trim()
        if render_report:
            from scoreaudit.reports.render import render as _render

            # the whole manifest is written next; reports whose inputs did not change are copied from the old bundle
            _render(work, formats=formats, update_manifest=False, progress=progress, previous=previous,
                    pdf_process=pdf_process)
        from scoreaudit.reports.manifest import write_manifest

        write_manifest(work)  # sha256 of every file of the bundle, checked by `verify`
        swap_in(work, out)  # the old bundle or the new one, whole, at every instant
        return {**results, "bundle": str(out)}


def _pdf_process(wanted: bool):
    """WeasyPrint started in a process of its own when the run will write a PDF (reports/pdf_process.py):
    its import and font loading overlap the pipeline and the statistics instead of following them."""
    from contextlib import nullcontext

    if not wanted:
        return nullcontext()
    from scoreaudit.reports.pdf_process import PdfProcess

    return PdfProcess.start() or nullcontext()


def spec_formats(bundle: str | Path) -> list[str] | None:
    """The report formats the bundle's spec asks for (its ir.json's report block; [] for none), lower case;
    None when ir.json cannot be read."""
    from scoreaudit.outputrecords import read_object

    ir = read_object(Path(bundle) / "ir.json")
    report = ir.get("report") or {}
    formats = report.get("formats") or [] if isinstance(report, dict) else None
    if not ir or not isinstance(formats, list):
        return None
    return [str(f).lower() for f in formats]


def render(bundle: str | Path, formats=None, progress: bool = False) -> list[Path]:
    """Results bundle → report.html (and report.pdf); recomputes nothing. `progress`: a bar while rendering."""
    from scoreaudit.reports.render import render as _render

    return _render(Path(bundle), formats=formats, progress=progress)


def export(bundle: str | Path, kind: str) -> Path:
    """The cells' outcomes as report.tex (a booktabs table) or report.md (a Markdown summary) in the bundle."""
    from scoreaudit.reports.export import export as _export

    return _export(Path(bundle), kind)


# ---------------------------------------------------------------- the rest of the command line's needs


def cache_status(ir, plan, *, spec_path, cache_path=None, allow_outside: bool = False):
    """Which plan steps the cache holds (`scoreaudit plan --cache`); None without a cache."""
    from scoreaudit.runtime.cache_status import cache_status as _status

    return _status(ir, plan, spec_path=Path(spec_path), cache_path=cache_path, allow_outside=allow_outside)


def plan_text(plan, status=None) -> str:
    """An ExecutionPlan as `scoreaudit plan` prints it (`status`: runtime.cache_status.cache_status)."""
    from scoreaudit.compiler.plan import render_plan

    return render_plan(plan, status)


def format_source(source: str, path: str = "<input>"):
    """Canonical text of a spec: (formatted text or None, diagnostics)."""
    from scoreaudit.compiler.fmt import format_module

    module, diags = parse(source, path)
    if module is None or has_errors(diags):
        return None, list(diags)
    return format_module(module), list(diags)


DESCRIBE_KINDS = ("operators", "scorers", "statistics", "regions", "measures", "probes", "probe_measures", "arms",
                  "settings")
_KIND_REGISTRY = {"operators": "operator", "scorers": "scorer", "statistics": "statistic", "regions": "region",
                  "measures": "measure", "probes": "probe", "probe_measures": "probe_measure", "arms": "arm"}


def describe(name: str) -> str | None:
    """The documentation of every plugin, statistic or setting called `name` (None: nothing is)."""
    from scoreaudit.compiler.describe import describe as _describe

    return _describe(name)


def describable(kind: str | None = None) -> dict[str, list[str]]:
    """Names `describe` knows, by kind (`operators`, `scorers`, ..., `probes`, `probe_measures`, `arms` (the
    arm sources), `settings`)."""
    from scoreaudit.compiler.describe import SETTING_DOCS
    from scoreaudit.registry import load_plugins

    reg = load_plugins()
    out = {k: reg[_KIND_REGISTRY[k]].names() for k in DESCRIBE_KINDS if k != "settings"}
    out["measures"] = sorted(set(out["measures"]) | set(reg["covariate"].names()))
    out["settings"] = sorted(SETTING_DOCS)
    return {k: out[k] for k in DESCRIBE_KINDS if kind in (None, k)}


def did_you_mean(name: str, choices, n: int = 3) -> list[str]:
    """Close spellings of `name` among `choices` (case-insensitive)."""
    import difflib

    choices = list(choices)
    lower = {c.lower(): c for c in choices}
    return [lower[m] for m in difflib.get_close_matches(name.lower(), list(lower), n=n, cutoff=0.6)]


def scorers_listing(fmt: str = "text", tty: bool | None = None) -> str:
    """Every scorer, its parameters and whether it is ready here (`text` or `json`)."""
    from scoreaudit.runtime.scorers import list_scorers

    return list_scorers(as_json=fmt == "json", tty=tty)


def weights(targets, download: bool = False, echo=None):
    """(per-scorer file reports, failed fetches) for scorer names or .audit files (all model scorers when
    empty); with `download`, the missing files are first fetched into the Hugging Face cache."""
    from scoreaudit.runtime import weights as _weights

    reports = _weights.collect(list(targets), _checked_ir)
    failed = []
    if download and not all(r.ready for r in reports):
        failed = [f for f in _weights.download(reports, echo=echo or (lambda _m: None)) if f.error]
        reports = _weights.collect(list(targets), _checked_ir)
    return reports, failed


def _checked_ir(path: str):
    """A spec's IR after `check` without its data tables (model paths outside the roots are E0707); raises
    DiagnosticError on any error."""
    checked = check(path, tables=False)
    if not checked.ok or checked.ir is None:
        raise DiagnosticError(checked.diagnostics, checked.source)
    return checked.ir


def weights_listing(reports, fmt: str = "text") -> str:
    from scoreaudit.runtime import weights as _weights

    return _weights.to_json(reports) if fmt == "json" else _weights.render(reports)


def verify(bundle: str | Path) -> list[str]:
    """Recompute every reported number of a bundle; the mismatches (empty: it verifies)."""
    from scoreaudit.reports.verify import verify as _verify

    return _verify(Path(bundle))


def verify_bundle(bundle: str | Path) -> tuple[list[str], list[str]]:
    """(mismatches, unchecked): `verify`, plus what could not be checked here (a PDF without pdftotext)."""
    from scoreaudit.reports.verify import verify_bundle as _verify_bundle

    return _verify_bundle(Path(bundle))


def lock(path: str | Path, after_scoring: bool = False) -> Path:
    """Pre-register a spec: write FILE.lock (refused with LockRefused when its scores exist, unless after_scoring)."""
    from scoreaudit.reports.lock import write_lock

    return write_lock(Path(path), after_scoring=after_scoring)


def write_spec(path: str | Path, text: str) -> Path:
    """Write a spec's text (`fmt --write`): temp file + rename, never half a file, never through a link."""
    from scoreaudit.safeio import write_atomic

    return write_atomic(path, text)


def refused_errors() -> tuple[type[BaseException], ...]:
    """Exceptions meaning "not without an explicit flag" (lock after scoring): exit code 2."""
    from scoreaudit.reports.lock import LockRefused

    return (LockRefused,)


def simulate(path: str | Path, reps: int = 200, truth=None, out=None, progress: bool = True,
             n_boot: int | None = None):
    """Design diagnosis with planted scorers (power, false-positive rate, CI coverage)."""
    from scoreaudit.stats.simulate import simulate as _simulate

    ir, _ = compile(path)
    return _simulate(ir, spec_path=Path(path), reps=reps, truth=truth, out=out, progress=progress, n_boot=n_boot)


def unavailable_errors() -> tuple[type[BaseException], ...]:
    """Exceptions meaning "this machine cannot do it" (missing extra, weights, device): exit code 3."""
    from scoreaudit.plugins.base import ScorerUnavailable
    from scoreaudit.reports.render import PdfUnavailable

    return (ScorerUnavailable, PdfUnavailable)


def bundle_errors() -> tuple[type[BaseException], ...]:
    """Exceptions meaning "that folder is not a readable results bundle": exit code 6."""
    from scoreaudit.reports.context import BundleError

    return (BundleError,)


# ---------------------------------------------------------------- your own scorer


def register_scorer(name: str, fn, *, version: str = "1", needs_prompt: bool = False, batched: bool = False,
                    doc: str | None = None, params=None):
    """Make a Python callable a scorer a spec can call as `name()`.

    `fn(image)` (or `fn(image, prompt)` when `needs_prompt`) returns one float
    for an RGB uint8 array of shape (H, W, 3); with `batched=True` it takes the
    lists (images, prompts) and returns one float per image. `params` is an
    optional `scoreaudit.registry.Params` subclass (the spec's arguments,
    validated); `fn` then receives them as the keyword `params`.
    Bump `version` whenever `fn` changes: it is part of every score's cache key.
    Returns the registry entry. The same happens for a module listed in the
    `scoreaudit.plugins` entry-point group that calls this at import.
    """
    import numpy as np

    from scoreaudit.registry import NoParams, scorers

    param_model = params or NoParams

    class CallableScorer:
        uses_item = False

        def __init__(self, p=None, device: str = "cpu", precision: str = "auto") -> None:
            self.params = p
            self.needs_prompt = needs_prompt

        def weights_hash(self) -> str | None:
            return None

        def score(self, images, prompts, items):
            extra = {} if params is None else {"params": self.params}
            if batched:
                out = fn(list(images), list(prompts) if prompts is not None else None, **extra)
            elif needs_prompt:
                out = [fn(img, pr, **extra) for img, pr in zip(images, prompts or [None] * len(images))]
            else:
                out = [fn(img, **extra) for img in images]
            arr = np.asarray(out, dtype=np.float64).reshape(-1)
            if len(arr) != len(images):
                raise ValueError(f"scorer {name!r} returned {len(arr)} scores for {len(images)} images")
            return arr

    CallableScorer.__name__ = f"Scorer_{name}"
    CallableScorer.__doc__ = doc or (getattr(fn, "__doc__", None) or f"{name}: a scorer registered from Python.")
    scorers.register(name, params=param_model, version=version, needs_prompt=needs_prompt, requires=())(CallableScorer)
    return scorers.get(name)
