"""The images that move a within-image cell most, as thumbnails (issue 28): the run stores small JPEGs of each
cell's first movers (original and extreme-dose variant) in the bundle; the report embeds them beside the ids of
its most-moving list, in HTML and PDF, within a per-cell and a total size cap."""

from __future__ import annotations

import base64
import html as htmllib
import io
import json
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from scoreaudit.reports.render import render
from scoreaudit.runtime.movers import FILE, MAX_BYTES, PER_CELL, SIZE, image_key, make_mover_thumbnails


def _img(b64: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(b64)))


def _reference_movers(bundle, n: int) -> dict[tuple, list[tuple[str, float]]]:
    """An independent ranking: per (arm, scorer, operator) cell, the n image ids with the largest
    |score at the farthest dose − original score|, by a plain loop over the scores table."""
    ir = json.loads((bundle / "ir.json").read_text())
    cells = json.loads((bundle / "results.json").read_text())["cells"]
    s = pd.read_parquet(bundle / "tables" / "scores.parquet")
    out = {}
    for c in cells:
        op = (c.get("params") or {}).get("operator")
        if op not in ir["operators"]:
            continue
        o = ir["operators"][op]
        far = max(abs(d - o["identity"]) for d in o["doses"])
        key = (c["arm"], c["scorer"], op)
        mine = s[(s.arm == c["arm"]) & (s.scorer == c["scorer"])]
        best = {}
        for r in mine[mine.operator == op].itertuples():
            if abs(abs(r.dose - o["identity"]) - far) > 1e-9:
                continue
            base = mine[(mine.operator == "original") & (mine.image_id == r.image_id)].score
            change = abs(r.score - base.iloc[0])
            if change > best.get(r.image_id, (-1, 0))[0]:
                best[r.image_id] = (change, r.dose)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:n]
        out[key] = [(i, d) for i, (_, d) in ranked]
    return out


def test_the_run_stores_each_within_image_cells_top_movers_small(demo_bundle):
    data = json.loads((demo_bundle / FILE).read_text())
    images = data["images"]
    ref = _reference_movers(demo_bundle, PER_CELL)
    assert ref, "the demo has within-image cells"
    for (arm, _scorer, op), top in ref.items():
        for image_id, dose in top:
            o, v = images[image_key(arm, image_id)], images[image_key(arm, image_id, op, dose)]
            a, b = _img(o), _img(v)
            assert a.format == b.format == "JPEG" and max(a.size) <= SIZE and max(b.size) <= SIZE
            # the variant is the operator at its extreme dose: visibly not the original
            assert np.abs(np.asarray(a, float) - np.asarray(b, float)).mean() > 0.5, (image_id, op, dose)
    assert sum(len(v) for v in images.values()) <= MAX_BYTES
    # nothing but what the cells need: one original per image, one variant per (image, operator, dose)
    needed = {image_key(a, i) for (a, _, _), t in ref.items() for i, _ in t} | {
        image_key(a, i, op, d) for (a, _, op), t in ref.items() for i, d in t}
    assert set(images) == needed


def test_the_report_shows_the_thumbnails_of_the_ids_it_lists(demo_bundle, tmp_path):
    d = tmp_path / "b"
    shutil.copytree(demo_bundle, d)
    render(d, formats=["html"])  # from the bundle alone: no image file is read
    page = (d / "report.html").read_text()
    lines = re.findall(r'Moved most \(raw score change at the extreme dose\): (.*?)</li>', page, re.S)
    ref = _reference_movers(demo_bundle, 5)
    cells = json.loads((d / "results.json").read_text())["cells"]
    assert len(lines) == sum((c.get("params") or {}).get("operator") is not None for c in cells) > len(ref)
    for line in lines:
        text = line.split('<span class="movers-thumbs">')[0]
        ids = [htmllib.unescape(p.strip().split(" ")[0]) for p in text.rstrip(".").split(";")]
        shown = [htmllib.unescape(a) for a in re.findall(r'alt="([^"]*), original"', line)]
        assert 0 < len(shown) <= PER_CELL
        assert shown == ids[:len(shown)], (ids, shown)  # the first ids of the list, in its order
        assert any(ids == [i for i, _ in r] for r in ref.values()), ids  # the list is the independent ranking
        for src in re.findall(r'src="data:image/jpeg;base64,([^"]+)"', line):
            assert max(_img(src).size) <= SIZE


