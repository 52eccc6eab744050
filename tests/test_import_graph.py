"""The package's import graph has no cycle.

Every ``import`` statement of every module counts: at module top, inside functions and
under ``TYPE_CHECKING``, so a cycle cannot hide behind a function-local import (which is
how ``ops/`` used to dodge one).  Importing ``a.b.c`` from outside package ``a.b`` also
runs ``a.b``'s ``__init__``, so that counts as an import of ``a.b`` as well: a package whose
``__init__`` imports a module that imports the package back is a cycle, whichever module
Python happens to load first.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "executorch_espnn"


@dataclass(frozen=True)
class Edge:
    target: str
    where: str  # "ops/conv.py:12"


def _modules(pkg: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(pkg.rglob("*.py")):
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _ancestors(name: str) -> Iterator[str]:
    parts = name.split(".")
    for k in range(1, len(parts)):
        yield ".".join(parts[:k])


def _imports(mod: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import statement of ``mod`` naming a package module."""
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            candidates = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                src = ".".join([*base, node.module] if node.module else base)
            else:
                src = node.module or ""
            # "from a import b" imports module a.b when there is one, else a name of a
            candidates = [f"{src}.{a.name}" if f"{src}.{a.name}" in modules else src for a in node.names]
        else:
            continue
        for name in candidates:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name:
                yield name, node.lineno


def import_graph(pkg: Path) -> dict[str, dict[str, Edge]]:
    """Module -> {imported module: the first statement importing it}."""
    modules = _modules(pkg)
    graph: dict[str, dict[str, Edge]] = {}
    for mod, path in modules.items():
        edges: dict[str, Edge] = {}
        own = {mod, *_ancestors(mod)}
        for target, line in _imports(mod, path, modules):
            where = f"{path.relative_to(pkg).as_posix()}:{line}"
            # the target itself, and each package __init__ it makes Python run first (the
            # packages of ``mod`` itself are running already: only an import naming one counts)
            if target != mod:
                edges.setdefault(target, Edge(target, where))
            for t in _ancestors(target):
                if t not in own:
                    edges.setdefault(t, Edge(t, where))
        graph[mod] = edges
    return graph


def find_cycle(graph: dict[str, dict[str, Edge]]) -> list[tuple[str, Edge]] | None:
    """One cycle as [(module, its import of the next module), ...], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[tuple[str, Edge]] = []

    def visit(mod: str) -> list[tuple[str, Edge]] | None:
        state[mod] = 1
        for target, edge in sorted(graph[mod].items()):
            if state.get(target) == 1:
                start = next(i for i, (m, _) in enumerate(path) if m == target) if path and any(
                    m == target for m, _ in path) else len(path)
                return [*path[start:], (mod, edge)]
            if target not in state:
                path.append((mod, edge))
                found = visit(target)
                if found:
                    return found
                path.pop()
        state[mod] = 2
        return None

    for mod in sorted(graph):
        if mod not in state:
            found = visit(mod)
            if found:
                return found
    return None


def describe(cycle: list[tuple[str, Edge]]) -> str:
    steps = "\n".join(f"  {mod} imports {edge.target} ({edge.where})" for mod, edge in cycle)
    return (
        f"import cycle:\n{steps}\n"
        "move the names both sides need into a module below both, instead of hiding the import "
        "inside a function"
    )


def test_package_import_graph_is_acyclic() -> None:
    cycle = find_cycle(import_graph(PACKAGE))
    assert cycle is None, describe(cycle)


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root / "pkg"


@pytest.mark.parametrize(
    "files, expected",
    [
        # a function-local import still closes the cycle
        ({"pkg/__init__.py": "", "pkg/a.py": "from .b import f\n",
          "pkg/b.py": "def f():\n    from .a import g\n"},
         ["pkg.a imports pkg.b (a.py:1)", "pkg.b imports pkg.a (b.py:2)"]),
        # so does one under TYPE_CHECKING
        ({"pkg/__init__.py": "", "pkg/a.py": "from .b import f\n",
          "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import g\n"},
         ["pkg.a imports pkg.b (a.py:1)", "pkg.b imports pkg.a (b.py:3)"]),
        # importing pkg.sub.m from outside runs pkg.sub's __init__, which imports back
        ({"pkg/__init__.py": "", "pkg/x.py": "def f(): pass\n",
          "pkg/sub/__init__.py": "from ..x import f\n", "pkg/sub/m.py": "",
          "pkg/y.py": "from .sub.m import g\n",
          "pkg/z.py": ""},
         None),
        ({"pkg/__init__.py": "", "pkg/x.py": "from .sub.m import g\n",
          "pkg/sub/__init__.py": "from ..x import f\n", "pkg/sub/m.py": ""},
         ["pkg.sub imports pkg.x (sub/__init__.py:1)", "pkg.x imports pkg.sub (x.py:1)"]),
        # a module importing a name from its own package, whose __init__ imports that module
        ({"pkg/__init__.py": "from .a import f\nX = 1\n", "pkg/a.py": "from . import X\ndef f(): pass\n"},
         ["pkg imports pkg.a (__init__.py:1)", "pkg.a imports pkg (a.py:1)"]),
        # a package __init__ importing its own modules, which import each other downwards only
        ({"pkg/__init__.py": "from . import a, b\n", "pkg/a.py": "from .b import f\n",
          "pkg/b.py": "def f(): pass\n"},
         None),
    ],
)
def test_cycle_finder(tmp_path: Path, files: dict[str, str], expected: list[str] | None) -> None:
    cycle = find_cycle(import_graph(_write(tmp_path, files)))
    if expected is None:
        assert cycle is None, describe(cycle)
        return
    assert cycle is not None
    text = describe(cycle)
    for step in expected:
        assert step in text, text
    assert "move the names both sides need into a module below both" in text
