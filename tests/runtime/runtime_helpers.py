"""Shared builders for the runtime tests: an image folder with a manifest, and IRs built by hand."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from scoreaudit.compiler.ir import (ArmIR, AuditIR, CellIR, HypothesisIR, MeasureIR, OperatorIR, PluginCall,
                                    RegionCallIR, RegionIR, ScorerIR, Settings, StatCallIR, TestIR)

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import sa_fake_plugins  # noqa: E402


@pytest.fixture
def fake_log(tmp_path, monkeypatch):
    """Registers the fake plugins for one test; the file where fake scorers record each scored image."""
    path = tmp_path / "fake_calls.tsv"
    monkeypatch.setenv("SA_FAKE_LOG", str(path))
    monkeypatch.delenv("SA_FAKE_SLEEP", raising=False)
    sa_fake_plugins.register()
    yield path
    sa_fake_plugins.unregister()


def call(plugin: str, version: str = "1", **params) -> PluginCall:
    return PluginCall(plugin=plugin, version=version, params=params)


def make_images(root: Path, n_random: int = 5, size=(40, 48), extra_rows=()) -> Path:
    """root/data/imgs/*.png + root/data/m.csv (id, path, group, prompt, rating) + an empty spec file."""
    import skimage.data

    imgs = root / "data" / "imgs"
    imgs.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    rows = ["id,path,group,prompt,rating"]
    Image.fromarray(skimage.data.astronaut()[::8, ::8]).save(imgs / "astro.png")
    rows.append("astro,astro.png,g0,an astronaut,5")
    for k in range(n_random):
        arr = rng.integers(0, 256, (*size, 3), dtype=np.uint8)
        Image.fromarray(arr).save(imgs / f"r{k}.png")
        rows.append(f"r{k},r{k}.png,g{k % 2},picture {k},{k}")
    rows.extend(extra_rows)
    (root / "data" / "m.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    spec = root / "a.audit"
    spec.write_text('audit "runtime test" { version: 1 }\n', encoding="utf-8")
    return spec


def hypothesis(name: str = "H1", threshold: float = 0.0) -> HypothesisIR:
    cell = CellIR(id=f"{name}/s/a", hypothesis=name, claim=0, scorer="s", arm="a",
                  statistic=StatCallIR(name="fidelity_index", version="1", params={"operator": "light"}),
                  test=TestIR(kind="greater", threshold=threshold, text=f"fidelity_index(light) > {threshold}"))
    return HypothesisIR(name=name, title="t", text=f"fidelity_index(light) > {threshold}", cells=(cell,))


def make_ir(*, batch_size: int = 2, doses=(-10.0, 0.0, 10.0), scorers=None, hypotheses=(), arm_params=None,
            operators=None, measures=None, regions=None, on_error: str = "skip") -> AuditIR:
    scorers = scorers if scorers is not None else {"s": ScorerIR(name="s", call=call("fake_mean"))}
    regions = regions if regions is not None else {
        "all": RegionIR(name="all", expr=RegionCallIR(call=call("everything")))}
    measures = measures if measures is not None else {
        "ml": MeasureIR(name="ml", call=call("mean_lab", region="all", channel="L"), role="measure", region="all"),
        "clip": MeasureIR(name="clip", call=call("gamut_clip"), role="covariate")}
    if operators is None:
        operators = {
            "light": OperatorIR(name="light", call=call("lab_shift", channel="L", region="all"), doses=tuple(doses),
                                identity=0.0, pixel_local=True, region="all", symmetric=True),
            "light_p": OperatorIR(name="light_p", call=call("lab_shift", channel="L"), doses=tuple(doses),
                                  identity=0.0, pixel_local=True, placebo_of="light", symmetric=True)}
    params = {"folder": "data/imgs", "manifest": "data/m.csv", "cluster": "group"}
    params.update(arm_params or {})
    arms = {"a": ArmIR(name="a", call=call("images", **params), source="images", cluster=params.get("cluster"))}
    return AuditIR(settings=Settings(title="runtime test", batch_size=batch_size, on_error=on_error),
                   scorers=scorers, arms=arms, regions=regions, measures=measures, operators=operators,
                   hypotheses=tuple(hypotheses))


def fake_calls(path: Path) -> list[list[str]]:
    if not path.exists():
        return []
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines() if line]


def table_bytes(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "tables").glob("*.parquet"))}


def run_steps(out: Path) -> list[dict]:
    from scoreaudit.runtime.runlog import read_run_log

    return read_run_log(out / "run.log")


def write_ir(ir: AuditIR, path: Path) -> None:
    path.write_text(json.dumps(ir.model_dump(mode="json")), encoding="utf-8")
