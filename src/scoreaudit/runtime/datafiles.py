"""The content of every file an arm reads (images, masks), hashed for the pre-registration lock.

A manifest's own hash commits to its text, not to the pixels of the files it
names; a folder arm's listing names files, not their bytes. `file_items` adds
one lock item per arm, `data files of arm NAME`: the sha256 over every image
and mask file it reads (path relative to the spec's folder and the sha256 of
its bytes, streamed), so an image or mask edited in place, or a same-size file
swapped in, is a named deviation. Files are read through the one containment
check (outside the spec's folder: not hashed, the run refuses them anyway).
The item name starts with "data ", so a lock written before these items
existed is not judged on them (compiler/lock.py `deviations`). Generated arms and
probes get `data prompts of arm|probe NAME`: the prompts as read from their files.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from scoreaudit import registry
from scoreaudit.safeio import UnsafePath, open_regular

_CHUNK = 1 << 20


def file_sha256(path: str | Path, root: str | Path | None) -> str | None:
    """sha256 of a regular file's bytes, streamed; None when absent, outside `root` or not a regular file."""
    try:
        fd = open_regular(path, root)
    except (OSError, UnsafePath):
        return None
    h = hashlib.sha256()
    try:
        while True:
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            h.update(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return h.hexdigest()


def _mask_columns(ir) -> list[str]:
    """Manifest columns a region plugin opens as files (`mask(column:)`)."""
    from scoreaudit.registry import REGISTRIES, load_plugins
    from scoreaudit.runtime.columns import region_calls

    load_plugins()
    cols: list[str] = []
    for region in ir.regions.values():
        for call in region_calls(region.expr):
            for param in REGISTRIES["region"].get(call.plugin).meta.get("file_columns", ()) or ():
                value = call.params.get(param)
                if isinstance(value, str) and value not in cols:
                    cols.append(value)
    return cols


def arm_files(ir, arm, spec_dir: Path) -> list[Path]:
    """Every image and mask file `arm` reads, as its manifest (or folder) names them, in row order."""
    from scoreaudit.runtime.columns import required_columns
    from scoreaudit.runtime.manifests import imageless, load_manifest

    made_by_the_run = registry.generated_arm(arm.call.plugin)
    if arm.source not in ("images", "pairs") or made_by_the_run or imageless(arm):
        return []
    result = load_manifest(arm, spec_dir, columns=required_columns(ir, arm), on_error="skip", root=spec_dir,
                           probe=False)
    masks = _mask_columns(ir)
    out: list[Path] = []
    for rec in result.records:
        if rec.path is not None:
            out.append(Path(rec.path))
        for c in masks:
            value = rec.columns.get(c)
            if isinstance(value, str) and value.strip():
                out.append(Path(result.base_dir) / value.strip())
    return list(dict.fromkeys(out))


def file_items(ir, spec_dir: str | Path) -> dict[str, str]:
    """`data files of arm NAME` -> "files sha256 HEX" over (relative path, content sha256) of every file."""
    spec_dir = Path(spec_dir).resolve()
    items: dict[str, str] = {}
    for name, arm in ir.arms.items():
        files = arm_files(ir, arm, spec_dir)
        if not files:
            continue
        h = hashlib.sha256()
        for f in files:
            try:
                rel = Path(os.path.realpath(f)).relative_to(spec_dir).as_posix()
            except ValueError:
                continue  # outside: the run refuses it (E0707); nothing of it is read here
            h.update(f"{rel}\0{file_sha256(f, spec_dir) or 'unreadable'}\n".encode("utf-8", "surrogateescape"))
        items[f"data files of arm {name}"] = f"files sha256 {h.hexdigest()}"
    items.update(prompt_items(ir, spec_dir))
    return items


def prompt_items(ir, spec_dir: Path) -> dict[str, str]:
    """`data prompts of arm|probe NAME` -> sha256 of the prompts as expanded (a prompts file's or a template
    column file's lines): the arm's item names the file, this commits to what is in it."""
    import json

    from scoreaudit.compiler.prompts import PromptsError, expand_prompts

    users = [("arm", n, a.call.params) for n, a in ir.arms.items() if registry.generated_arm(a.call.plugin)]
    users += [("probe", n, p.call.params) for n, p in ir.probes.items()]
    out: dict[str, str] = {}
    for kind, name, params in users:
        try:
            prompts = expand_prompts(params["prompts"], spec_dir)
        except (PromptsError, KeyError):
            continue  # unreadable or outside: check and run say so
        text = json.dumps(prompts, sort_keys=True, ensure_ascii=False, default=str)
        out[f"data prompts of {kind} {name}"] = "prompts sha256 " + hashlib.sha256(text.encode("utf-8")).hexdigest()
    return out
