"""Thumbnail strips: one real image at every dose of each operator, region outlined, stored in the bundle."""

from __future__ import annotations

import base64
import io
import json
import re
import shutil

import numpy as np
from PIL import Image

from scoreaudit import api
from scoreaudit.reports.render import render
from scoreaudit.runtime.thumbnails import OUTLINE, thumbnail


def _img(b64: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(b64)))


def test_every_operator_has_one_small_jpeg_per_dose(demo_bundle):
    thumbs = json.loads((demo_bundle / "thumbnails.json").read_text())
    ir = json.loads((demo_bundle / "ir.json").read_text())
    assert set(thumbs) == set(ir["operators"])
    for name, op in ir["operators"].items():
        t = thumbs[name]
        assert [d["dose"] for d in t["doses"]] == sorted(set(op["doses"]) | {op["identity"]})
        assert ir["arms"][t["arm"]]["kind"] == "real"  # a real image when there is one
        for d in t["doses"]:
            im = _img(d["jpeg"])
            assert im.format == "JPEG" and max(im.size) <= 160
            assert len(d["jpeg"]) < 20_000  # small enough to embed
        # the doses differ visibly from the original (except the identity itself)
        pix = {d["dose"]: np.asarray(_img(d["jpeg"]), float) for d in t["doses"]}
        far = max(pix, key=lambda x: abs(x - op["identity"]))
        assert np.abs(pix[far] - pix[op["identity"]]).mean() > 0.5


def test_region_outline_is_drawn():
    image = np.full((80, 80, 3), 120, np.uint8)
    mask = np.zeros((80, 80), bool)
    mask[20:60, 20:60] = True
    small = np.asarray(_img(thumbnail(image, mask, size=80, quality=95)), int)
    edge = small[20, 40]  # on the square's border
    assert np.abs(edge - OUTLINE).sum() < 120 and np.abs(small[40, 40] - 120).sum() < 30


def test_a_tiny_image_is_enlarged_so_its_outline_stays_thin():
    """A 24 px image shown at ~100 px: enlarged by a whole factor (square pixels) before the outline is
    drawn, so the outline covers a thin line, not most of the picture."""
    image = np.full((24, 24, 3), 120, np.uint8)
    mask = np.zeros((24, 24), bool)
    mask[6:18, 6:18] = True
    small = np.asarray(_img(thumbnail(image, mask, size=160, quality=95)), int)
    assert small.shape[:2] == (144, 144)  # 6 x 24
    magenta = (np.abs(small - OUTLINE).sum(axis=2) < 150).mean()
    assert 0.02 < magenta < 0.15, magenta  # a 2 px line around a 72 px square, not the whole picture
    assert np.abs(small[72, 72] - 120).sum() < 30  # the inside is the image


def test_report_embeds_the_strip_and_rerenders_without_images(demo_bundle, tmp_path):
    d = tmp_path / "b"
    shutil.copytree(demo_bundle, d)
    thumbs = json.loads((d / "thumbnails.json").read_text())
    render(d, formats=["html"])  # the images are not in the bundle: only thumbnails.json is read
    html = (d / "report.html").read_text()
    uris = re.findall(r'<figure class="thumb"><img src="data:image/jpeg;base64,([A-Za-z0-9+/=]+)" alt="([^"]*)"', html)
    assert len(uris) == sum(len(t["doses"]) for t in thumbs.values())
    assert all("at dose" in alt for _, alt in uris)
    assert "outlines region skin" in html


def test_malformed_thumbnail_data_never_reaches_the_page(demo_bundle, tmp_path):
    d = tmp_path / "b"
    shutil.copytree(demo_bundle, d)
    thumbs = json.loads((d / "thumbnails.json").read_text())
    first = next(iter(thumbs.values()))
    first["doses"][0]["jpeg"] = '"><script>alert(1)</script>'
    (d / "thumbnails.json").write_text(json.dumps(thumbs))
    render(d, formats=["html"])
    html = (d / "report.html").read_text()
    assert "<script>" not in html and "alert(1)" not in html


def test_thumbnails_false_opts_out(tmp_path, demo_bundle):
    spec = (demo_bundle / "spec.audit").read_text()
    assert "report {" in spec
    spec = spec.replace("report {", "report {\n  thumbnails: false")
    (tmp_path / "a.audit").write_text(spec)
    checked = api.check(tmp_path / "a.audit", tables=False)
    assert checked.ok and checked.ir.report.thumbnails is False
    from scoreaudit.runtime.thumbnails import write_thumbnails

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "thumbnails.json").write_text("{}")
    assert write_thumbnails(checked.ir, tmp_path / "a.audit", tmp_path / "out") is None
    assert not (tmp_path / "out" / "thumbnails.json").exists()
    # and a bundle whose ir says no thumbnails shows none, even if the file is there
    d = tmp_path / "b"
    shutil.copytree(demo_bundle, d)
    ir = json.loads((d / "ir.json").read_text())
    ir["report"]["thumbnails"] = False
    (d / "ir.json").write_text(json.dumps(ir))
    render(d, formats=["html"])
    assert "data:image/jpeg" not in (d / "report.html").read_text()


def test_an_image_the_regions_refuse_is_skipped_for_the_next(demo_bundle, monkeypatch):
    from scoreaudit.plugins.base import ImageFailure
    from scoreaudit.runtime import regions
    from scoreaudit.runtime.thumbnails import make_thumbnails

    ir, _ = api.compile(demo_bundle.parent / "demo.audit", tables=False)
    real = regions.RegionEvaluator.evaluate
    calls = []

    def flaky(self, image, row=None, base_dir="."):
        calls.append(1)
        if len(calls) == 1:
            raise ImageFailure("region", "no face found")
        return real(self, image, row, base_dir)

    monkeypatch.setattr(regions.RegionEvaluator, "evaluate", flaky)
    thumbs = make_thumbnails(ir, demo_bundle.parent / "demo.audit")
    first = next(iter(thumbs.values()))
    assert len(calls) == 2 and first["image_id"] != json.loads((demo_bundle / "thumbnails.json").read_text())[
        next(iter(thumbs))]["image_id"]
