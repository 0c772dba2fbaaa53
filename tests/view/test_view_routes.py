"""The explorer's routes through starlette's TestClient: what each page shows, escaping, containment, verification."""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import sys

import pandas as pd
import pytest
from markupsafe import escape

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient

from scoreaudit.view.app import create_app

CHANGED = "H2/planted_dir/real"
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'


def client(*dirs, verify=True) -> TestClient:
    app = create_app(list(dirs), verify=verify)
    for b in app.state.bundles.values():
        assert b.verification.wait(300)
    return TestClient(app, base_url="http://127.0.0.1")


def rows(html: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table[^>]*id="{table_id}".*?<tbody>(.*?)</tbody>', html, re.S).group(1)
    out = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
        out.append([htmllib.unescape(re.sub(r"<[^>]+>", "", td)).strip() for td in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)])
    return out


def test_a_good_bundle_is_verified_and_its_cells_listed(two_bundles):
    a, _ = two_bundles
    c = client(a)
    assert c.get("/b/0/status").json()["state"] == "ok"
    r = c.get("/b/0/")
    assert r.status_code == 200 and "Verified:" in r.text
    assert "default-src 'none'" in r.headers["content-security-policy"]
    cells = pd.read_parquet(a / "tables" / "cells.parquet")
    assert len(rows(r.text, "cells")) == len(cells)


def test_filters_and_sorting(two_bundles):
    a, _ = two_bundles
    cells = pd.read_parquet(a / "tables" / "cells.parquet")
    c = client(a, verify=False)
    got = rows(c.get("/b/0/", params={"outcome": "refuted", "sort": "-estimate"}).text, "cells")
    want = cells[cells["outcome"] == "refuted"].sort_values("estimate", ascending=False)["id"].tolist()
    assert [r[0] for r in got] == want
    got = rows(c.get("/b/0/", params={"scorer": "colour", "hypothesis": "H1"}).text, "cells")
    assert [r[0] for r in got] == cells[(cells["scorer"] == "colour") & (cells["hypothesis"] == "H1")]["id"].tolist()
    got = rows(c.get("/b/0/", params={"q_max": "0.5"}).text, "cells")
    assert sorted(r[0] for r in got) == sorted(cells[cells["q"] <= 0.5]["id"])
    got = rows(c.get("/b/0/", params={"arm": "synthetic \u2192 real"}).text, "cells")
    assert [r[0] for r in got] == [i for i in cells["id"] if i.startswith("H4/")]


def test_cell_page_shows_sentence_distribution_and_what_drives_it(two_bundles):
    a, _ = two_bundles
    c = client(a, verify=False)
    res = json.loads((a / "results.json").read_text())
    cell = next(x for x in res["cells"] if x["id"] == CHANGED)
    html = c.get("/b/0/cell", params={"id": CHANGED}).text
    assert str(escape(cell["sentence"])) in html
    con = pd.read_parquet(a / "tables" / "contrasts.parquet").query("cell == @CHANGED")
    counts = [int(n) for n in re.findall(r"<title>(\d+) in \[", html)]
    assert sum(counts) == len(con) == 8  # the histogram holds every cluster's contrast once
    top = rows(html, "contributors")
    biggest = con.assign(m=con["value"].abs()).sort_values("m", ascending=False)["cluster"].iloc[0]
    assert top[0][1] == biggest  # the largest contrast first
    scores = pd.read_parquet(a / "tables" / "scores.parquet")
    mine = scores.query("arm == 'real' and image_id == @biggest and scorer == 'planted_dir' and operator == 'light'")
    shown = re.findall(r"<td>([^<]*)</td>", re.search(r'<table class="doses">(.*?)</table>', html, re.S).group(1))
    from scoreaudit.numfmt import num

    assert shown == [num(v) for v in mine.sort_values("dose")["score"]]
    assert c.get("/b/0/cell", params={"id": "H9/nope/real"}).status_code == 404


