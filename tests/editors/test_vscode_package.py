"""The VS Code extension is ready to publish (issue 30): the manifest fields vsce and Open VSX require, a LICENSE,
a marketplace README, a 128x128 icon drawn by a committed script, and a bundled client.

When `vsce` is on PATH (with esbuild and vscode-languageclient in the node_modules beside it or in
editors/vscode), the extension is really packaged: `vsce package` must print no warning, and the .vsix
must hold exactly the files a user needs, with a client that requires nothing but `vscode` and Node's own
modules (no node_modules at run time).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXT = ROOT / "editors" / "vscode"
MANIFEST = json.loads((EXT / "package.json").read_text(encoding="utf-8"))

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# The Marketplace's category list (vsce refuses others)
CATEGORIES = {"Azure", "Data Science", "Debuggers", "Education", "Extension Packs", "Formatters", "Keymaps",
              "Language Packs", "Linters", "Machine Learning", "Notebooks", "Programming Languages", "SCM Providers",
              "Snippets", "Testing", "Themes", "Visualization", "AI", "Chat", "Other"}
SHIPPED = {"extension/package.json", "extension/readme.md", "extension/LICENSE.txt", "extension/icon.png",
           "extension/language-configuration.json", "extension/syntaxes/audit.tmLanguage.json",
           "extension/dist/extension.js", "extension/dist/THIRD_PARTY_NOTICES.txt"}


def test_manifest_has_what_vsce_and_open_vsx_require():
    m = MANIFEST
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]*", m["name"]) and re.fullmatch(r"[a-z0-9][a-z0-9-]*", m["publisher"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", m["version"])
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert m["version"] == project["version"]  # one version for the tool and its extension
    assert m["license"] == project["license"] == "Apache-2.0"
    assert m["displayName"] and len(m["description"]) > 40
    assert re.fullmatch(r"\^\d+\.\d+\.\d+", m["engines"]["vscode"])
    assert m["categories"] and set(m["categories"]) <= CATEGORIES
    assert m["repository"]["url"].startswith("https://") and m["repository"]["type"] == "git"
    assert m["activationEvents"] == ["onLanguage:audit"]
    assert not m.get("dependencies"), "the client is bundled: nothing may be needed from node_modules at run time"
    assert m["main"] == "./dist/extension.js" and "bundle" in m["scripts"]["vscode:prepublish"]


def test_license_readme_and_icon_are_there():
    text = (EXT / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    readme = (EXT / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# ") and "pip install 'scoreaudit[lsp]'" in readme and "scoreaudit.server.command" in readme
    # vsce rewrites relative links against the repository; the README has none to break
    assert not re.search(r"\]\((?!https?://)[^)]+\)", readme)
    from PIL import Image

    with Image.open(EXT / MANIFEST["icon"]) as icon:
        assert icon.format == "PNG" and icon.size == (128, 128)


def test_the_icon_is_the_committed_scripts_drawing(tmp_path):
    out = tmp_path / "icon.png"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_vscode_icon.py"), str(out)], check=True,
                   capture_output=True, timeout=120)
    assert out.read_bytes() == (EXT / "icon.png").read_bytes(), "run scripts/make_vscode_icon.py and commit icon.png"


def test_vscodeignore_ships_only_the_runtime_files():
    lines = [ln.strip() for ln in (EXT / ".vscodeignore").read_text().splitlines() if ln.strip() and ln[0] != "#"]
    assert lines[0] == "**"  # everything is left out but what is named
    kept = {ln[1:] for ln in lines[1:]}
    assert kept == {p.removeprefix("extension/") for p in SHIPPED} - {"readme.md", "LICENSE.txt"} | {"README.md", "LICENSE"}
    for p in kept - {"dist/extension.js", "dist/THIRD_PARTY_NOTICES.txt"}:
        assert (EXT / p).is_file(), p


def _node_modules() -> Path | None:
    """node_modules holding what packaging needs: editors/vscode's own, or the one vsce is installed in."""
    vsce = shutil.which("vsce")
    candidates = [EXT / "node_modules"] + ([Path(vsce).resolve().parents[2]] if vsce else [])
    for c in candidates:
        if (c / "esbuild").is_dir() and (c / "vscode-languageclient").is_dir():
            return c
    return None


NODE_BUILTINS = {"assert", "buffer", "child_process", "crypto", "events", "fs", "net", "os", "path", "stream",
                 "string_decoder", "tty", "url", "util", "zlib", "http", "https", "readline", "worker_threads"}


@pytest.mark.skipif(shutil.which("vsce") is None or shutil.which("node") is None, reason="vsce or node not on PATH")
def test_vsce_packages_without_warnings(tmp_path):
    modules = _node_modules()
    if modules is None:
        pytest.skip("esbuild and vscode-languageclient are not installed beside vsce (npm install in editors/vscode)")
    work = tmp_path / "ext"
    shutil.copytree(EXT, work, ignore=shutil.ignore_patterns("node_modules", "dist", "*.vsix"))
    (work / "node_modules").symlink_to(modules)
    p = subprocess.run(["vsce", "package", "--out", str(tmp_path / "x.vsix")], cwd=work, capture_output=True,
                       text=True, timeout=600)
    output = p.stdout + p.stderr
    assert p.returncode == 0, output
    assert "WARNING" not in output and "warning" not in output.lower().replace("no warnings", ""), output
    with zipfile.ZipFile(tmp_path / "x.vsix") as z:
        names = {n for n in z.namelist() if n.startswith("extension/")}
        assert names == SHIPPED, names ^ SHIPPED
        client = z.read("extension/dist/extension.js").decode("utf-8")
        notices = z.read("extension/dist/THIRD_PARTY_NOTICES.txt").decode("utf-8")
    required = set(re.findall(r"""require\(["']([^"']+)["']\)""", client))
    assert "vscode" in required
    assert {r.removeprefix("node:") for r in required} - {"vscode"} <= NODE_BUILTINS, required
    assert "vscode-languageclient" in notices and "MIT" in notices
    # the unpacked .vsix loads in Node with no node_modules anywhere (`vscode` is the editor's: stubbed)
    with zipfile.ZipFile(tmp_path / "x.vsix") as z:
        z.extractall(tmp_path / "unpacked")
    (tmp_path / "load.js").write_text(LOAD_JS)
    p = subprocess.run(["node", str(tmp_path / "load.js"), str(tmp_path / "unpacked" / "extension" / "dist" /
                                                              "extension.js")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.split() == ["function", "function"], p.stdout + p.stderr


LOAD_JS = """
const Module = require('module');
const load = Module._load;
const stub = new Proxy({}, { get: (t, k) => (k in t ? t[k] : function Stub() {}) });
Module._load = function (request) { return request === 'vscode' ? stub : load.apply(this, arguments); };
const ext = require(process.argv[2]);
console.log(typeof ext.activate, typeof ext.deactivate);
"""
