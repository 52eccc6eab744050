"""The import and #include rules of docs/architecture.md ("What may import what")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "executorch_espnn"
BUILDER = ROOT / "builder" / "espnn_pio"
COMPONENT = ROOT / "espnn_component"
# builder modules SCons imports (every one of them now: the child processes run the package)
SCONS_SIDE = ("scons_steps", "kconfig_glue", "esp_frameworks", "host_build", "host_source", "checkout",
              "source_step", "runtime_build", "partition_step")
HEAVY = ("torch", "executorch", "numpy", "kconfiglib", "jinja2", "executorch_espnn")
# the package modules SCons imports at the top (builder/main.py chose the package first): the
# standard library only, so a no-op build imports no torch, numpy or jinja2
FIRMWARE = PACKAGE / "firmware"
SCONS_SIDE_FIRMWARE = ("options", "job", "model_info", "render", "step", "kernels", "kernel_driver",
                       "summary", "sources", "esp_nn_sources")
LIGHT = ("executorch_espnn.errors", "executorch_espnn.resources",
         *(f"executorch_espnn.firmware.{m}" for m in SCONS_SIDE_FIRMWARE))


def _heavy(name: str) -> bool:
    """A heavy import: not the package itself (its __init__ is cheap), not a LIGHT module nor a
    name in one."""
    return (_under(name, HEAVY) and name not in ("executorch_espnn", "executorch_espnn.firmware")
            and not _under(name, LIGHT))
LOWERING = ("quantizer", "graph", "layout", "planner", "payload_builder", "ops", "units", "partitioner",
            "backend", "lowering")
TOOLS = ("report", "host", "cli", "modelfile", "selective", "selftest", "accuracy", "kconfig", "testing")
LEAVES = ("payload", "reference", "quant_math", "pte", "rendering", "decisions", "errors", "version", "compat", "resources")


def _imports(path: Path, *, top_level_only: bool = False) -> set[str]:
    """Absolute names of every module ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    package = parts if path.name == "__init__.py" else parts[:-1]
    if package and package[-1] == "__init__":
        package = package[:-1]
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                name = ".".join([*base, *([node.module] if node.module else [])])
                out.add(name)
                out.update(f"{name}.{a.name}" for a in node.names)  # `from . import x`
            elif node.module:
                out.add(node.module)
    return out


def _under(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


def _py(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def test_the_package_imports_no_builder_test_or_dev_tool() -> None:
    bad = {str(p.relative_to(ROOT)): sorted(n for n in _imports(p)
                                            if _under(n, ("espnn_pio", "tests", "devkit", "benchmarks", "fuzz", "emulated")))
           for p in _py(PACKAGE)}
    assert {k: v for k, v in bad.items() if v} == {}


def test_nothing_but_the_tests_imports_tests() -> None:
    folders = (PACKAGE, ROOT / "builder", ROOT / "devkit", ROOT / "benchmarks", ROOT / "fuzz", ROOT / "emulated")
    bad = {str(p.relative_to(ROOT)) for f in folders for p in _py(f) if any(_under(n, ("tests",)) for n in _imports(p))}
    assert bad == set()


@pytest.mark.parametrize("module", SCONS_SIDE)
def test_scons_side_builder_modules_import_nothing_heavy_at_the_top(module: str) -> None:
    top = _imports(BUILDER / f"{module}.py", top_level_only=True)
    assert sorted(n for n in top if _heavy(n)) == []


@pytest.mark.parametrize("module", SCONS_SIDE_FIRMWARE)
def test_the_firmware_modules_scons_imports_import_only_light_ones_at_the_top(module: str) -> None:
    top = _imports(FIRMWARE / f"{module}.py", top_level_only=True)
    assert sorted(n for n in top if _heavy(n)) == []


def test_the_platform_class_imports_only_the_standard_library_and_platformio() -> None:
    for path in (ROOT / "platform.py", BUILDER / "pio_platform.py"):
        names = {n.split(".")[0] for n in _imports(path)}
        assert names <= {"__future__", "os", "sys", "json", "typing", "importlib", "sysconfig", "platformio"}, path


def test_only_pte_py_deserializes_programs() -> None:
    folders = (PACKAGE, ROOT / "builder", ROOT / "devkit", ROOT / "benchmarks", ROOT / "fuzz", ROOT / "emulated")
    users = {str(p.relative_to(ROOT)) for f in folders for p in _py(f)
             if "deserialize_pte_binary" in p.read_text(encoding="utf-8")}
    assert users == {"executorch_espnn/pte.py"}


def test_the_package_leaves_import_no_lowering_and_no_tool() -> None:
    forbidden = tuple(f"executorch_espnn.{m}" for m in (*LOWERING, *TOOLS))
    bad = {}
    for leaf in LEAVES:
        target = PACKAGE / leaf
        for p in (_py(target) if target.is_dir() else [target.with_suffix(".py")]):
            names = sorted(n for n in _imports(p) if _under(n, forbidden))
            if names:
                bad[str(p.relative_to(ROOT))] = names
    assert bad == {}


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


def _includes(folder: Path) -> dict[str, set[str]]:
    return {str(p.relative_to(ROOT)): set(_INCLUDE.findall(p.read_text(encoding="utf-8", errors="replace")))
            for p in sorted(folder.rglob("*")) if p.suffix in (".c", ".h", ".cpp", ".hpp")}


def _headers_of(*folders: str) -> set[str]:
    return {p.name for f in folders for p in (COMPONENT / f).rglob("*") if p.suffix in (".h", ".hpp")}


def test_the_engine_includes_nothing_of_its_callers() -> None:
    callers = _headers_of("adapter", "runtime", "memory", "pal", "include")
    for path, names in _includes(COMPONENT / "engine").items():
        bad = sorted(n for n in names if n.startswith("executorch/") or Path(n).name in callers)
        assert bad == [], path


def test_the_memory_policy_includes_no_executorch_and_no_engine_or_adapter() -> None:
    above = _headers_of("engine", "adapter", "runtime")
    for path, names in _includes(COMPONENT / "memory").items():
        bad = sorted(n for n in names if n.startswith("executorch/") or Path(n).name in above)
        assert bad == [], path


def test_host_espnn_includes_only_itself_and_the_c_library() -> None:
    own = _headers_of("host_espnn")
    for path, names in _includes(COMPONENT / "host_espnn").items():
        # the scratch guard test mode reports on stderr (host test builds only)
        extra = {"stdio.h"} if Path(path).name == "scratch_guard.c" else set()
        assert {n for n in names if Path(n).name not in own} <= {"stddef.h", "stdint.h", "stdlib.h", "string.h",
                                                                   "limits.h", "stdbool.h", *extra}, path


def test_the_payload_imports_no_reference_kernel() -> None:
    """The kernels sit beside the checks (``payload/families/<family>/``) but stay above them:
    only ``reference/`` and the kernels themselves import a kernel, so the reader, the writer
    and the checks never load one (as when the kernels lived in ``reference/``)."""
    families = PACKAGE / "payload" / "families"
    kernels = {p for p in _py(families) if p.name == "reference.py" or p.name.startswith("kernel_")}
    kernel_names = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in kernels}
    bad = {str(p.relative_to(ROOT)): sorted(n for n in _imports(p)
                                            if n in kernel_names or _under(n, ("executorch_espnn.reference",)))
           for p in _py(PACKAGE / "payload") if p not in kernels}
    assert {k: v for k, v in bad.items() if v} == {}
