"""What a run reads and checks before any work: every manifest (E07xx), precomputed table (E080x) and
statistic input table (E0707/E0730), the arms the plan needs pixels of, and the device the scorers will use.

`prepare` is the one set-up `run` and `plan --cache` share, so the cache status is the run's."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scoreaudit.compiler.coverage import coverage_diagnostics, is_table_only, provided, uses_precomputed
from scoreaudit.compiler.ir import ArmIR, AuditIR
from scoreaudit.compiler.plan import ArmStage, arm_work
from scoreaudit.diagnostics import DiagnosticError, has_errors
from scoreaudit.registry import REGISTRIES, load_plugins
from scoreaudit.runtime.columns import required_columns
from scoreaudit.runtime.device import needs_torch, resolve_device
from scoreaudit.runtime.manifests import ManifestResult, imageless, load_manifest
from scoreaudit.safeio import read_regular

if TYPE_CHECKING:
    from scoreaudit.runtime.precomputed.matching import TableSet


def _requires(ir: AuditIR, run_scorers: set[str] | None = None) -> list[tuple[str, ...]]:
    """Plugins' `requires`; only the scorers in `run_scorers` (None: all) will run."""
    load_plugins()
    out = []
    for s in ir.scorers.values():
        if run_scorers is not None and s.name not in run_scorers:
            continue
        out.append(tuple(REGISTRIES["scorer"].get(s.call.plugin).meta.get("requires", ()) or ()))
    for o in ir.operators.values():
        out.append(tuple(REGISTRIES["operator"].get(o.call.plugin).meta.get("requires", ()) or ()))
    for m in ir.measures.values():
        reg = "covariate" if m.role == "covariate" else "measure"
        out.append(tuple(REGISTRIES[reg].get(m.call.plugin).meta.get("requires", ()) or ()))
    return out


def load_manifests(ir: AuditIR, spec_dir: Path, root: Path | None = None,
                   trusted: AbstractSet[str] = frozenset(), known: dict[str, dict] | None = None,
                   pixel_free: AbstractSet[str] = frozenset(), pixel_notes: dict[str, str] | None = None
                   ) -> dict[str, ManifestResult]:
    """Read and check every arm's manifest; raise every E07xx problem at once, before any work.

    `root`: files must lie below it (E0707); None allows any path (`run --allow-outside`).
    `trusted`: arms whose files the run wrote itself (generated arms, in the output folder).
    `known`: arm -> files whose header passed in an earlier run (`memo.known_probes`).
    `pixel_free`: images arms the plan decodes nothing of (`ArmStage.pixels`): no file is looked at.
    `pixel_notes`: arm -> what in the plan needs its pixels (`pixel_note`), added to its image-file errors.
    """
    known = known or {}
    results = {name: load_manifest(arm, spec_dir, columns=required_columns(ir, arm),
                                   on_error=ir.settings.on_error, root=None if name in trusted else root,
                                   known=known.get(name), pixels=name not in pixel_free)
               for name, arm in ir.arms.items()}
    notes = pixel_notes or {}
    diags = [_noted(d, notes.get(name)) for name, r in results.items() for d in r.diagnostics]
    diags += outside_file_columns(ir, results, root)
    if has_errors(diags):
        raise DiagnosticError(diags)
    return results


def max_pixels(arm: ArmIR) -> int:
    return int(arm.call.params.get("max_pixels") or 89_478_485)


