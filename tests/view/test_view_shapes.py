"""Every page renders for bundles of other shapes: the report's fixture bundles (pairs, cross-image, body
warps, no runtime tables) and a planted skin-tone bundle with exclusions, one of them without an image id."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("starlette")

from starlette.testclient import TestClient

from scoreaudit.view.app import create_app

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "reports"))


def _pages(d: Path) -> list[int]:
    app = create_app([d], verify=False)
    c = TestClient(app, base_url="http://127.0.0.1")
    b = app.state.bundles["0"]
    assert b.error is None, b.error
    urls = [("/b/0/", {}), ("/b/0/exclusions", {}), ("/b/0/prereg", {}), ("/b/0/", {"sort": "-q"}),
            ("/b/0/", {"sort": "estimate", "outcome": "supported"})]
    urls += [("/b/0/cell", {"id": cell["id"]}) for cell in b.cells]
    images = b.table("images")
    if not images.empty:
        urls += [("/b/0/image", {"arm": a, "id": i}) for a, i in list(zip(images["arm"], images["image_id"]))[:12]]
    bad = []
    for url, params in urls:
        r = c.get(url, params=params)
        if r.status_code != 200:
            bad.append((url, params, r.status_code))
    assert bad == []
    return [len(urls)]


@pytest.mark.parametrize("example", ["skin_tone", "body_warp", "cross_image"])
def test_every_page_of_a_fixture_bundle_renders(example, tmp_path):
    from fixture_bundle import BUILDERS

    _pages(BUILDERS[example](tmp_path / example))


def test_every_page_of_a_planted_bundle_with_exclusions_renders(tmp_path):
    from real_bundle import planted_bundle

    excl = [{"arm": "real", "image_id": None, "row": 3, "stage": "manifest", "reason": "no id in row 3"},
            {"arm": "real", "image_id": "r999", "row": 4, "stage": "decode", "reason": "not an image <b>x</b>"}]
    d = planted_bundle(tmp_path / "planted", clusters=12, bootstrap=100, exclusions=excl)
    _pages(d)
    c = TestClient(create_app([d], verify=False), base_url="http://127.0.0.1")
    html = c.get("/b/0/exclusions").text
    ex = pd.read_parquet(d / "tables" / "exclusions.parquet")
    for reason in ex["reason"].unique():
        assert f"{(ex['reason'] == reason).sum()} × " in html
    assert "not an image &lt;b&gt;x&lt;/b&gt;" in html and "real row 3" in html and "nan" not in html
