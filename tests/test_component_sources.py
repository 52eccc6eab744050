"""The one reader of the component's source lists (executorch_espnn/component_sources.py):
what it returns is what CMake sets, and no C file of the engine is outside every list."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from executorch_espnn import component_sources
from executorch_espnn.errors import ComponentSourcesError
from executorch_espnn.runtime_sources import parse_cmake_sets
from tests.component_helpers import CDIR, COMPONENT, cmake


@pytest.fixture(scope="module")
def lists() -> component_sources.ComponentSources:
    return component_sources.load(COMPONENT)


def test_lists_are_what_cmake_sets(lists: component_sources.ComponentSources,
                                   tmp_path: Path) -> None:
    ours = lists.by_name()
    out = tmp_path / "lists.txt"
    r = subprocess.run([cmake(), f"-DCOMPONENT_DIR={COMPONENT}", f"-DNAMES={';'.join(ours)}",
                        f"-DOUT={out}", "-P", str(CDIR / "component_lists.cmake")],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    theirs: dict[str, tuple[str, ...]] = {}
    for line in out.read_text().splitlines():
        name, _, value = line.partition("=")
        # CMake keeps the lists' "cmake/.." steps; the reader collapses them
        theirs[name] = tuple(os.path.normpath(v) if os.path.isabs(v) else v
                             for v in value.split(";") if v)
    assert theirs == ours


def test_every_engine_c_file_is_in_a_list(lists: component_sources.ComponentSources) -> None:
    # a new op under engine/ops (or a helper under engine/src) that is in no list would build
    # nowhere: every consumer compiles these lists, none globs the folders
    listed = {*lists.engine_srcs, *lists.run_srcs, *lists.host_kernel_srcs}
    on_disk = {p for d in ("engine/src", "engine/ops", "engine/tools", "host_espnn/src")
               for p in (COMPONENT / d).glob("*.c")}
    assert sorted(str(p) for p in on_disk - listed) == []
    assert sorted(str(p) for p in listed - on_disk) == []


def test_lists_name_existing_files(lists: component_sources.ComponentSources) -> None:
    files = [*lists.engine_srcs, *lists.host_kernel_srcs, *lists.run_srcs, *lists.adapter_sources,
             *lists.model_sources, *lists.mem_idf_sources, *lists.mem_host_sources,
             *lists.pal_idf_sources, *lists.pal_host_sources, *lists.pal_baremetal_sources]
    assert [str(p) for p in files if not p.is_file()] == []
    assert all(p.is_relative_to(COMPONENT) for p in files)
    assert lists.relative(lists.pal_host_sources) == ["pal/espnn_pal_host.cpp"]


def test_references_substitute_what_is_set_above() -> None:
    text = "set(D ${CMAKE_CURRENT_LIST_DIR}/x)\nset(L ${D}/a.c ${D}/b.c plain)\n"
    values = parse_cmake_sets(text, "f.cmake", variables={"CMAKE_CURRENT_LIST_DIR": "/c"},
                              error=ComponentSourcesError)
    assert values == {"D": ("/c/x",), "L": ("/c/x/a.c", "/c/x/b.c", "plain")}


@pytest.mark.parametrize(("text", "message"), [
    ("set(L ${LATER}/a.c)\nset(LATER /x)\n", r"uses \$\{LATER\}, which is not set above it"),
    ('set(L "${CMAKE_CURRENT_LIST_DIR}/a.c")\n', r"use plain words"),
    ("if(X)\nset(L a)\nendif()\n", r"only set\(NAME word \.\.\.\) commands"),
])
def test_lists_stay_plain(text: str, message: str) -> None:
    with pytest.raises(ComponentSourcesError, match=message):
        parse_cmake_sets(text, "f.cmake", variables={"CMAKE_CURRENT_LIST_DIR": "/c"},
                         error=ComponentSourcesError)


def test_unknown_list_is_refused(tmp_path: Path) -> None:
    for rel in component_sources.LIST_FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text((COMPONENT / rel).read_text())
    (tmp_path / "pal" / "sources.cmake").write_text(
        (COMPONENT / "pal" / "sources.cmake").read_text() + "set(ESPNN_PAL_NEW_SOURCES a.cpp)\n")
    with pytest.raises(ComponentSourcesError, match=r"set unknown variables ESPNN_PAL_NEW_SOURCES"):
        component_sources.load(tmp_path)


def test_the_reader_needs_only_the_standard_library() -> None:
    """SCons (the Arduino build) imports it inside PlatformIO's Python: no torch, no numpy."""
    import sys

    code = ("import sys, executorch_espnn.component_sources as cs; cs.load(); "
            "heavy = {'torch', 'numpy', 'executorch', 'jinja2', 'yaml'} & set(sys.modules); "
            "print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_firmware_sources_have_file_names_of_their_own(
        lists: component_sources.ComponentSources) -> None:
    """Every source an ESP build compiles of the component has a file name no other one has:
    espressif32's espidf.py names the objects of sources outside the project and ESP-IDF (the
    installed platform's espnn_component) $BUILD_DIR/<file name>.o, so two of one name would
    share an object (ExecuTorch's sources go through files of their own instead,
    executorch_component.cmake)."""
    files = [*lists.adapter_sources, *lists.model_sources, *lists.mem_idf_sources,
             *lists.engine_srcs, *lists.pal_idf_sources]
    names = [Path(f).name for f in files]
    assert len(files) > 20 and len(set(names)) == len(names), sorted(names)
