"""Thumbnails for the report: one real image at every dose of each operator, with its region outlined.

A reader should see what "L* −10" or "blur σ = 2" does to a face before reading
numbers about it. After a run, the first image that decodes from the first
real arm (else the first images arm) is swept through every operator once;
each variant is shrunk to at most `size` pixels, the operator's region is
outlined, and the JPEG bytes are stored in the bundle as `thumbnails.json`
(base64, a few kB each), so `scoreaudit report DIR` re-renders them without the
images. `report { thumbnails: false }` turns this off (e.g. for private data).
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from scoreaudit import registry

FILE = "thumbnails.json"
OUTLINE = np.array([255, 0, 200], dtype=np.uint8)  # magenta: visible on skin, sky and foliage


def _arm_order(ir) -> list:
    arms = [a for a in ir.arms.values() if a.source == "images"]
    return [a for a in arms if a.kind == "real"] + [a for a in arms if a.kind != "real"]


def _outline(mask: np.ndarray) -> np.ndarray:
    """A 2-pixel line along the border of `mask` (thick enough to survive JPEG's colour subsampling)."""
    m = np.asarray(mask, dtype=bool)
    p = np.pad(m, 1, mode="edge")
    inner = p[:-2, 1:-1] & p[2:, 1:-1] & p[1:-1, :-2] & p[1:-1, 2:]
    edge = m & ~inner
    q = np.pad(edge, 1)
    return edge | q[:-2, 1:-1] | q[2:, 1:-1] | q[1:-1, :-2] | q[1:-1, 2:]


def thumbnail(image: np.ndarray, mask: np.ndarray | None, size: int = 160, quality: int = 72) -> str:
    """A small JPEG of `image` (region outline drawn) as base64 text."""
    from PIL import Image

    img = Image.fromarray(np.ascontiguousarray(image[..., :3]))
    scale = size / max(img.size)
    if scale >= 2:  # a tiny image: enlarge by a whole factor (pixels stay square) so the outline stays thin
        k = int(scale)
        w, h = img.width * k, img.height * k
        small = np.array(img.resize((w, h), Image.Resampling.NEAREST))
    else:
        scale = min(1.0, scale)
        w, h = max(1, round(img.width * scale)), max(1, round(img.height * scale))
        small = np.array(img.resize((w, h), Image.Resampling.LANCZOS))
    if mask is not None and np.any(mask) and not np.all(mask):
        m = np.array(Image.fromarray(np.asarray(mask, dtype=np.uint8) * 255).resize((w, h), Image.Resampling.NEAREST)) > 127
        small[_outline(m)] = OUTLINE
    buf = io.BytesIO()
    Image.fromarray(small).save(buf, format="JPEG", quality=quality, optimize=True)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _first_image(ir, spec_dir: Path, root: Path | None, out_dir: Path | None = None):
    """The first image (of the first few per arm) that decodes and whose regions evaluate, with its masks.

    A generated arm's images are read from the run's output (`out_dir/generated/ARM/`), which the run
    wrote itself; without `out_dir` generated arms are skipped.
    """
    from scoreaudit.plugins.base import ImageFailure
    from scoreaudit.runtime.columns import required_columns
    from scoreaudit.runtime.images import Decoded, decode_record
    from scoreaudit.runtime.manifests import load_manifest
    from scoreaudit.runtime.regions import RegionEvaluator

    evaluator = RegionEvaluator(ir.regions) if ir.regions else None
    for arm in _arm_order(ir):
        arm_root = root
        if registry.generated_arm(arm.call.plugin):  # its images are in the bundle, not under the spec's folder
            from scoreaudit.runtime.generation import images_arm

            dest = Path(out_dir) / "generated" / arm.name if out_dir is not None else None
            if dest is None or not (dest / "manifest.csv").is_file():
                continue
            arm, arm_root = images_arm(arm, dest), None  # files the run wrote itself
        result = load_manifest(arm, spec_dir, columns=required_columns(ir, arm), root=arm_root, probe=False)
        for record in result.records[:5]:
            d = decode_record(record, result.max_pixels)
            if not isinstance(d, Decoded):
                continue
            try:  # an image the regions cannot handle (no face found) was excluded by the run too
                masks = evaluator.evaluate(d.image, d.record.columns, result.base_dir).masks if evaluator else {}
            except ImageFailure:
                continue
            return arm, d, masks
    return None, None, {}


def make_thumbnails(ir, spec_path: str | Path, root: Path | None = None, size: int = 160,
                    out_dir: str | Path | None = None) -> dict[str, Any]:
    """{operator: {arm, image_id, region, doses: [{dose, jpeg}]}} for every operator (empty when no image decodes)."""
    from scoreaudit.registry import load_plugins, operators

    spec_dir = Path(spec_path).resolve().parent
    load_plugins()
    arm, decoded, masks = _first_image(ir, spec_dir, root, Path(out_dir) if out_dir is not None else None)
    if decoded is None:
        return {}
    out: dict[str, Any] = {}
    for name, op in ir.operators.items():
        doses = sorted({float(d) for d in op.doses} | {float(op.identity)})
        entry = operators.get(op.call.plugin)
        plugin = entry.impl(entry.validate(dict(op.call.params)), device="cpu")
        mask = masks.get(op.region) if op.region else None
        try:
            variants = plugin.sweep(decoded.image, mask, doses, int(ir.settings.seed))
        except Exception:  # noqa: BLE001 - a picture is a courtesy: an operator that fails here failed the run already
            continue
        out[name] = {"arm": arm.name, "image_id": decoded.record.image_id, "region": op.region,
                     "identity": float(op.identity),
                     "doses": [{"dose": d, "jpeg": thumbnail(v.image, mask, size)} for d, v in zip(doses, variants)]}
    return out


def write_thumbnails(ir, spec_path: str | Path, out_dir: str | Path, root: Path | None = None,
                     previous: Path | None = None) -> Path | None:
    """Write `thumbnails.json` into the bundle unless the report block says `thumbnails: false`.

    `previous`: the bundle a re-run replaces; its file is copied when made from the same inputs (reuse.py)."""
    from scoreaudit.runtime import reuse

    out_dir = Path(out_dir)
    path = out_dir / FILE
    if not getattr(ir.report, "thumbnails", True):
        path.unlink(missing_ok=True)
        reuse.forget(out_dir, FILE)
        return None
    key = reuse.stage_key(FILE, reuse.declarations(out_dir), str(Path(spec_path).resolve().parent), str(root),
                          reuse.file_hashes(out_dir, ["tables/images.parquet", "tables/regions.parquet"]))
    if reuse.adopt(previous, out_dir, FILE, key):
        return path
    path.write_text(json.dumps(make_thumbnails(ir, spec_path, root, out_dir=out_dir), separators=(",", ":")),
                    encoding="utf-8")
    reuse.record(out_dir, FILE, key)
    return path
