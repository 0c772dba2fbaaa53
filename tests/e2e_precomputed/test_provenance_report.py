"""Done-means 4: results.json["precomputed"] names each file and its sha256, and the report's appendix
says per scorer and arm whether scoreaudit computed the scores or read them from a file.

One scorer (pl) comes from the audit block's table, which holds pl's rows of the
computed run (with an `arm` column, as a bundle's table has); the other (sharp) is
computed. The statistics of both equal the all-computed run's.
"""

from __future__ import annotations

import hashlib
import html as htmllib
import json
import re

import pandas as pd
import pytest

from scoreaudit.plugins.scorers.planted import Planted

from e2e_helpers import COMPUTED, HEAD, cells, run, write_spec

FIELDS = ("estimate", "ci_low", "ci_high", "p", "q", "outcome")


@pytest.fixture(scope="module")
def mixed(computed, tmp_path_factory):
    src, results = computed
    folder = tmp_path_factory.mktemp("mixed")
    import shutil

    shutil.copytree(src / "data", folder / "data")
    scores = pd.read_parquet(src / "out" / "tables" / "scores.parquet")
    (folder / "results").mkdir()
    scores[scores["scorer"] == "pl"].to_parquet(folder / "results" / "pl.parquet", index=False)
    spec = COMPUTED.replace(HEAD, HEAD.replace("bootstrap: 200 }", 'bootstrap: 200 scores: "results/pl.parquet" }'))
    spec = spec.replace("scorer pl = planted(", "scorer pl = precomputed()\n# was planted(")
    assert 'scores: "results/pl.parquet"' in spec and "scorer pl = precomputed()" in spec
    mp = pytest.MonkeyPatch()
    mp.setattr(Planted, "score", lambda *a, **k: pytest.fail("pl was computed despite its table"))
    try:
        out = run(write_spec(folder, spec), folder / "out", render=True)
    finally:
        mp.undo()
    return folder, out, results


def test_results_name_the_file_and_its_hash(mixed):
    folder, results, _ = mixed
    sha = hashlib.sha256((folder / "results" / "pl.parquet").read_bytes()).hexdigest()
    n = len(pd.read_parquet(folder / "results" / "pl.parquet"))
    assert results["precomputed"] == [{"file": "results/pl.parquet", "sha256": sha, "provides": "scores",
                                       "arm": None, "names": ["pl"], "by_arm": {"real": ["pl"]},
                                       "rows": n, "used": n}]
    run_json = json.loads((folder / "out" / "run.json").read_text())
    assert run_json["precomputed"] == results["precomputed"]
    assert run_json["scorers"]["pl"]["weights_sha256"] is None


def test_the_statistics_are_those_of_the_computed_run(mixed):
    _, b, a = mixed
    ca, cb = cells(a), cells(b)
    assert {k: [c[f] for f in FIELDS] for k, c in ca.items()} == {k: [c[f] for f in FIELDS] for k, c in cb.items()}


def _sources(folder) -> dict[tuple[str, str], str]:
    page = (folder / "out" / "report.html").read_text(encoding="utf-8")
    table = page[page.index('id="number-sources"'):]
    table = table[:table.index("</table>")]
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>", table)
    return {(a, b): htmllib.unescape(re.sub(r"<[^>]+>", "", c)) for a, b, c in rows}


def test_the_appendix_says_where_each_scorer_came_from(mixed):
    folder, results, _ = mixed
    sha = results["precomputed"][0]["sha256"]
    assert _sources(folder) == {("scorer pl", "real"): f"read from results/pl.parquet (sha256 {sha})",
                                ("scorer sharp", "real"): "computed by scoreaudit"}
    page = (folder / "out" / "report.html").read_text(encoding="utf-8")
    assert "Appendix" in page[:page.index('id="number-sources"')]


def test_a_computed_audit_says_computed(computed):
    folder, _ = computed
    from scoreaudit import api

    api.render(folder / "out", formats=["html"])
    assert _sources(folder) == {("scorer pl", "real"): "computed by scoreaudit",
                                ("scorer sharp", "real"): "computed by scoreaudit"}


def test_the_bundle_verifies(mixed):
    """`scoreaudit verify` recomputes every reported number from the bundle, precomputed rows included."""
    from scoreaudit.reports.verify import verify

    folder, _, _ = mixed
    assert verify(folder / "out") == []
