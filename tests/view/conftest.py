"""Two real bundles of the demo audit for the explorer's tests: A as shipped, B with one planted scorer changed.

B's `planted_dir` loses its planted skin-lightness preference (asymmetry 0.5 -> 0.0); nothing else
differs (same data, seeds and other scorers), so the cells whose outcome may change are planted_dir's,
and every other cell's estimate is the same number in both bundles.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the cell the planted change flips: H2/planted_dir/real (abs(asymmetry(light)) < 0.1 is refuted with 0.5, not 0.0)


def _spec(asymmetry: str) -> str:
    text = (ROOT / "examples" / "demo.audit").read_text(encoding="utf-8")
    text = text.replace("bootstrap: 2000", "bootstrap: 200").replace("formats: html, pdf", "formats: html")
    planted = "planted(fidelity: 0.4, asymmetry: 0.5"
    assert planted in text
    return text.replace(planted, f"planted(fidelity: 0.4, asymmetry: {asymmetry}")


@pytest.fixture(scope="session")
def two_bundles(tmp_path_factory) -> tuple[Path, Path]:
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_demo_data

    from scoreaudit import api

    d = tmp_path_factory.mktemp("view")
    make_demo_data.build(d / "data" / "demo", n_real=8, n_prompts=4)
    (d / "a.audit").write_text(_spec("0.5"), encoding="utf-8")
    (d / "b.audit").write_text(_spec("0.0"), encoding="utf-8")
    api.run(d / "a.audit", out=d / "out_a", progress=False)
    api.run(d / "b.audit", out=d / "out_b", progress=False)
    return d / "out_a", d / "out_b"
