"""The images that move a within-image cell most, and their thumbnails for the report.

For each cell on an operator, the images whose score changes most at the operator's extreme dose
(largest |score(extreme) − score(original)|, raw score units) are ranked from the bundle's scores
table: one ranking, read by the report's table of ids and by this module's thumbnails, so the two
always name the same images. After the statistics, the run decodes the first `PER_CELL` of each
cell's movers once more, applies the operator at that dose, and stores small JPEGs of the original
and of the variant in the bundle (`mover_thumbnails.json`), at most `MAX_BYTES` in all: the report
embeds them and fetches nothing, and `scoreaudit report DIR` re-renders them without the images.
`report { thumbnails: false }` turns this off too (e.g. for private data).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from scoreaudit import registry

FILE = "mover_thumbnails.json"
SHOWN = 5  # movers listed per cell (ids and changes)
PER_CELL = 3  # of which shown as thumbnails
SIZE = 96  # px, the longer side of a thumbnail
MAX_BYTES = 1_000_000  # base64 text of all mover thumbnails of a bundle together


def extreme_doses(doses: Iterable | None, identity) -> list[float]:
    """The dose(s) farthest from the identity: both ends of a symmetric sweep (they can disagree in sign)."""
    ds = [float(d) for d in doses or [] if isinstance(d, (int, float)) and not isinstance(d, bool)]
    if not ds or not isinstance(identity, (int, float)):
        return []
    far = max(abs(d - identity) for d in ds)
    return sorted({d for d in ds if far and math.isclose(abs(d - identity), far)})


def within_image_cells(cells: Iterable[Mapping], operators: Mapping) -> set[tuple[str, str, str]]:
    """(arm, scorer, operator) of every cell on a declared operator."""
    out = set()
    for c in cells or []:
        op = (c.get("params") or {}).get("operator")
        if c.get("arm") and c.get("scorer") and op in operators:
            out.add((str(c["arm"]), str(c["scorer"]), str(op)))
    return out


def rank_movers(scores, operators: Mapping[str, Mapping], wanted: set[tuple[str, str, str]],
                shown: int = SHOWN) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    """(arm, scorer, operator) → up to `shown` {image_id, dose, change} with the largest |change| at an extreme
    dose, largest first (ties by image id). `scores`: the bundle's scores table (pandas); `operators`:
    name → {doses, identity}."""
    import pandas as pd

    if not wanted or scores is None or not len(scores):
        return {}
    s = scores[scores["arm"].isin({w[0] for w in wanted})]
    base = s[s["operator"] == "original"].drop_duplicates(["arm", "scorer", "image_id"]).set_index(
        ["arm", "scorer", "image_id"])["score"]
    out = {}
    for arm, scorer, op in sorted(wanted):
        ext = extreme_doses((operators.get(op) or {}).get("doses"), (operators.get(op) or {}).get("identity"))
        rows = s[(s["arm"] == arm) & (s["scorer"] == scorer) & (s["operator"] == op) & s["dose"].isin(ext)]
        if not len(rows):
            continue
        ref = base.reindex(pd.MultiIndex.from_arrays([rows["arm"], rows["scorer"], rows["image_id"]])).to_numpy()
        rows = rows.assign(change=rows["score"].to_numpy(float) - ref)
        rows = rows[rows["change"].notna()]
        rows = rows.assign(size=rows["change"].abs()).sort_values(["size", "image_id"], ascending=[False, True])
        top = rows.drop_duplicates("image_id").head(shown)
        out[(arm, scorer, op)] = [{"image_id": str(r.image_id), "dose": float(r.dose), "change": float(r.change)}
                                  for r in top.itertuples()]
    return out


def image_key(arm: str, image_id: str, operator: str | None = None, dose: float = 0.0) -> str:
    """The key of one stored thumbnail: the original (`arm/id`) or a variant (`arm/id/operator/dose`)."""
    return f"{arm}/{image_id}" if operator is None else f"{arm}/{image_id}/{operator}/{float(dose)!r}"


def _records(ir, arm_name: str, spec_dir: Path, root: Path | None, out_dir: Path):
    """image_id → (record, max_pixels, base_dir) of one arm (a generated arm's files are in the bundle)."""
    from scoreaudit.runtime.columns import required_columns
    from scoreaudit.runtime.manifests import load_manifest

    arm, arm_root = ir.arms[arm_name], root
    if arm.source != "images":
        return {}
    if registry.generated_arm(arm.call.plugin):
        from scoreaudit.runtime.generation import images_arm

        dest = out_dir / "generated" / arm.name
        if not (dest / "manifest.csv").is_file():
            return {}
        arm, arm_root = images_arm(arm, dest), None  # files the run wrote itself
    result = load_manifest(arm, spec_dir, columns=required_columns(ir, arm), root=arm_root, probe=False)
    return {r.image_id: (r, result.max_pixels, result.base_dir) for r in result.records}


def make_mover_thumbnails(ir, spec_path: str | Path, out_dir: str | Path, root: Path | None = None,
                          per_cell: int = PER_CELL, size: int = SIZE, max_bytes: int = MAX_BYTES,
                          progress: bool = False, wanted: set[tuple[str, str, str]] | None = None) -> dict[str, Any]:
    """{size, per_cell, images: {key: base64 JPEG}} for the first `per_cell` movers of every within-image cell
    of the bundle in `out_dir` (its results.json and scores table), until `max_bytes` of text is stored.
    `progress`: a bar (plain lines off a terminal) per image decoded: region detection on large images can
    take a while, and a run is never silent. `wanted`: those cells, when the caller has read them already."""
    import pandas as pd

    from scoreaudit.plainprogress import stage_bar
    from scoreaudit.registry import load_plugins

    out_dir = Path(out_dir)
    empty: dict[str, Any] = {"size": size, "per_cell": per_cell, "images": {}}
    results_path, scores_path = out_dir / "results.json", out_dir / "tables" / "scores.parquet"
    if not results_path.is_file() or not scores_path.is_file():
        return empty
    ops = _operators(ir)
    if wanted is None:
        wanted = within_image_cells(json.loads(results_path.read_text(encoding="utf-8")).get("cells"), ops)
    if not wanted:
        return empty
    scores = pd.read_parquet(scores_path, columns=["arm", "image_id", "operator", "dose", "scorer", "score"])
    movers = rank_movers(scores, ops, wanted, shown=per_cell)
    load_plugins()
    n_images = len({(arm, m["image_id"]) for (arm, _, _), top in movers.items() for m in top})
    bar = stage_bar(progress, "thumbnails of the top movers", n_images)
    try:
        return _store(ir, movers, Path(spec_path).resolve().parent, root, out_dir, empty, size, max_bytes, bar)
    finally:
        if bar is not None:
            bar.close()


def _store(ir, movers: dict, spec_dir: Path, root: Path | None, out_dir: Path, empty: dict, size: int,
           max_bytes: int, bar) -> dict[str, Any]:
    """Decode each mover once, sweep its operator to the dose, store both thumbnails until `max_bytes`."""
    from scoreaudit.plugins.base import ImageFailure
    from scoreaudit.registry import operators as operator_registry
    from scoreaudit.runtime.images import Decoded, decode_record
    from scoreaudit.runtime.regions import RegionEvaluator
    from scoreaudit.runtime.thumbnails import thumbnail

    evaluator = RegionEvaluator(ir.regions) if ir.regions else None
    images: dict[str, str] = empty["images"]
    records: dict[str, dict] = {}
    decoded: dict[tuple[str, str], Any] = {}  # (arm, id) -> (image, masks) or None when it cannot be read
    used = 0
    for (arm, _scorer, op), top in sorted(movers.items()):
        for m in top:
            key_o, key_v = image_key(arm, m["image_id"]), image_key(arm, m["image_id"], op, m["dose"])
            if key_o in images and key_v in images:
                continue
            if arm not in records:
                records[arm] = _records(ir, arm, spec_dir, root, out_dir)
            if (arm, m["image_id"]) not in decoded:
                got = None
                hit = records[arm].get(m["image_id"])
                if hit is not None:
                    d = decode_record(hit[0], hit[1])
                    if isinstance(d, Decoded):
                        try:
                            masks = evaluator.evaluate(d.image, d.record.columns, hit[2]).masks if evaluator else {}
                            got = (d.image, masks)
                        except ImageFailure:
                            got = None
                decoded[(arm, m["image_id"])] = got
                if bar is not None:
                    bar.advance(1, m["image_id"])
            got = decoded[(arm, m["image_id"])]
            if got is None:
                continue
            image, masks = got
            o = ir.operators[op]
            entry = operator_registry.get(o.call.plugin)
            try:
                plugin = entry.impl(entry.validate(dict(o.call.params)), device="cpu")
                variant = plugin.sweep(image, masks.get(o.region) if o.region else None, [m["dose"]],
                                       int(ir.settings.seed))[0].image
            except Exception:  # noqa: BLE001 -- a picture is a courtesy: an operator that fails here failed the run already
                continue
            new = {k: thumbnail(v, None, size) for k, v in ((key_o, image), (key_v, variant)) if k not in images}
            cost = sum(len(v) for v in new.values())
            if used + cost > max_bytes:
                return {**empty, "capped": True}
            images.update(new)
            used += cost
    return empty


def _operators(ir) -> dict[str, dict]:
    return {n: {"doses": list(o.doses), "identity": o.identity} for n, o in ir.operators.items()}


def _shown_cells(ir, out_dir: Path) -> set[tuple[str, str, str]] | None:
    """The within-image cells of the bundle's results.json (none without one), or None: results of another
    shape (keyed apart and made afresh)."""
    results_path = out_dir / "results.json"
    try:
        cells = json.loads(results_path.read_text(encoding="utf-8")).get("cells") if results_path.is_file() else []
        return within_image_cells(cells or [], _operators(ir))
    except (OSError, ValueError, AttributeError, TypeError, KeyError):
        return None


def _reuse_key(ir, spec_path: str | Path, out_dir: Path, root: Path | None, shown: set | None) -> str:
    """What the movers' thumbnails are made from (runtime/reuse.py): the declarations, the cells shown, the
    tables that rank the movers and name their images, where the images are."""
    from scoreaudit.runtime import reuse

    wanted = sorted(shown) if shown is not None else [("?", "?", "?")]
    return reuse.stage_key(FILE, reuse.declarations(out_dir), json.dumps(wanted), str(Path(spec_path).resolve().parent),
                           str(root), reuse.file_hashes(out_dir, ["tables/images.parquet", "tables/regions.parquet",
                                                                  "tables/scores.parquet"]))


def write_mover_thumbnails(ir, spec_path: str | Path, out_dir: str | Path, root: Path | None = None,
                           progress: bool = False, previous: Path | None = None) -> Path | None:
    """Write `mover_thumbnails.json` into the bundle unless the report block says `thumbnails: false`.

    `previous`: the bundle a re-run replaces; its file is copied when made from the same inputs (reuse.py)."""
    from scoreaudit.runtime import reuse

    out_dir = Path(out_dir)
    path = out_dir / FILE
    if not getattr(ir.report, "thumbnails", True):
        path.unlink(missing_ok=True)
        reuse.forget(out_dir, FILE)
        return None
    shown = _shown_cells(ir, out_dir)
    key = _reuse_key(ir, spec_path, out_dir, root, shown)
    if reuse.adopt(previous, out_dir, FILE, key):
        return path
    data = make_mover_thumbnails(ir, spec_path, out_dir, root, progress=progress, wanted=shown)
    path.write_text(json.dumps(data, separators=(",", ":"), sort_keys=True), encoding="utf-8")
    reuse.record(out_dir, FILE, key)
    return path
