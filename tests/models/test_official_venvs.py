"""The official packages' venvs hold their lock and see nothing of the main venv but what they share.

The differential tests compare scoreaudit with image-reward 1.5 and hpsv2 1.2.0 run in their own
venvs. Those venvs broke once without any change here: they saw the main venv's whole
site-packages, the main venv gained `kernels` (pulled by transformers 5), and the official
transformers 4.55.4 imported it. Now each venv installs its own lock and takes only torch,
torchvision and their closure (lock/shared.txt) from the main venv, through one folder of links.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from official import official_python

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from share_site import canonical, pins  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]  # slow: builds and runs the official packages' own venvs

#: what each driver in tests/models imports from the official package (its scoring path)
IMPORTS = {
    "image-reward": ["ImageReward.models.BLIP.blip_pretrain", "ImageReward.models.BLIP.vit", "ImageReward.utils",
                     "clip", "transformers", "timm", "fairscale"],
    "hpsv2": ["hpsv2", "hpsv2.src.open_clip", "transformers", "timm"],
}

PROBE = r"""
import importlib, json, sys, types, importlib.util
from importlib import metadata
mods = sys.argv[1].split(",")
if mods[0].startswith("ImageReward"):  # the driver's way in: its __init__ imports training code
    spec = importlib.util.find_spec("ImageReward")
    pkg = types.ModuleType("ImageReward"); pkg.__path__ = list(spec.submodule_search_locations)
    sys.modules["ImageReward"] = pkg
for m in mods:
    importlib.import_module(m)
try:
    import kernels  # noqa: F401
    has_kernels = True
except ImportError:
    has_kernels = False
files = sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)})
# setuptools puts its vendored copies (setuptools/_vendor) on the path when imported: part of it
dists = {d.metadata["Name"]: d.version for d in metadata.distributions()
         if "/setuptools/_vendor/" not in str(getattr(d, "_path", ""))}
print(json.dumps({"files": files, "path": sys.path, "kernels": has_kernels, "dists": dists}))
"""


def _probe(package: str) -> dict:
    out = subprocess.run([official_python(package), "-c", PROBE, ",".join(IMPORTS[package])],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("package", sorted(IMPORTS))
def test_official_venv_imports_nothing_from_the_main_venv_but_the_shared_closure(package):
    probe = _probe(package)
    main_site = sysconfig.get_paths()["purelib"]
    assert not any(p.rstrip("/") == main_site.rstrip("/") for p in probe["path"]), "the main site-packages is on the path"
    leaked = [f for f in probe["files"] if f.startswith(main_site + "/")]
    assert not leaked, f"modules loaded from the main venv: {leaked[:5]}"
    # whatever comes through the shared folder belongs to a distribution lock/shared.txt names
    shared = pins(ROOT / "lock" / "shared.txt")
    via = [f for f in probe["files"] if "/shared-site/" in f]
    assert via, "torch did not come from the shared folder"
    tops = {Path(f).relative_to(f.split("/shared-site/")[0] + "/shared-site").parts[0] for f in via}
    from importlib import metadata

    owners = {}
    for d in metadata.distributions():
        for f in d.files or ():
            owners.setdefault(Path(str(f)).parts[0], set()).add(canonical(d.metadata["Name"]))
    strays = {t: owners.get(t) for t in tops if not (owners.get(t, set()) & set(shared))}
    assert not strays, f"the shared folder exposes what lock/shared.txt does not name: {strays}"


def test_image_reward_venv_cannot_import_kernels():
    """The regression itself: the main venv's `kernels` must not be importable by transformers 4.55.4."""
    assert _probe("image-reward")["kernels"] is False


@pytest.mark.parametrize("package", sorted(IMPORTS))
def test_official_venv_holds_exactly_its_lock(package):
    """Every distribution the venv sees is pinned by its lock at that version, and `pip check` passes."""
    lock = pins(ROOT / "lock" / f"official-{package}.txt")
    seen = {canonical(n): v for n, v in _probe(package)["dists"].items()}
    extra = {n: v for n, v in seen.items() if n not in lock}
    assert not extra, f"installed but not in lock/official-{package}.txt: {extra}"
    wrong = {n: (seen.get(n), v) for n, v in lock.items() if seen.get(n) != v}
    assert not wrong, f"(installed, locked) versions differ: {wrong}"
    check = subprocess.run([sys.executable, "-m", "pip", "--python", official_python(package), "check"],
                           capture_output=True, text=True, timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr


def test_official_locks_pin_what_their_inputs_ask_for():
    from packaging.requirements import Requirement

    for src in sorted((ROOT / "lock").glob("official-*.in")):
        lock = pins(src.with_suffix(".txt"))
        for line in src.read_text(encoding="utf-8").splitlines():
            line = line.split("#")[0].strip()
            if not line:
                continue
            req = Requirement(line)
            assert canonical(req.name) in lock, f"{src.name}: {req.name} is not in {src.with_suffix('.txt').name}"
            assert req.specifier.contains(lock[canonical(req.name)], prereleases=True), (src.name, line)
        shared = pins(ROOT / "lock" / "shared.txt")
        differ = {n: (lock[n], v) for n, v in shared.items() if n in lock and lock[n] != v}
        assert not differ, f"{src.name}: shares these at other versions than lock/shared.txt: {differ}"
        assert re.search(r"make lock", src.with_suffix(".txt").read_text(encoding="utf-8"))