def test_the_total_size_is_capped(demo_bundle, tmp_path):
    from scoreaudit import api

    ir, _ = api.compile(demo_bundle.parent / "demo.audit", tables=False)
    full = make_mover_thumbnails(ir, demo_bundle.parent / "demo.audit", demo_bundle)
    total = sum(len(v) for v in full["images"].values())
    capped = make_mover_thumbnails(ir, demo_bundle.parent / "demo.audit", demo_bundle, max_bytes=total // 3)
    assert capped.get("capped") is True and 0 < sum(len(v) for v in capped["images"].values()) <= total // 3
    assert set(capped["images"]) < set(full["images"])
    one = make_mover_thumbnails(ir, demo_bundle.parent / "demo.audit", demo_bundle, per_cell=1)
    assert len(one["images"]) < len(full["images"])


def test_malformed_or_opted_out_thumbnails_never_reach_the_page(demo_bundle, tmp_path):
    d = tmp_path / "b"
    shutil.copytree(demo_bundle, d)
    data = json.loads((d / FILE).read_text())
    key = next(iter(data["images"]))
    data["images"][key] = '"><script>alert(1)</script>'
    (d / FILE).write_text(json.dumps(data))
    render(d, formats=["html"])
    page = (d / "report.html").read_text()
    assert "<script>" not in page and "alert(1)" not in page
    assert 'class="movers-thumbs"' in page  # the other thumbnails still show
    ir = json.loads((d / "ir.json").read_text())
    ir["report"]["thumbnails"] = False
    (d / "ir.json").write_text(json.dumps(ir))
    render(d, formats=["html"])
    assert 'class="mover"' not in (d / "report.html").read_text()


@pytest.mark.skipif(shutil.which("pdfimages") is None, reason="pdfimages (poppler-utils) is not installed")
def test_the_pdf_shows_them_too(demo_bundle, tmp_path):
    pytest.importorskip("weasyprint")
    d = tmp_path / "b"
    shutil.copytree(demo_bundle, d)
    render(d, formats=["html", "pdf"])
    listing = subprocess.run(["pdfimages", "-list", str(d / "report.pdf")], capture_output=True, text=True,
                             check=True).stdout.splitlines()[2:]
    sizes = [(int(r.split()[3]), int(r.split()[4])) for r in listing]
    html = (d / "report.html").read_text()
    n_movers = len(re.findall(r'<span class="mover">', html)) * 2
    n_mover_imgs = sum(1 for w, h in sizes if max(w, h) <= SIZE)
    assert n_movers > 0 and n_mover_imgs >= n_movers


def test_making_them_is_never_silent(demo_bundle, capsys):
    """Off a terminal, one plain progress line per stretch of decoding (and one at the end), like every stage."""
    from scoreaudit import api

    ir, _ = api.compile(demo_bundle.parent / "demo.audit", tables=False)
    capsys.readouterr()
    make_mover_thumbnails(ir, demo_bundle.parent / "demo.audit", demo_bundle, progress=True)
    err = capsys.readouterr().err
    n = len({(a, i) for (a, _, _), t in _reference_movers(demo_bundle, PER_CELL).items() for i, _ in t})
    assert f"progress: thumbnails of the top movers {n}/{n} (100%)" in err, err
    make_mover_thumbnails(ir, demo_bundle.parent / "demo.audit", demo_bundle)
    assert "progress:" not in capsys.readouterr().err
