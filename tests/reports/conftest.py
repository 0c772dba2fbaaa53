"""Fixtures for the report tests: fixture bundles of the three normative examples, rendered once."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fixture_bundle import BUILDERS  # noqa: E402

EXAMPLES = tuple(BUILDERS)


@pytest.fixture(scope="session")
def bundles(tmp_path_factory) -> dict[str, Path]:
    """One fixture bundle per normative example, with report.html rendered."""
    from scoreaudit.reports.render import render

    out = {}
    for name, build in BUILDERS.items():
        d = build(tmp_path_factory.mktemp(name))
        render(d, formats=["html"])
        out[name] = d
    return out


@pytest.fixture(scope="session")
def skin_pdf(tmp_path_factory) -> Path:
    pytest.importorskip("weasyprint")
    from scoreaudit.reports.render import render

    d = BUILDERS["skin_tone"](tmp_path_factory.mktemp("skin_pdf"))
    paths = render(d, formats=["html", "pdf"])
    assert d / "report.pdf" in paths
    return d


@pytest.fixture(scope="session")
def demo_bundle(tmp_path_factory) -> Path:
    """The demo audit run for real (small data, few resamples): what a newcomer's `make demo` shows."""
    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "scripts"))
    import make_demo_data

    from scoreaudit import api

    d = tmp_path_factory.mktemp("demo")
    make_demo_data.build(d / "data" / "demo", n_real=10, n_prompts=4)
    text = (root / "examples" / "demo.audit").read_text(encoding="utf-8").replace("bootstrap: 2000", "bootstrap: 200")
    (d / "demo.audit").write_text(text, encoding="utf-8")
    api.run(d / "demo.audit", out=d / "out", progress=False)
    return d / "out"


@pytest.fixture(scope="session")
def comparisons_bundle(tmp_path_factory) -> Path:
    """examples/comparisons.audit run on the data scripts/make_comparisons_data.py generates, HTML and PDF."""
    import importlib.util
    import shutil

    from scoreaudit import api

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("make_comparisons_data", root / "scripts" / "make_comparisons_data.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    d = tmp_path_factory.mktemp("comparisons")
    gen.build(d / "data")
    text = (root / "examples" / "comparisons.audit").read_text(encoding="utf-8").replace("bootstrap: 2000", "bootstrap: 400")
    (d / "comparisons.audit").write_text(text, encoding="utf-8")
    api.run(d / "comparisons.audit", out=d / "out", progress=False)
    try:
        from scoreaudit.reports.render import render

        render(d / "out", formats=["html", "pdf"])
    except ImportError:
        pass
    return d / "out"


@pytest.fixture(scope="session")
def big_bundle_dir(tmp_path_factory) -> Path:
    """tests/reports/big.audit (7 scorers, 3 arms, 12 hypotheses) analysed on planted scores, HTML and PDF."""
    from big_bundle import big_bundle

    from scoreaudit.reports.manifest import write_manifest
    from scoreaudit.reports.render import render

    d = big_bundle(tmp_path_factory.mktemp("big") / "out", real=150, prompts=40, per_prompt=4, pairs=300,
                   excluded=400, bootstrap=200)
    render(d, formats=["html", "pdf"])  # without WeasyPrint: HTML and a warning
    write_manifest(d)  # as `run` does
    return d
