"""The ESP-IDF component `executorch` (espnn_component/cmake/executorch_component.cmake: ExecuTorch's
runtime from a source tree, with one model's kernels and registration), checked without ESP-IDF.

- Offline, always: the test suite's stand-in of ESP-IDF (tests/component_c/fake_idf.cmake)
  processes a component folder whose CMakeLists sets the inputs and includes the file, as the
  PlatformIO builder's generated one and cmake/idf_project.cmake's do; the recorded registration
  is compared with the one list (read by runtime_sources, and by CMake itself) and the model's
  kernels; each bad input stops CMake with a message naming the fix.
- With EXECUTORCH_SOURCE_DIR and FLATBUFFERS_SOURCE_DIR (skipped otherwise, saying so): a real
  CMake project whose idf_component_register makes a static library compiles the component with
  the host compiler as ESP-IDF compiles C++ (gnu++2b, no exceptions, no RTTI): the schema headers
  through its custom command with the wheel's flatc, every listed source, the kernels.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from devkit import source_helpers as sh
from executorch_espnn import runtime_sources as rs
from tests.component_helpers import CDIR, COMPONENT, cmake

COMPONENT_CMAKE = COMPONENT / "cmake" / "executorch_component.cmake"
# CPU operators of the model the tests register: portable (aten, with an exception of the
# list's rule) and quantized
OPERATORS = ("aten::abs.out", "aten::_softmax.out", "quantized_decomposed::quantize_per_tensor.out")


def write_kernels(model: Path, operators: tuple[str, ...]) -> Path:
    """kernels.cmake + the registration for `operators`, by the builder's kernel driver, in a
    model folder as scripts/espnn_idf_model.py lays it out (model/kernels/, model/espnn_model/)."""
    out = model / "kernels"
    out.mkdir(parents=True)
    (model / "espnn_model").mkdir()
    (model / "espnn_model" / "model_pte.h").write_text("/* stand-in */\n")
    op = {"include_all_overloads": False, "is_root_operator": True, "is_used_for_training": True}
    sel = model / "in.yaml"
    sel.write_text(yaml.safe_dump({"operators": {name: dict(op) for name in operators},
                                   "et_kernel_metadata": {name: ["default"] for name in operators},
                                   "include_all_operators": False}))
    from executorch_espnn.firmware import kernel_driver as driver
    driver.write(sel, rs.default_list_file(), out)
    return out / "kernels.cmake"


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kernels.cmake + the registration for OPERATORS."""
    return write_kernels(tmp_path_factory.mktemp("model"), OPERATORS)


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Stand-in ExecuTorch and flatbuffers trees (every listed file, empty)."""
    root = tmp_path_factory.mktemp("trees")
    return (sh.executorch_tree(root / "et-snapshot"), sh.flatbuffers_tree(root / "flatbuffers"))


def component_folder(tmp: Path, **inputs: str) -> Path:
    """A folder named executorch whose CMakeLists sets `inputs` and includes the component file."""
    folder = tmp / "executorch"
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f'set({k} "{v}")' for k, v in inputs.items()]
    lines.append(f'include("{COMPONENT_CMAKE}")')
    (folder / "CMakeLists.txt").write_text("\n".join(lines) + "\n")
    return folder


def fake_idf(folder: Path, tmp: Path, *, early: bool = False, log_level: int | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    out = tmp / "record.txt"
    cmd = [cmake(), f"-DCOMPONENT_DIR={folder}", f"-DOUT={out}", f"-DBINARY_DIR={tmp / 'bin'}"]
    cmd += ["-DEARLY=ON"] if early else []
    cmd += [f"-DLOG_LEVEL={log_level}"] if log_level is not None else []
    return subprocess.run([*cmd, "-P", str(CDIR / "fake_idf.cmake")], capture_output=True,
                          text=True, env=env)


def recorded(tmp: Path) -> dict[str, list[list[str]]]:
    calls: dict[str, list[list[str]]] = {}
    for line in (tmp / "record.txt").read_text().splitlines():
        name, _, value = line.partition("=")
        calls.setdefault(name, []).append([v for v in value.split(";") if v])
    assert calls["DONE"] == [["1"]]
    return calls


def good_inputs(trees: tuple[Path, Path], kernels: Path) -> dict[str, str]:
    return {"EXECUTORCH_SOURCE_DIR": str(trees[0]), "FLATBUFFERS_SOURCE_DIR": str(trees[1]),
            "ESPNN_KERNELS_CMAKE": str(kernels), "EXECUTORCH_FLATC": str(rs.find_flatc())}


def test_registration_is_the_one_list_plus_the_models_kernels(
        tmp_path: Path, trees: tuple[Path, Path], kernels: Path) -> None:
    folder = component_folder(tmp_path, **good_inputs(trees, kernels))
    proc = fake_idf(folder, tmp_path)
    assert proc.returncode == 0, proc.stderr
    calls = recorded(tmp_path)
    lists = rs.load()
    et = trees[0].resolve()
    (srcs,) = calls["SRCS"]
    kernel_srcs = lists.kernel_sources(OPERATORS)
    assert "kernels/portable/cpu/op_softmax.cpp" in kernel_srcs  # the list's exception
    assert "kernels/quantized/cpu/op_quantize.cpp" in kernel_srcs
    bin_dir = tmp_path / "bin"
    want = [*lists.runtime_srcs, *kernel_srcs, *lists.kernel_support_srcs]
    assert srcs == [*units(bin_dir, et, want),
                    str(kernels.parent / "RegisterCodegenUnboxedKernels.cpp")]
    # public include dirs: the tree as <executorch/...> (a link, the tree is not named so), the
    # list's dirs, the generated schema headers, the flatbuffers headers
    (inc,) = calls["INCLUDE_DIRS"]
    assert inc == [str(bin_dir / "include"), *(str(et / d) for d in lists.include_dirs),
                   str(bin_dir / "gen"), str(trees[1].resolve() / "include")]
    assert (bin_dir / "include" / "executorch").resolve() == et
    assert calls["PRIV_INCLUDE_DIRS"] == [[str(kernels.parent)]]
    (defs,) = calls["DEFINITIONS"]
    assert defs == ["PUBLIC", *lists.public_defines, "PRIVATE", *lists.runtime_defines,
                    "ET_MIN_LOG_LEVEL=Info"]
    assert calls["OPTIONS"] == [["PRIVATE", "-w"]]
    assert calls["LINK"] == [["INTERFACE", "-u executorch_espnn_register_kernels"]]
    # MAX_KERNEL_NUM = the registration's kernel count, on the kernel registry only
    n = len(re.findall(r'Kernel\(\s*"', (kernels.parent / "RegisterCodegenUnboxedKernels.cpp").read_text()))
    assert n == len(OPERATORS)
    assert calls["SOURCE_PROPERTIES"] == [[*units(bin_dir, et, ["runtime/kernel/operator_registry.cpp"]),
                                           "PROPERTIES", "COMPILE_DEFINITIONS", f"MAX_KERNEL_NUM={n}"]]
    # the schema headers: flatc with the list's arguments in the tree's schema folder
    (custom,) = calls["CUSTOM_COMMAND"]
    gen = bin_dir / "gen" / lists.schema_include_subdir
    headers = [str(bin_dir / "gen" / h) for h in lists.schema_headers()]
    assert custom[: len(headers) + 1] == ["OUTPUT", *headers]
    command = custom[custom.index("COMMAND") + 1 : custom.index("WORKING_DIRECTORY")]
    assert command == [str(rs.find_flatc()), *lists.flatc_args, "-o", str(gen),
                       *(Path(s).name for s in lists.schema_srcs)]
    assert custom[custom.index("WORKING_DIRECTORY") + 1] == str(et / "schema")
    assert calls["DEPENDENCIES"] == [["__idf_executorch_espnn", "executorch_schema_headers"]]


def units(bin_dir: Path, et: Path, rels: list[str] | tuple[str, ...]) -> list[str]:
    """The files the component registers for sources `rels` of the tree `et`: one per source in
    its build folder, named after the source's whole path, that includes the source (checked
    here), so no two objects can share a name whatever the builder names them after."""
    out = []
    for rel in rels:
        unit = bin_dir / "src" / rel.replace("/", "__")
        assert f'#include "{et / rel}"' in unit.read_text().splitlines(), unit
        out.append(str(unit))
    return out


# portable and quantized kernels in files of one name: op_embedding.cpp (aten::embedding and
# quantized_decomposed::embedding_byte, which one model can use together) and op_add.cpp
SAME_NAME_OPERATORS = ("aten::embedding.out", "quantized_decomposed::embedding_byte.out")
BOTH_ADDS = ("kernels/portable/cpu/op_add.cpp", "kernels/quantized/cpu/op_add.cpp")


def test_kernels_of_one_file_name_get_objects_of_their_own(
        tmp_path: Path, trees: tuple[Path, Path]) -> None:
    """Both op_embedding.cpp (selected by the kernel driver) and both op_add.cpp: every file the
    component registers has a name of its own, so espressif32's espidf.py, which names the
    objects of sources outside the project $BUILD_DIR/<file name>.o, builds one object per
    source.  (The kernel driver itself refuses aten::add.out beside quantized_decomposed::add.out:
    ExecuTorch's codegen cannot register both, test_selective.py; the two op_add.cpp are added to
    its kernels.cmake here, as a hand-written one for idf.py could list them.)"""
    lists = rs.load()
    cmake_file = write_kernels(tmp_path / "model", SAME_NAME_OPERATORS)
    with cmake_file.open("a") as fp:
        fp.write(f"list(APPEND ESPNN_KERNEL_SRCS {' '.join(BOTH_ADDS)})\n")
    kernel_srcs = [*lists.kernel_sources(SAME_NAME_OPERATORS), *BOTH_ADDS]
    assert {"kernels/portable/cpu/op_embedding.cpp",
            "kernels/quantized/cpu/op_embedding.cpp"} <= set(kernel_srcs)
    folder = component_folder(tmp_path, **good_inputs(trees, cmake_file))
    proc = fake_idf(folder, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (srcs,) = recorded(tmp_path)["SRCS"]
    et = trees[0].resolve()
    want = [*lists.runtime_srcs, *kernel_srcs, *lists.kernel_support_srcs]
    assert srcs[:-1] == units(tmp_path / "bin", et, want)
    names = [Path(s).name for s in srcs]
    assert len(set(names)) == len(names)
    # a second configure leaves the files alone (a no-op build compiles nothing)
    before = {s: Path(s).stat().st_mtime_ns for s in srcs[:-1]}
    assert fake_idf(folder, tmp_path).returncode == 0
    assert {s: Path(s).stat().st_mtime_ns for s in srcs[:-1]} == before


def test_a_tree_named_executorch_alone_in_its_folder_is_included_from_there(
        tmp_path: Path, kernels: Path) -> None:
    """As in the builder's download cache; next to other folders (a user's checkouts) the tree
    is linked from the build folder instead, so that no sibling shadows a header."""
    et = sh.executorch_tree(tmp_path / "cache" / "executorch")
    (tmp_path / "cache" / ".executorch-espnn-source.json").write_text("{}")  # the cache's marker
    fb = sh.flatbuffers_tree(tmp_path / "src" / "flatbuffers")
    inputs = {"FLATBUFFERS_INCLUDE_DIR": str(fb / "include"), "ESPNN_KERNELS_CMAKE": str(kernels),
              "EXECUTORCH_FLATC": str(rs.find_flatc())}
    folder = component_folder(tmp_path / "c", EXECUTORCH_SOURCE_DIR=str(et), **inputs)
    proc = fake_idf(folder, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (inc,) = recorded(tmp_path)["INCLUDE_DIRS"]
    assert inc[0] == str(tmp_path / "cache") and not (tmp_path / "bin" / "include").exists()

    beside = sh.executorch_tree(tmp_path / "src" / "executorch")
    folder = component_folder(tmp_path / "d", EXECUTORCH_SOURCE_DIR=str(beside), **inputs)
    assert fake_idf(folder, tmp_path).returncode == 0
    (inc,) = recorded(tmp_path)["INCLUDE_DIRS"]
    assert inc[0] == str(tmp_path / "bin" / "include")
    assert (tmp_path / "bin" / "include" / "executorch").resolve() == beside.resolve()


@pytest.mark.parametrize(("level", "define"), [(0, "ET_LOG_ENABLED=0"), (1, "ET_MIN_LOG_LEVEL=Error"),
                                               (2, "ET_MIN_LOG_LEVEL=Info"), (3, "ET_MIN_LOG_LEVEL=Debug")])
def test_log_level_follows_kconfig(tmp_path: Path, trees: tuple[Path, Path], kernels: Path,
                                   level: int, define: str) -> None:
    folder = component_folder(tmp_path, **good_inputs(trees, kernels))
    assert fake_idf(folder, tmp_path, log_level=level).returncode == 0
    (defs,) = recorded(tmp_path)["DEFINITIONS"]
    assert defs[-1] == define


def test_early_expansion_only_registers(tmp_path: Path) -> None:
    """ESP-IDF's requirement pass may run in a CMake process without the inputs: the component
    registers (no requirements) and stops there, whatever is set."""
    folder = component_folder(tmp_path)  # no inputs at all
    proc = fake_idf(folder, tmp_path, early=True)
    assert proc.returncode == 0, proc.stderr
    calls = recorded(tmp_path)
    assert calls["REQUIRES"] == [[]] and calls["PRIV_REQUIRES"] == [[]]
    assert not {"DEFINITIONS", "OPTIONS", "LINK", "CUSTOM_COMMAND"} & set(calls)
    assert not (tmp_path / "bin").exists()


def _error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode != 0
    text = " ".join(proc.stderr.split())
    m = re.search(r"executorch(?:_espnn)?: (.*?)(Call Stack|$)", text)
    assert m is not None, proc.stderr
    return m[1]


def test_missing_inputs_say_what_to_pass(tmp_path: Path, trees: tuple[Path, Path], kernels: Path) -> None:
    good = good_inputs(trees, kernels)
    cases = {
        "EXECUTORCH_SOURCE_DIR": ("EXECUTORCH_SOURCE_DIR is not set", "-DEXECUTORCH_SOURCE_DIR=",
                                  "scripts/fetch_sources.py"),
        "FLATBUFFERS_SOURCE_DIR": ("FLATBUFFERS_SOURCE_DIR is not set", "-DFLATBUFFERS_SOURCE_DIR=",
                                   "v24.3.25"),
        "ESPNN_KERNELS_CMAKE": ("names no kernels.cmake", "scripts/espnn_idf_model.py",
                                "-DESPNN_MODEL_DIR="),
    }
    for i, (name, words) in enumerate(cases.items()):
        tmp = tmp_path / str(i)
        folder = component_folder(tmp, **{k: v for k, v in good.items() if k != name})
        message = _error(fake_idf(folder, tmp))
        for w in words:
            assert w in message, (name, message)

    tmp = tmp_path / "nodir"
    folder = component_folder(tmp, **{**good, "EXECUTORCH_SOURCE_DIR": str(tmp_path / "nowhere")})
    assert f"EXECUTORCH_SOURCE_DIR={tmp_path / 'nowhere'} is not a folder" in _error(fake_idf(folder, tmp))


def test_a_tree_lacking_a_listed_file_is_named(tmp_path: Path, kernels: Path) -> None:
    et = sh.executorch_tree(tmp_path / "et")
    (et / "runtime" / "executor" / "method.cpp").unlink()
    fb = sh.flatbuffers_tree(tmp_path / "fb")
    folder = component_folder(tmp_path / "c", EXECUTORCH_SOURCE_DIR=str(et),
                              FLATBUFFERS_SOURCE_DIR=str(fb), ESPNN_KERNELS_CMAKE=str(kernels),
                              EXECUTORCH_FLATC=str(rs.find_flatc()))
    message = _error(fake_idf(folder, tmp_path))
    assert f"lacks {et.resolve()}/runtime/executor/method.cpp (1 listed file(s) missing)" in message
    assert "-DEXECUTORCH_SOURCE_DIR=" in message


def test_flatc_must_be_the_wheels(tmp_path: Path, trees: tuple[Path, Path], kernels: Path) -> None:
    good = good_inputs(trees, kernels)
    other = tmp_path / "flatc"
    other.write_text("#!/bin/sh\necho 'flatc version 23.5.26'\n")
    other.chmod(0o755)
    folder = component_folder(tmp_path / "c", **{**good, "EXECUTORCH_FLATC": str(other)})
    message = _error(fake_idf(folder, tmp_path))
    assert "says 'flatc version 23.5.26', not flatc version 24.3.25" in message
    assert "pip install executorch==1.5.1" in message and "-DEXECUTORCH_FLATC=" in message

    # no EXECUTORCH_FLATC and none on PATH
    folder = component_folder(tmp_path / "d", **{k: v for k, v in good.items() if k != "EXECUTORCH_FLATC"})
    env = {**os.environ, "PATH": "/nonexistent"}
    message = _error(fake_idf(folder, tmp_path, env=env))
    assert "no flatc found" in message and "-DEXECUTORCH_FLATC=" in message

    # the wheel's flatc on PATH (its Python's bin folder) is found
    env = {**os.environ, "PATH": f"{rs.find_flatc().parent}:/usr/bin:/bin"}
    assert fake_idf(folder, tmp_path, env=env).returncode == 0


def test_schema_headers_are_generated_when_cmake_configures(tmp_path: Path, kernels: Path) -> None:
    """espressif32's espidf.py compiles what CMake's code model lists and runs no custom command
    (the real builders' gated test met this: program_generated.h missing): configuring alone
    writes the headers with the wheel's flatc; a second configure leaves them alone; a schema
    flatc rejects stops CMake naming the file."""
    et = sh.executorch_tree(tmp_path / "et-snapshot")
    fb = sh.flatbuffers_tree(tmp_path / "flatbuffers")
    folder = component_folder(tmp_path / "c", **good_inputs((et, fb), kernels))
    proc = fake_idf(folder, tmp_path)
    assert proc.returncode == 0, proc.stderr
    lists = rs.load()
    headers = [tmp_path / "bin" / "gen" / h for h in lists.schema_headers()]
    assert headers and all(h.is_file() for h in headers)
    # the text is flatc's own for the stand-in schema (its tables as C++ structs)
    assert "struct Program" in headers[0].read_text() or "struct ScalarType" in headers[0].read_text()
    before = [h.stat().st_mtime_ns for h in headers]
    assert fake_idf(folder, tmp_path).returncode == 0
    assert [h.stat().st_mtime_ns for h in headers] == before

    for h in headers:
        h.unlink()
    (et / lists.schema_srcs[0]).write_text("table {\n")
    message = _error(fake_idf(folder, tmp_path))
    assert "could not generate the schema headers" in message
    assert Path(lists.schema_srcs[0]).name in message


# --- the component compiled for real (with source trees) -----------------------------------------

HARNESS = """
cmake_minimum_required(VERSION 3.16)
project(executorch_component_harness C CXX)
# ESP-IDF compiles a component's C++ as gnu++2b without exceptions or RTTI
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} -std=gnu++2b -fno-exceptions -fno-rtti")
set(ESP_PLATFORM 1)
macro(idf_component_register)
  cmake_parse_arguments(_reg "" "" "SRCS;INCLUDE_DIRS;PRIV_INCLUDE_DIRS;REQUIRES;PRIV_REQUIRES" ${ARGN})
  add_library(executorch STATIC ${_reg_SRCS})
  target_include_directories(executorch PUBLIC ${_reg_INCLUDE_DIRS} PRIVATE ${_reg_PRIV_INCLUDE_DIRS})
  set(COMPONENT_LIB executorch)