def test_image_page_shows_every_variant_with_scores_measures_and_thumbnails(two_bundles):
    a, _ = two_bundles
    c = client(a, verify=False)
    html = c.get("/b/0/image", params={"arm": "real", "id": "astro_000"}).text
    scores = pd.read_parquet(a / "tables" / "scores.parquet").query("arm == 'real' and image_id == 'astro_000'")
    assert len(rows(html, "scores")) == len(scores.groupby(["operator", "dose"]))
    measures = pd.read_parquet(a / "tables" / "measures.parquet").query("arm == 'real' and image_id == 'astro_000'")
    assert len(rows(html, "measures")) == len(measures.groupby(["operator", "dose"]))
    thumbs = json.loads((a / "thumbnails.json").read_text())
    n = sum(len(t["doses"]) for t in thumbs.values() if t["image_id"] == "astro_000")
    if (a / "mover_thumbnails.json").exists():  # the report's movers (runtime/movers.py), when the run wrote them
        movers = json.loads((a / "mover_thumbnails.json").read_text())["images"]
        n += sum(1 for k in movers if k == "real/astro_000" or k.startswith("real/astro_000/"))
    srcs = re.findall(r'<img class="thumb" src="(/b/0/thumb/\d+)"', html)
    assert len(srcs) == n > 0 and "skin outlined" in html
    r = c.get(srcs[0])
    assert r.headers["content-type"] == "image/jpeg" and r.content[:3] == b"\xff\xd8\xff"
    assert c.get("/b/0/thumb/9999").status_code == 404
    assert c.get("/b/0/image", params={"arm": "real", "id": "../../etc/passwd"}).status_code == 404


def test_a_hostile_label_is_escaped_and_the_edited_bundle_fails_verification(two_bundles, tmp_path):
    a, _ = two_bundles
    d = tmp_path / "hostile"
    shutil.copytree(a, d)
    res = json.loads((d / "results.json").read_text())
    res["hypotheses"][0]["title"] = HOSTILE
    res["cells"][0]["sentence"] = HOSTILE
    res["lock"]["detail"] = HOSTILE
    (d / "results.json").write_text(json.dumps(res))
    c = client(d)
    status = c.get("/b/0/status").json()
    assert status["state"] == "failed" and any("results.json" in m for m in status["mismatches"])
    for url, params in (("/b/0/", {}), ("/b/0/cell", {"id": res["cells"][0]["id"]}), ("/b/0/prereg", {})):
        html = c.get(url, params=params).text
        assert "FAILS verification" in html
        assert "<script>alert" not in html and "onerror=alert(1)>" not in html
        assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html and "&amp;amp;" in html


def test_files_are_served_only_by_their_manifest_name(two_bundles, tmp_path):
    a, _ = two_bundles
    d = tmp_path / "b"
    shutil.copytree(a, d)
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the bundle")
    c = client(d, verify=False)
    r = c.get("/b/0/file", params={"name": "report.html"})
    assert r.status_code == 200 and "sandbox" in r.headers["content-security-policy"]
    for name in ("../secret.txt", str(secret), "/etc/passwd", "tables/../../secret.txt", "tables", ""):
        assert c.get("/b/0/file", params={"name": name}).status_code == 404, name
    for url in ("/b/0/../../secret.txt", "/static/../app.py", "/static/%2e%2e%2fapp.py", "/b/7/"):
        assert c.get(url).status_code == 404, url
    # a manifest entry that leaves the bundle is never opened, even with the right sha256
    man = json.loads((d / "manifest.json").read_text())
    import hashlib

    man["files"]["../secret.txt"] = hashlib.sha256(secret.read_bytes()).hexdigest()
    (d / "manifest.json").write_text(json.dumps(man))
    assert client(d, verify=False).get("/b/0/file", params={"name": "../secret.txt"}).status_code == 404
    # a file swapped for a link out after the bundle was opened is refused at the descriptor, even when
    # what it points to has the manifest's bytes
    twin = tmp_path / "twin.html"
    shutil.copy(d / "report.html", twin)
    (d / "report.html").unlink()
    os.symlink(twin, d / "report.html")
    assert c.get("/b/0/file", params={"name": "report.html"}).status_code == 404


def test_a_bundle_with_a_link_out_is_shown_as_failing(two_bundles, tmp_path):
    a, _ = two_bundles
    d = tmp_path / "linked"
    shutil.copytree(a, d)
    os.symlink("/etc/passwd", d / "tables" / "extra.parquet")
    c = client(d, a)
    html = c.get("/b/0/").text
    assert "cannot be shown as a bundle" in html and "links that point outside" in html
    assert "/etc/passwd" not in c.get("/b/0/file", params={"name": "tables/extra.parquet"}).text
    assert c.get("/b/1/status").json()["state"] == "ok"  # the other bundle is unaffected


def test_requests_for_another_host_are_refused(two_bundles):
    c = client(two_bundles[0], verify=False)
    assert c.get("/b/0/", headers={"host": "attacker.example"}).status_code == 400


def test_compare_page_lists_the_changed_cell_first(two_bundles):
    a, b = two_bundles
    c = client(a, b, verify=False)
    html = c.get("/compare", params={"a": "0", "b": "1"}).text
    table = rows(html, "compare")
    changed = [r[0] for r in table if r[1] != r[2]]
    assert CHANGED in changed and table[: len(changed)] == [r for r in table if r[1] != r[2]]
    assert re.search(r'id="n-changed">(\d+)<', html).group(1) == str(len(changed))
    assert "other bundle" not in html
    cell = c.get("/b/0/cell", params={"id": CHANGED}).text
    assert "/compare?a=0&amp;b=1" in cell


