"""The light path stays light: `check`, `fmt`, `describe` and the language server import no dataframe stack.

Each runs in a fresh interpreter (a subprocess: this test process has imported
everything already) and reports the modules loaded when it finished. pandas,
polars and pyarrow read tables and write bundles; a check of a spec whose
manifests do not exist yet (examples/skin_tone.audit) reads neither. The wall
time is bench/imports.py's (it depends on the machine's load).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATAFRAMES = ("pandas", "polars", "pyarrow")

CLI = """
import json, sys
from scoreaudit.cli import main
try:
    rc = main(sys.argv[1:])
except SystemExit as e:
    rc = e.code
print("\\nMODULES=" + json.dumps(sorted({m.split('.')[0] for m in sys.modules})))
sys.exit(rc)
"""

LSP = """
import json, sys
from pathlib import Path
from scoreaudit.lsp import server  # what `scoreaudit lsp` imports at start
from scoreaudit.lsp.features import Document
p = Path(sys.argv[1])
diags = Document(p.read_text(encoding="utf-8"), str(p)).diagnostics()  # the first diagnostics after didOpen
print("\\nMODULES=" + json.dumps(sorted({m.split('.')[0] for m in sys.modules})))
"""


def modules_after(code: str, *args: str, hub: Path | None = None) -> tuple[int, set[str], str]:
    env = {"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "NO_COLOR": "1", "PYTHONPATH": str(ROOT / "src")}
    if hub is not None:
        env["HF_HUB_CACHE"] = str(hub)
    p = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env=env)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("MODULES=")), None)
    assert line is not None, p.stdout + p.stderr
    return p.returncode, set(json.loads(line[len("MODULES="):])), p.stdout + p.stderr


@pytest.mark.parametrize("args", [("check", "examples/skin_tone.audit"),
                                  ("fmt", "--check", "examples/skin_tone.audit"),
                                  ("describe", "lab_shift"),
                                  ("describe", "fidelity_index")], ids=" ".join)
def test_light_commands_import_no_dataframe_stack(args):
    rc, mods, out = modules_after(CLI, *args)
    assert rc == 0, out
    assert not mods & set(DATAFRAMES), (sorted(mods & set(DATAFRAMES)), out[-2000:])


def test_check_output_is_unchanged_by_the_light_path():
    """The check still checks: skin_tone.audit's manifests do not exist, and it reports no error."""
    rc, mods, out = modules_after(CLI, "check", "examples/skin_tone.audit", "--format", "json")
    assert rc == 0, out
    assert "scoreaudit" in mods


def test_language_server_start_and_first_diagnostics_import_no_dataframe_stack():
    rc, mods, out = modules_after(LSP, str(ROOT / "examples" / "skin_tone.audit"))
    assert rc == 0, out
    assert "lsprotocol" in mods  # it did start the server's imports
    assert not mods & set(DATAFRAMES), (sorted(mods & set(DATAFRAMES)), out[-2000:])


def test_check_of_a_manifest_still_reads_it(tmp_path):
    """Deferring the loader's import must not skip the manifests that exist: a misspelled column is E0702."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "m.csv").write_text("id,path,tone\na,a.png,1\n", encoding="utf-8")
    (tmp_path / "a.audit").write_text('''audit "t" { version: 1 seed: 1 }
scorer p = planted()
arm real = images("data", manifest: "data/m.csv", kind: real, strata: tonee)
operator light = lab_shift(channel: L, region: skin) doses -5, 0, 5
region face = face()
region skin = skin(within: face)
hypothesis H1 "x" { fidelity_index(light) > 0 on real }
''', encoding="utf-8")
    rc, mods, out = modules_after(CLI, "check", str(tmp_path / "a.audit"))
    assert "E0702" in out, out
    assert "polars" in mods  # it read the manifest


def test_check_looks_up_weights_without_huggingface_hub_when_the_cache_lacks_the_repo(tmp_path):
    """An empty hub cache: nothing to find, so huggingface_hub (~0.2 s of imports) is not imported; the
    missing weights are still reported."""
    rc, mods, out = modules_after(CLI, "check", "examples/skin_tone.audit", hub=tmp_path)
    assert rc == 0, out
    assert "huggingface_hub" not in mods
    assert "weights" in out.lower()  # the readiness warning names what is missing


def test_a_cached_file_is_still_found_through_huggingface_hub(tmp_path, monkeypatch):
    pytest.importorskip("huggingface_hub")
    from scoreaudit.plugins.scorers.model_weights import find_in_hf_cache

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    repo = tmp_path / "models--org--name"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("abc123", encoding="utf-8")
    (repo / "snapshots" / "abc123").mkdir(parents=True)
    (repo / "snapshots" / "abc123" / "w.bin").write_bytes(b"x")
    assert find_in_hf_cache("org/name", "w.bin") == repo / "snapshots" / "abc123" / "w.bin"
    assert find_in_hf_cache("org/other", "w.bin") is None
