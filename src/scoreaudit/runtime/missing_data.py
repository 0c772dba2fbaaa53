"""W0621 at `scoreaudit check`: each data file the spec names that does not exist, and what was not checked.

`check` reads the manifests, prompt files and tables that exist (columns,
rows, ids, coverage); one that does not exist yet is skipped there, because
data may arrive before the run. Without this pass a spec whose data is all
missing would end in "no errors" although nothing of its data was looked at.
So each missing file gets a warning at the string that names it in the spec,
saying which file and what of the arm, probe or hypothesis was not checked.
Warnings leave the exit code at 0; `run` still refuses what is missing.

Precomputed scores/measures tables are not here: a missing one is already an
error at check (E0801), since nothing can be scored without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scoreaudit.diagnostics import Diagnostic

CODE = "W0621"
_FIX = "create it, or fix the path (relative to the spec's folder), then run `scoreaudit check` again"
_HELP = _FIX + "; `run` stops while it is missing"
_TABLE_HELP = _FIX + "; the cells that read it cannot be computed while it is missing"


def _missing(spec_dir: Path, rel: Any) -> bool:
    if not isinstance(rel, str) or not rel:
        return False
    try:
        return not (spec_dir / rel).exists()
    except OSError:  # a name too long, a loop: `check`'s other passes say what is wrong with it
        return False


def _columns(ir: Any, arm: Any) -> list[str]:
    """The manifest columns the spec relies on for `arm` (the arm's own and those its scorers, regions,
    measures, operators and statistics name), in a stable order."""
    from scoreaudit.runtime.columns import columns_of_call, required_columns

    own = columns_of_call("arm", arm.call.plugin, dict(arm.call.params))
    return list(dict.fromkeys([*own, *required_columns(ir, arm)]))


def _arm_findings(ir: Any, name: str, arm: Any, spec_dir: Path) -> Iterator[tuple[str, str]]:
    """(path as written, message) for each missing data file of one arm."""
    p = dict(arm.call.params)
    plugin = arm.call.plugin
    if plugin in ("images", "pairs"):
        manifest = p.get("manifest")
        if _missing(spec_dir, manifest):
            cols = _columns(ir, arm)
            named = f" ({', '.join(cols)})" if cols else ""
            yield manifest, (f"manifest '{manifest}' of arm `{name}` does not exist: the columns{named}, row count "
                             f"and ids of arm `{name}` were not checked")
        folder = p.get("folder") if plugin == "images" else None
        if _missing(spec_dir, folder):
            what = (f"the images, ids and row count of arm `{name}`" if not manifest
                    else f"the image files of arm `{name}` (listed by its manifest)")
            yield folder, f"image folder '{folder}' of arm `{name}` does not exist: {what} were not checked"
    elif plugin == "generate":
        yield from _prompt_findings(f"arm `{name}`", p.get("prompts"), spec_dir)


def _prompt_findings(owner: str, prompts: Any, spec_dir: Path) -> Iterator[tuple[str, str]]:
    if isinstance(prompts, str):
        if _missing(spec_dir, prompts):
            yield prompts, (f"prompts file '{prompts}' of {owner} does not exist: the prompts of {owner} "
                            "(how many, their text) were not checked")
    elif isinstance(prompts, dict):  # template(...): a factor may take its levels from a file's column
        for factor, levels in (prompts.get("factors") or {}).items():
            if isinstance(levels, dict) and _missing(spec_dir, levels.get("file")):
                file = levels["file"]
                yield file, (f"file '{file}' (column `{levels.get('column')}`, the levels of factor `{factor}`) "
                             f"of {owner} does not exist: the levels of `{factor}`, and so the prompts of "
                             f"{owner}, were not checked")


def missing_data(ir: Any, spec_path: str | Path) -> list[Diagnostic]:
    """W0621 for every manifest, image folder, prompts file and statistic table the spec names that is missing
    (at the string that names it, from the IR's literal spans)."""
    from scoreaudit.compiler.ir import locate, table_params

    spec_path = Path(spec_path)
    spec_dir = spec_path.resolve().parent
    decls = {**{h.name: h for h in ir.hypotheses}, **ir.probes, **ir.arms}
    found: list[tuple[str, str, str, str]] = []  # (declaration, path as written, message, help)
    for name, arm in ir.arms.items():
        found += [(name, rel, msg, _HELP) for rel, msg in _arm_findings(ir, name, arm, spec_dir)]
    for name, probe in ir.probes.items():
        prompts = dict(probe.call.params).get("prompts")
        found += [(name, rel, msg, _HELP) for rel, msg in _prompt_findings(f"probe `{name}`", prompts, spec_dir)]
    for h in ir.hypotheses:
        dumped = [c.statistic.model_dump(mode="json") for c in h.cells]
        for table in dict.fromkeys(table_params(dumped)):
            if _missing(spec_dir, table):
                found.append((h.name, table, f"table '{table}' read by hypothesis `{h.name}` does not exist: its "
                              "columns and rows were not checked", _TABLE_HELP))
    return [Diagnostic(CODE, "warning", msg, span=locate(decls.get(owner), rel), path=str(spec_path), help=fix)
            for owner, rel, msg, fix in found]