def test_view_without_the_extra_says_what_to_install(two_bundles, monkeypatch, capsys):
    from scoreaudit import cli

    monkeypatch.setitem(sys.modules, "starlette", None)
    monkeypatch.setitem(sys.modules, "starlette.applications", None)
    monkeypatch.delitem(sys.modules, "scoreaudit.view.app", raising=False)
    assert cli.main(["view", str(two_bundles[0])]) == 3
    assert "pip install 'scoreaudit[view]'" in capsys.readouterr().err


def test_mover_thumbnails_the_report_stores_are_shown_with_their_image(two_bundles, tmp_path):
    """mover_thumbnails.json (runtime/movers.py: `ARM/ID` and `ARM/ID/OPERATOR/DOSE` keys) reaches the cell
    and image pages; a key naming no image of the bundle is ignored."""
    import base64
    import io

    from PIL import Image

    a, _ = two_bundles
    d = tmp_path / "movers"
    shutil.copytree(a, d)
    con = pd.read_parquet(d / "tables" / "contrasts.parquet").query("cell == @CHANGED")
    top = con.assign(m=con["value"].abs()).sort_values("m", ascending=False)["cluster"].iloc[0]
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buf, format="JPEG")
    jpeg = base64.b64encode(buf.getvalue()).decode()
    stored = {f"real/{top}": jpeg, f"real/{top}/light/10.0": jpeg, "real/nobody/light/10.0": jpeg}
    (d / "mover_thumbnails.json").write_text(json.dumps({"size": 96, "per_cell": 3, "images": stored}))
    c = client(d, verify=False)
    html = c.get("/b/0/cell", params={"id": CHANGED}).text
    first = re.search(r'<table[^>]*id="contributors".*?<tbody>\s*<tr>(.*?)</tr>', html, re.S).group(1)
    assert re.findall(r'alt="([^"]+)"', first) == [f"{top}: original", f"{top}: light 10.0"]
    page = c.get("/b/0/image", params={"arm": "real", "id": top}).text
    assert page.count('<img class="thumb"') == 2 and "light 10.0" in page


def test_pages_reference_nothing_outside_the_app(two_bundles):
    """No page names a resource on another origin (the CSP would refuse it anyway): it works offline."""
    a, b = two_bundles
    c = client(a, b, verify=False)
    for url, params in (("/", {}), ("/b/0/", {}), ("/b/0/cell", {"id": CHANGED}), ("/compare", {"a": "0", "b": "1"}),
                        ("/b/0/image", {"arm": "real", "id": "astro_000"}), ("/b/0/exclusions", {}), ("/b/0/prereg", {})):
        html = c.get(url, params=params).text
        refs = re.findall(r'(?:src|href|action)="([^"]*)"', html)
        assert refs and all(r.startswith(("/", "?", "data:", "#")) for r in refs), (url, refs)


def test_a_port_in_use_is_one_line_and_exit_6(two_bundles, capsys):
    import socket

    from scoreaudit import cli

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        assert cli.main(["view", str(two_bundles[0]), "--port", str(port)]) == 6
    assert "choose another --port" in capsys.readouterr().err


def test_a_folder_that_does_not_exist_is_exit_6_before_anything_listens(two_bundles, tmp_path, capsys):
    from scoreaudit import cli

    assert cli.main(["view", str(two_bundles[0]), str(tmp_path / "no-such-run")]) == 6
    err = capsys.readouterr().err
    assert "no-such-run: no such folder" in err and "serving on" not in err


def test_prereg_page_lists_each_deviation(two_bundles, tmp_path):
    a, _ = two_bundles
    d = tmp_path / "dev"
    shutil.copytree(a, d)
    res = json.loads((d / "results.json").read_text())
    devs = [{"item": "hypothesis H2", "kind": "hypothesis", "hypothesis": "H2", "change": "changed",
             "locked": "abs(asymmetry(light)) < 0.1", "current": "abs(asymmetry(light)) < 0.2"},
            {"item": "setting alpha", "kind": "setting", "hypothesis": "setting alpha", "change": "changed",
             "locked": "0.05", "current": "0.1"}]
    res["lock"].update(status="deviation", path="a.audit.lock", deviations=devs)
    (d / "results.json").write_text(json.dumps(res))
    html = client(d, verify=False).get("/b/0/prereg").text
    assert '<span class="badge lock">deviation</span>' in html
    assert rows(html, "deviations") == [[x["item"], x["change"], x["locked"], x["current"]] for x in devs]
