"""The package, the builder and the scripts stay lint-clean (ruff) and fully typed (mypy
--strict), as the style asks; run here so a regression fails CI instead of waiting for someone to
run the tools.  And nothing but PlatformIO's entry, builder/main.py, puts builder/ on sys.path."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, check=False)


def test_ruff_clean() -> None:
    proc = _run(["ruff", "check", "--no-cache", "executorch_espnn", "builder", "scripts", "devkit", "benchmarks",
                 "tests"], ROOT)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]


@pytest.mark.slow
def test_mypy_strict_clean(tmp_path: Path) -> None:
    # pyproject's [tool.mypy] names the package, builder/ and scripts/ and strict mode; the cache goes to tmp_path so
    # the checkout stays clean
    proc = _run(["mypy", "--cache-dir", str(tmp_path / "mypy-cache")], ROOT)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "Success" in proc.stdout


def _sys_path_edits(tree: ast.AST) -> list[ast.Call]:
    """Calls of sys.path.insert/append/extend (and assignments to sys.path are edits too)."""
    found: list[ast.Call] = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("insert", "append", "extend")
                and ast.unparse(node.func.value) == "sys.path"):
            found.append(node)
    return found


def _mentions_builder(node: ast.AST, assigned: dict[str, str]) -> bool:
    """The call's arguments name a "builder" path, directly or through a variable."""
    text = ast.unparse(node)
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return "builder" in text or any("builder" in assigned.get(n, "") for n in names)


def builder_path_edits(path: Path) -> list[int]:
    """Lines of `path` that put a builder/ folder on sys.path."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assigned = {t.id: ast.unparse(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for t in node.targets if isinstance(t, ast.Name)}
    return [c.lineno for c in _sys_path_edits(tree)
            if any(_mentions_builder(a, assigned) for a in c.args)]


def test_only_builder_main_puts_builder_on_sys_path() -> None:
    """The package, the scripts, devkit and the tests import the package; builder modules that
    tests read are the namespace package `builder.espnn_pio` of the checkout."""
    skip = {"_data", ".venv", "__pycache__", ".git"}
    files = [p for p in ROOT.rglob("*.py") if not skip & set(p.relative_to(ROOT).parts)]
    found = {str(p.relative_to(ROOT)): lines for p in files if (lines := builder_path_edits(p))}
    assert list(found) == ["builder/main.py"] and len(found["builder/main.py"]) == 1, found


def test_the_sys_path_check_sees_the_usual_spellings(tmp_path: Path) -> None:
    f = tmp_path / "x.py"
    f.write_text("import sys\nfrom pathlib import Path\nROOT = Path('.')\n"
                 "sys.path.insert(0, str(ROOT / 'builder'))\n"
                 "b = str(ROOT / 'builder')\nsys.path.append(b)\n"
                 "sys.path.insert(0, str(ROOT))\n")
    assert builder_path_edits(f) == [4, 6]
