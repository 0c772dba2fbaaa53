"""Display labels (`label: "..."` on scorers, arms, operators) are used everywhere the report names them."""

from __future__ import annotations

import json
import re
import shutil

from scoreaudit.reports.render import render


def test_labels_replace_names_across_the_report(bundles, tmp_path):
    d = tmp_path / "b"
    shutil.copytree(bundles["skin_tone"], d)
    ir = json.loads((d / "ir.json").read_text())
    res0 = json.loads((d / "results.json").read_text())
    scorers = list(dict.fromkeys(c["scorer"] for c in res0["cells"]))
    ir.setdefault("scorers", {n: {"name": n} for n in scorers})
    ir.setdefault("arms", {n: {"name": n} for n in res0["arms"]})
    ir["scorers"]["pick"]["label"] = "PickScore v1"
    ir["arms"]["real"]["label"] = "Real faces"
    ir["operators"]["light"]["label"] = "Lightness L*"
    (d / "ir.json").write_text(json.dumps(ir))
    render(d, formats=["html"])
    html = (d / "report.html").read_text()
    res = json.loads((d / "results.json").read_text())

    def section(name):
        return re.search(rf'<section id="{name}".*?</section>', html, re.S).group(0)

    assert "PickScore v1" in html[: html.index("<main>")]  # the header's summary line
    glance = section("glance")
    assert '<th scope="col" class="num">PickScore v1</th>' in glance and "Real faces" in glance
    hyp = section("hypotheses")
    pick_cells = [c for c in res["cells"] if c["scorer"] == "pick" and c.get("arm") == "real"]
    assert pick_cells and "On Real faces, PickScore v1&#39;s" in hyp
    assert "pick&#39;s" not in hyp and "On real," not in hyp
    assert "PickScore v1 \u00b7 Lightness L*" in section("curves")  # panel titles
    assert "Lightness L*" in section("verdict")
    for name in ("placebo", "drift", "strata", "uniformity", "transfer"):
        s = section(name)
        assert "PickScore v1" in s, name
        assert not re.search(r">pick<|pick \u00b7", s), name