def outside_file_columns(ir: AuditIR, manifests: dict[str, ManifestResult], root: Path | None) -> list:
    """E0707 for every manifest value a region plugin opens as a file (`mask(column:)`) outside `root`.

    Checked before any work with the same containment check as images and
    manifests, so a row such as `../x.png` or `/etc/passwd` is never opened.
    """
    from scoreaudit.diagnostics import Diagnostic
    from scoreaudit.runtime.columns import region_calls
    from scoreaudit.runtime.manifests import inside_all

    if root is None:
        return []
    load_plugins()
    cols: list[str] = []
    for region in ir.regions.values():
        for call in region_calls(region.expr):
            entry = REGISTRIES["region"].get(call.plugin)
            for param in entry.meta.get("file_columns", ()) or ():
                value = call.params.get(param)
                if isinstance(value, str) and value not in cols:
                    cols.append(value)
    out = []
    for name, m in manifests.items():
        named = [(rec, c, rec.columns.get(c).strip()) for rec in m.records for c in cols
                 if isinstance(rec.columns.get(c), str) and rec.columns.get(c).strip()]
        for (rec, c, value), ok in zip(named, inside_all(m.base_dir, [v for _, _, v in named], root)):
            if not ok:
                out.append(Diagnostic(
                    "E0707", "error", f"arm '{name}': the file named in column '{c}' of row {rec.row} "
                    f"(image '{rec.image_id}') leaves the project folder: {value}",
                    path=m.manifest, help="keep masks inside the spec's folder, or run with --allow-outside"))
    return out


def load_precomputed(ir: AuditIR, spec_dir: Path, manifests: dict[str, ManifestResult],
                     root: Path | None = None) -> TableSet:
    """Every precomputed table, matched to the manifests' ids; raise every error (E080x) before any work.

    The same checks as `scoreaudit check` (runtime.precomputed.check.check_precomputed),
    on the ids the run will use.
    """
    from scoreaudit.runtime.precomputed.matching import load_tables

    ids = {n: [r.image_id for r in m.records] for n, m in manifests.items()}
    pre = load_tables(ir, spec_dir, root=root).matched(ir, ids)
    diags = list(pre.diagnostics)
    if pre.ok:  # a table that cannot be read provides nothing: its holes would only repeat E0801/E0803
        diags += coverage_diagnostics(ir, ids, pre)
    errs = [d for d in diags if d.is_error]
    if errs:
        raise DiagnosticError(errs)
    return pre


def runs_somewhere(ir: AuditIR, given: set[tuple[str, str]]) -> set[str]:
    """Scorers that are computed on at least one arm (not table-only, not table-provided everywhere)."""
    return {s for s in ir.scorers if not is_table_only(ir, s)
            and any((a, s) not in given and not imageless(arm) for a, arm in ir.arms.items())}


def read_stat_inputs(ir: AuditIR, spec_dir: Path, root: Path | None) -> dict[str, bytes]:
    """Bundle name → bytes of every table a statistic reads (`correlate(..., table:)`), checked like any data.

    Outside `root`: E0707; not a regular file: E0730. A missing table is left
    to the statistic, which reports it on its cells.
    """
    from scoreaudit.diagnostics import Diagnostic
    from scoreaudit.safeio import UnsafePath, inside
    from scoreaudit.stats.inputs import input_name, table_params

    out: dict[str, bytes] = {}
    diags = []
    for table in dict.fromkeys(table_params(ir.model_dump(mode="json"))):
        path = spec_dir / table
        if not inside(path, root):
            diags.append(Diagnostic("E0707", "error", f"table '{table}' leaves the project folder",
                                    path=ir.source_path,
                                    help="keep the table inside the spec's folder, or run with --allow-outside"))
            continue
        try:
            out[input_name(table)] = read_regular(path, root=root)  # the opened file itself contained
        except FileNotFoundError:
            continue
        except UnsafePath as exc:
            diags.append(Diagnostic("E0730", "error", f"table '{table}' {exc.what}", path=ir.source_path,
                                    help="name a table file; folders, pipes and devices are never read"))
        except OSError as exc:
            diags.append(Diagnostic("E0730", "error", f"cannot read table '{table}' ({exc.strerror or exc})",
                                    path=ir.source_path, help="check the file's permissions"))
    if diags:
        raise DiagnosticError(diags)
    return out


