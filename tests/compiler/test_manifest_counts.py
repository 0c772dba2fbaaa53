"""`plan`, plan.json and the report's appendix count a manifest's records, not its text lines."""

from __future__ import annotations

import json

from scoreaudit import api

SPEC = """audit "t" { seed: 1 }
scorer s = sharpness()
arm pretty = images("imgs", manifest: "pretty.json", kind: real)
arm oneline = images("imgs", manifest: "oneline.json", kind: real)
arm lines = images("imgs", manifest: "lines.jsonl", kind: real)
arm tabs = images("imgs", manifest: "tabs.tsv", kind: real)
operator blur = gaussian_blur() doses 0, 1, 2
hypothesis H1 "x" { curve(blur, 2) < 0 on pretty, oneline, lines, tabs for each scorer }
"""


def test_json_manifests_count_records(tmp_path):
    recs = [{"id": f"i{k}", "path": f"i{k}.png", "note": "two\nlines"} for k in range(600)]
    (tmp_path / "pretty.json").write_text(json.dumps(recs, indent=2))  # ~3,000 lines
    (tmp_path / "oneline.json").write_text(json.dumps(recs[:7]))  # one line
    (tmp_path / "lines.jsonl").write_text("\n".join(json.dumps(r) for r in recs[:9]) + "\n\n")
    (tmp_path / "tabs.tsv").write_text("id\tpath\n" + "".join(f"i{k}\ti{k}.png\n" for k in range(5)))
    (tmp_path / "a.audit").write_text(SPEC)
    ir, plan = api.compile(tmp_path / "a.audit")
    assert plan.images == {"pretty": 600, "oneline": 7, "lines": 9, "tabs": 5}
    text = api.plan_text(plan)
    assert "[600 images]" in text and "[7 images]" in text
