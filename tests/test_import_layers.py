"""The import graph of `src/scoreaudit` flows one way, as `spec/architecture.md` lists the layers.

Every `import` and `from ... import` is read with `ast` (those inside
functions too: a lazy import is still a dependency). A module may import its
own layer and the layers listed above it in the architecture's diagram, never
a layer below; no module may reach itself again through its imports; the
first line of the diagram (the bottom layer) imports nothing of the project.
The layer list is read from the spec, so the document and this test cannot
drift apart.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "scoreaudit"
SPEC = ROOT / "spec" / "architecture.md"


def layers() -> list[list[str]]:
    """The diagram's lines, top (imported by everything) first: the names each line starts with."""
    text = SPEC.read_text(encoding="utf-8")
    block = re.search(r"```\n(.*?)```", text, re.S).group(1)
    out = []
    for line in block.splitlines():
        if not line or line[0].isspace():
            continue  # a continuation of the line above
        head = re.match(r"([a-z_]+(?:/|\.py)?(?:, [a-z_]+(?:/|\.py)?)*)", line).group(1)
        out.append([n.strip().removesuffix("/").removesuffix(".py") for n in head.split(",")])
    return out


def modules(pkg: Path = PKG) -> dict[str, Path]:
    out = {}
    for p in sorted(pkg.rglob("*.py")):
        parts = p.relative_to(pkg.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def imports(mods: dict[str, Path]) -> dict[str, set[tuple[str, int]]]:
    """module -> {(imported project module, line)}; `from pkg import mod` counts as pkg.mod."""
    if mods == modules():
        return _project_imports()
    return _imports(mods)


@lru_cache(maxsize=1)
def _project_imports() -> dict[str, set[tuple[str, int]]]:
    return _imports(modules())


def _imports(mods: dict[str, Path]) -> dict[str, set[tuple[str, int]]]:
    graph: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_pkg else name.split(".")[:-1]
                    here = here[: len(here) - (node.level - 1)]
                    base = ".".join(here + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                if t == "scoreaudit" or t.startswith("scoreaudit."):
                    while t not in mods:  # `import scoreaudit.x.y` of something not a module file
                        t = t.rsplit(".", 1)[0]
                    if t != name:
                        graph[name].add((t, node.lineno))
    return graph


def layer_of(module: str, table: list[list[str]]) -> int | None:
    parts = module.split(".")
    if len(parts) == 1:
        return 0  # the package's own __init__
    for i, names in enumerate(table):
        if parts[1] in names:
            return i
    return None


def test_every_module_belongs_to_a_listed_layer():
    table = layers()
    assert len(table) >= 8, table
    missing = sorted(m for m in modules() if layer_of(m, table) is None)
    assert not missing, f"add these to the diagram in spec/architecture.md: {missing}"


def upward(mods: dict[str, Path], table: list[list[str]]) -> list[str]:
    wrong = []
    for mod, targets in imports(mods).items():
        here = layer_of(mod, table)
        for target, line in sorted(targets):
            there = layer_of(target, table)
            if there is not None and here is not None and there > here:
                wrong.append(f"{mods[mod]}:{line}: {mod} imports {target} "
                             f"(layer '{table[there][0]}' is below '{table[here][0]}')")
    return wrong


def test_no_upward_imports():
    wrong = upward(modules(), layers())
    assert not wrong, "\n".join(wrong)


def test_bottom_layer_imports_nothing_of_the_project():
    table, mods = layers(), modules()
    bottom = set(table[0])
    wrong = [f"{mod} imports {t}" for mod, targets in imports(mods).items()
             if len(mod.split(".")) > 1 and mod.split(".")[1] in bottom for t, _ in targets]
    assert not wrong, wrong


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_cycles():
    graph = {m: {t for t, _ in ts} for m, ts in imports(modules()).items()}
    found = cycles(graph)
    assert not found, "modules that import each other (directly or through others):\n" + "\n".join(
        " <-> ".join(c) for c in found)


@pytest.mark.parametrize("graph,want", [
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
])
def test_cycle_finder_finds_planted_cycles(graph, want):
    assert cycles(graph) == want


def test_upward_import_is_caught(tmp_path):
    """A planted upward import (grammar → compiler, as the parser once had) fails the check."""
    fake = tmp_path / "src" / "scoreaudit"
    (fake / "grammar").mkdir(parents=True)
    (fake / "compiler").mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "grammar" / "__init__.py").write_text("")
    (fake / "compiler" / "__init__.py").write_text("")
    (fake / "compiler" / "gc.py").write_text("X = 1\n")
    (fake / "grammar" / "parser.py").write_text("def f():\n    from ..compiler.gc import X\n")
    mods = modules(fake)
    assert ("scoreaudit.compiler.gc", 2) in imports(mods)["scoreaudit.grammar.parser"]
    assert len(upward(mods, layers())) == 1
    (fake / "grammar" / "parser.py").write_text("import scoreaudit.compiler\n")
    assert len(upward(mods, layers())) == 1