endmacro()
add_subdirectory("${COMPONENT_DIR}" executorch)
"""


@pytest.mark.slow
def test_component_compiles_from_a_source_tree(tmp_path: Path, kernels: Path) -> None:
    try:
        found = rs.find_trees()
    except Exception as exc:  # RuntimeSourcesError: says what to set
        pytest.skip(str(exc))
    fb_root = Path(os.environ[rs.FLATBUFFERS_SOURCE_ENV])
    folder = component_folder(tmp_path / "c", EXECUTORCH_SOURCE_DIR=str(found.executorch),
                              FLATBUFFERS_SOURCE_DIR=str(fb_root), ESPNN_KERNELS_CMAKE=str(kernels),
                              EXECUTORCH_FLATC=str(rs.find_flatc()))
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "CMakeLists.txt").write_text(HARNESS)
    build = tmp_path / "build"
    cfg = subprocess.run([cmake(), "-S", str(tmp_path / "harness"), "-B", str(build),
                          f"-DCOMPONENT_DIR={folder}", "-DCMAKE_BUILD_TYPE=MinSizeRel"],
                         capture_output=True, text=True)
    assert cfg.returncode == 0, cfg.stdout + cfg.stderr
    jobs = str(max(1, (os.cpu_count() or 2) // 2))
    b = subprocess.run([cmake(), "--build", str(build), "--parallel", jobs], capture_output=True,
                       text=True, timeout=3600)
    assert b.returncode == 0, (b.stdout + b.stderr)[-6000:]
    lib = next(build.rglob("libexecutorch.a"))
    nm = subprocess.run(["nm", "-C", "--defined-only", str(lib)], capture_output=True, text=True,
                        check=True).stdout
    assert re.search(r" T executorch_espnn_register_kernels$", nm, re.M)
    assert "executorch::runtime::Program::load" in nm
    members = subprocess.run(["ar", "t", str(lib)], capture_output=True, text=True, check=True).stdout
    for src in ("op_abs.cpp", "op_softmax.cpp", "op_quantize.cpp", "operator_registry.cpp"):
        assert f"{src}.o" in members or f"{Path(src).stem}.cpp.obj" in members, members


# --- the idf.py entry point (cmake/idf_project.cmake) ---------------------------------------------

IDF_PROJECT = COMPONENT / "cmake" / "idf_project.cmake"


def idf_project(tmp: Path, env: dict[str, str] | None = None, **inputs: str) -> subprocess.CompletedProcess[str]:
    """Include idf_project.cmake as a project's CMakeLists does before project(); prints the
    EXTRA_COMPONENT_DIRS it leaves."""
    script = tmp / "project.cmake"
    lines = [f'set(CMAKE_BINARY_DIR "{tmp / "build"}")',
             *(f'set({k} "{v}")' for k, v in inputs.items()),
             f'include("{IDF_PROJECT}")',
             'message(STATUS "DIRS=${EXTRA_COMPONENT_DIRS}")']
    script.write_text("\n".join(lines) + "\n")
    return subprocess.run([cmake(), "-P", str(script)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def test_idf_project_adds_the_three_components(tmp_path: Path, trees: tuple[Path, Path],
                                               kernels: Path) -> None:
    from tests.component_helpers import idf_registration

    model_dir = kernels.parent.parent
    proc = idf_project(tmp_path, ESPNN_MODEL_DIR=str(model_dir),
                       EXECUTORCH_SOURCE_DIR=str(trees[0]),
                       env={"FLATBUFFERS_SOURCE_DIR": str(trees[1]),
                            "EXECUTORCH_FLATC": str(rs.find_flatc())})
    assert proc.returncode == 0, proc.stderr
    (dirs,) = re.findall(r"DIRS=(.*)", proc.stdout)
    gen = tmp_path / "build" / "executorch_espnn_components"
    assert dirs.split(";") == [str(gen / "executorch_espnn"), str(gen / "executorch"),
                               str(model_dir / "espnn_model")]
    # executorch_espnn: the component's own registration under the name its users require
    (tmp_path / "real").mkdir()
    real = idf_registration(tmp_path / "real", pal=True)
    out = tmp_path / "wrapped.txt"
    r = subprocess.run([cmake(), f"-DCOMPONENT_DIR={gen / 'executorch_espnn'}", f"-DOUT={out}",
                        "-DPAL=ON", "-P", str(CDIR / "fake_idf.cmake")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    got: dict[str, list[list[str]]] = {}
    for line in out.read_text().splitlines():
        name, _, value = line.partition("=")
        got.setdefault(name, []).append([v for v in value.split(";") if v])
    assert got == real
    assert (gen / "executorch_espnn" / "idf_component.yml").read_bytes() == \
        (COMPONENT / "idf_component.yml").read_bytes()
    assert f'source "{COMPONENT}/Kconfig"' in (gen / "executorch_espnn" / "Kconfig").read_text()
    # executorch: the inputs written into its CMakeLists (environment variables included), so
    # a fake ESP-IDF that passes none registers the runtime
    bin_tmp = tmp_path / "rt"
    bin_tmp.mkdir()
    assert fake_idf(gen / "executorch", bin_tmp).returncode == 0
    (srcs,) = recorded(bin_tmp)["SRCS"]
    assert srcs[0] == units(bin_tmp / "bin", trees[0].resolve(), [rs.load().runtime_srcs[0]])[0]
    # a second configure leaves the generated files alone (an unchanged build stays one)
    before = {p: p.stat().st_mtime_ns for p in gen.rglob("*") if p.is_file()}
    assert idf_project(tmp_path, ESPNN_MODEL_DIR=str(model_dir), EXECUTORCH_SOURCE_DIR=str(trees[0]),
                       env={"FLATBUFFERS_SOURCE_DIR": str(trees[1]),
                            "EXECUTORCH_FLATC": str(rs.find_flatc())}).returncode == 0
    assert {p: p.stat().st_mtime_ns for p in gen.rglob("*") if p.is_file()} == before


def test_idf_project_steps_aside_under_platformio(tmp_path: Path) -> None:
    proc = idf_project(tmp_path, ESPNN_PLATFORMIO="ON")
    assert proc.returncode == 0, proc.stderr
    assert re.findall(r"DIRS=(.*)", proc.stdout) == [""]
    assert not (tmp_path / "build").exists()


def test_idf_project_without_a_model_folder_says_how_to_make_one(tmp_path: Path) -> None:
    proc = idf_project(tmp_path, ESPNN_MODEL_DIR=str(tmp_path / "none"))
    message = _error(proc)
    assert "holds no generated model" in message and "scripts/espnn_idf_model.py" in message
    assert "-DESPNN_MODEL_DIR=" in message


@pytest.mark.slow
def test_the_model_folder_script_feeds_idf_project(tmp_path: Path, trees: tuple[Path, Path]) -> None:
    """scripts/espnn_idf_model.py writes what idf_project.cmake takes: the model component
    (requiring executorch_espnn) and kernels.cmake; a second run relowers nothing."""
    import sys

    script = sh.ROOT / "scripts" / "espnn_idf_model.py"
    model = sh.ROOT / "examples" / "hello_world" / "model" / "mlp.py"
    out = tmp_path / "model"
    cmd = [sys.executable, str(script), str(model), "--target", "esp32", "--out", str(out)]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "executorch: lowering mlp.py for esp32" in first.stdout
    assert f"model folder: {out} (idf.py -DESPNN_MODEL_DIR={out}" in first.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "lowering" not in again.stdout
    assert "registered for the firmware" not in again.stdout
    proc = idf_project(tmp_path, ESPNN_MODEL_DIR=str(out), EXECUTORCH_SOURCE_DIR=str(trees[0]),
                       FLATBUFFERS_SOURCE_DIR=str(trees[1]), EXECUTORCH_FLATC=str(rs.find_flatc()))
    assert proc.returncode == 0, proc.stderr
    (dirs,) = re.findall(r"DIRS=(.*)", proc.stdout)
    model_component = Path(dirs.split(";")[-1])
    assert model_component == out / "espnn_model"
    assert "REQUIRES executorch_espnn" in (model_component / "CMakeLists.txt").read_text()
    runtime = Path(dirs.split(";")[1])
    rt_tmp = tmp_path / "rt"
    rt_tmp.mkdir()
    assert fake_idf(runtime, rt_tmp).returncode == 0
    (srcs,) = recorded(rt_tmp)["SRCS"]
    assert srcs[-1] == str(out / "kernels" / "RegisterCodegenUnboxedKernels.cpp")

    bad = subprocess.run([*cmd[:2], str(tmp_path / "none.py"), *cmd[3:]], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 1
    assert bad.stderr.startswith("Error: ") and "file not found" in bad.stderr
