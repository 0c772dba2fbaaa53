"""W0421 at check time: a `scale: sd` arm whose manifest has fewer clusters than the calibration grid covers."""

from __future__ import annotations

import pytest

from scoreaudit import api
from scoreaudit.compiler.clusters import SD_MIN_CLUSTERS

SPEC = """audit "t" {{ seed: 1  scale: {scale} }}
scorer s = sharpness()
arm real = images("imgs", manifest: "real.csv", kind: real{cluster})
operator blur = gaussian_blur() doses 0, 1, 2
hypothesis H1 "x" {{ {claim} on real for each scorer }}
"""


def _spec(tmp_path, n_clusters: int, per: int = 1, scale: str = "sd", claim: str = "fidelity_index(blur) > 0",
          cluster: bool = False) -> list:
    rows = ["id,path,prompt"] + [f"i{k},i{k}.png,p{k // per}" for k in range(n_clusters * per)]
    (tmp_path / "real.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "a.audit").write_text(SPEC.format(scale=scale, claim=claim,
                                                  cluster=", cluster: prompt" if cluster else ""))
    checked = api.check(tmp_path / "a.audit")
    return [d for d in checked.diagnostics if d.code == "W0421"]


def test_few_clusters_warn_at_check_time(tmp_path):
    found = _spec(tmp_path, SD_MIN_CLUSTERS - 1)
    assert len(found) == 1
    d = found[0]
    assert f"{SD_MIN_CLUSTERS - 1} clusters" in d.message and "`real`" in d.message
    assert d.span is not None and d.span.line == 3  # the arm's declaration


def test_clusters_come_from_the_cluster_column(tmp_path):
    # 60 images but only 12 prompts: the cluster count is 12
    found = _spec(tmp_path, 12, per=5, cluster=True)
    assert len(found) == 1 and "12 clusters" in found[0].message


@pytest.mark.parametrize("kw", [
    {"n_clusters": SD_MIN_CLUSTERS},                               # enough clusters
    {"n_clusters": 5, "scale": "raw"},                             # raw: t-tests, no SD
    {"n_clusters": 5, "claim": "spearman(prompt) > 0"},            # not an SD-unit statistic
])
def test_no_warning_when_not_applicable(tmp_path, kw):
    assert _spec(tmp_path, **kw) == []


def test_unreadable_manifest_means_unknown(tmp_path):
    (tmp_path / "a.audit").write_text(SPEC.format(scale="sd", claim="fidelity_index(blur) > 0", cluster=""))
    assert not [d for d in api.check(tmp_path / "a.audit").diagnostics if d.code == "W0421"]


def test_run_time_warning_uses_the_same_threshold():
    """results.json `warnings`: the engine warns from the data with the same constant and a stable shape."""
    from scoreaudit.compiler.check import check as _unused  # noqa: F401  (the compiler is importable first)
    from scoreaudit.stats import engine
    from scoreaudit.stats.context import StatContext
    from scoreaudit.stats.planted import ArmShape, planted_tables

    src = SPEC.format(scale="sd", claim="fidelity_index(blur) > 0", cluster="")
    ir = api.check("t.audit", source=src).ir
    for n, expect in ((SD_MIN_CLUSTERS - 1, 1), (SD_MIN_CLUSTERS, 0)):
        tables = planted_tables(ir, {"real": ArmShape(n, 1)}, {"*": {"noise": 1.0}}, seed=1)
        ctx = StatContext(ir, tables, n_boot=200)
        cells = engine.evaluate_cells(ctx, list(ir.cells()))
        w = engine.scale_warnings(ctx, cells)
        assert len(w) == expect
        if w:
            assert set(w[0]) == {"code", "arm", "n_clusters", "message"}
            assert w[0]["code"] == "W0421" and w[0]["arm"] == "real" and w[0]["n_clusters"] == n