def planned_arms(ir: AuditIR, plan: Any) -> AuditIR:
    """The IR with only the arms the plan has steps for (a declared arm nothing reads is not work)."""
    work = arm_work(plan)
    if all(n in work for n in ir.arms):
        return ir
    return ir.model_copy(update={"arms": {n: a for n, a in ir.arms.items() if n in work}})


def pixel_free_arms(plan: Any, ir: AuditIR) -> set[str]:
    """Arms the plan decodes none of: every score they need is read from data, or nothing reads them."""
    work = arm_work(plan)
    return {name for name in ir.arms if name not in work or not work[name].pixels}


@dataclass(frozen=True)
class Prepared:
    """What `run` and `plan --cache` both read before any work (`prepare`): the manifests, the
    precomputed tables, what those provide and the device the scorers will run on."""

    manifests: dict[str, ManifestResult]
    pre: TableSet | None  # None: the audit reads no table, table-only scorer or imageless arm
    given: dict[str, set[tuple[str, str]]]
    device: str


def prepare(ir: AuditIR, plan: Any, spec_dir: Path, root: Path | None, device: str, *,
            trusted: AbstractSet[str] = frozenset(), known: dict[str, dict] | None = None) -> Prepared:
    """The one run set-up (shared by `run` and `plan --cache`, so the cache status is the run's):
    every manifest (E07xx) and table (E080x) checked, then the device resolved for the scorers
    that will compute somewhere (a probe's scorer included)."""
    work = arm_work(plan)
    manifests = load_manifests(ir, spec_dir, root, trusted=trusted, known=known,
                               pixel_free=pixel_free_arms(plan, ir),
                               pixel_notes={a: n for a, st in work.items() if (n := pixel_note(st))})
    # an audit without tables builds no table frames (pandas is not even imported: a cached re-run, issue 33)
    pre = load_precomputed(ir, spec_dir, manifests, root) if uses_precomputed(ir) else None
    given = provided(pre)
    dev = resolve_device(device, needs_torch(_requires(ir, runs_somewhere(ir, given["scores"])
                                                        | set(probed_scorers(ir)))))
    return Prepared(manifests, pre, given, dev)


def pixel_needs(stage: ArmStage) -> list[str]:
    """What in the plan decodes the arm's images: its regions, operators and measures, and the scorers
    that compute (a score read from data needs no pixels)."""
    from scoreaudit.registry import reads_data

    out = []
    for s in stage.steps:
        if s.kind in ("region", "operator") or (s.kind == "measure" and s.params.get("role") != "builtin"):
            out.append(f"{s.kind} {s.params.get('region') or s.params.get('operator') or s.params.get('name')}")
        elif s.kind == "score" and s.plugin is not None and not reads_data(s.plugin):
            out.append(f"scorer {s.params['scorer']}")
    return list(dict.fromkeys(out))


def pixel_note(stage: ArmStage) -> str | None:
    """The note an arm's image-file errors carry: what in the plan decodes its images, for which cells
    (None when nothing does)."""
    needs = pixel_needs(stage)
    if not needs:
        return None
    cells = list(dict.fromkeys(c for s in stage.steps if s.kind != "decode" for c in s.needed_by if "/" in c))
    shown = ", ".join(cells[:4]) + (f" and {len(cells) - 4} more" if len(cells) > 4 else "")
    return (f"the plan decodes this arm's images for {', '.join(needs[:6])}"
            + (f" (needed by {shown})" if cells else "")
            + "; an arm whose every score is read from data needs no image file")


def _noted(d: Any, note: str | None) -> Any:
    """An image-file error (E0704/E0705) with the arm's pixel note; any other diagnostic as it is."""
    import dataclasses

    if note is None or d.code not in ("E0704", "E0705"):
        return d
    return dataclasses.replace(d, notes=tuple(d.notes) + (note,))


def probed_scorers(ir: AuditIR) -> list[str]:
    """The scorers some optimisation probe differentiates (they run even when no arm needs them)."""
    return [p.scorer for p in ir.probes.values()]
