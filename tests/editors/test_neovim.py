"""editors/neovim/scoreaudit.lua in a real headless Neovim (issue 30), when `nvim` is installed.

The configuration must work from Neovim 0.7 (Debian's) on: the test opens a
spec with a misspelled scorer and waits for the server's diagnostic. The
server is started by Neovim itself (stdio) and stops with it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls", reason="the lsp extra is not installed")
NVIM = shutil.which("nvim")
pytestmark = pytest.mark.skipif(NVIM is None, reason="nvim is not installed")

ROOT = Path(__file__).resolve().parents[2]
PROBE = ('lua vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 100); '
         'local f = io.open("out.txt", "w"); f:write(vim.bo.filetype .. "\\n"); '
         'for _, x in ipairs(vim.diagnostic.get(0)) do f:write((x.code or "") .. " " .. x.lnum .. ":" .. x.col .. "\\n") end; '
         'f:close()')


def test_the_shipped_configuration_gets_the_servers_diagnostics(tmp_path):
    init = tmp_path / "init.lua"
    server = [str(Path(sys.executable).with_name("scoreaudit")), "lsp"]
    init.write_text(f'vim.g.scoreaudit_cmd = {{ "{server[0]}", "lsp" }}\n'
                    f'dofile("{ROOT / "editors" / "neovim" / "scoreaudit.lua"}")\n', encoding="utf-8")
    (tmp_path / "x.audit").write_text('audit "t" { version: 1 }\nscorer a = sharpnes()\n', encoding="utf-8")
    subprocess.run([NVIM, "--headless", "-u", str(init), "-c", PROBE, "-c", "qa!", "x.audit"], cwd=tmp_path,
                   timeout=90, check=True, capture_output=True)
    lines = (tmp_path / "out.txt").read_text().splitlines()
    assert lines[0] == "audit"  # the filetype rule
    assert "E0202 1:11" in lines[1:], lines  # unknown scorer, at line 2 col 12 (0-based in Neovim)
