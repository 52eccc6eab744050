"""The one list of ExecuTorch runtime sources (espnn_component/cmake/executorch_runtime.cmake)
and its Python reader (executorch_espnn.runtime_sources): CMake reads the same values, bad list
files and bad trees give messages that say what to fix, and, with EXECUTORCH_SOURCE_DIR set, the
list agrees with the tree's own build_variables.bzl and every kernel lookup finds its kernel."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import executorch.version
import pytest
import yaml

from executorch_espnn import runtime_sources as rs
from executorch_espnn.errors import RuntimeSourcesError
from tests.component_helpers import COMPONENT, cmake

LIST = COMPONENT / "cmake" / "executorch_runtime.cmake"
WHEEL = Path(executorch.version.__file__).parent


def test_the_list_reads_and_is_consistent() -> None:
    lists = rs.load()
    assert rs.default_list_file() == LIST
    assert len(lists.runtime_srcs) == len(set(lists.runtime_srcs)) > 20
    assert list(lists.runtime_srcs) == sorted(lists.runtime_srcs)
    assert not [s for s in lists.runtime_srcs if "/platform/default/" in s], "no default PAL"
    assert "runtime/executor/program.cpp" in lists.runtime_srcs
    assert lists.header_only == ("extension/data_loader/buffer_data_loader.h",)
    assert lists.schema_headers() == ("executorch/schema/program_generated.h",
                                      "executorch/schema/scalar_type_generated.h")
    assert "C10_USING_CUSTOM_GENERATED_MACROS" in lists.public_defines
    assert all(s.endswith(".cpp") for s in (*lists.runtime_srcs, *lists.kernel_support_srcs))


def test_cmake_reads_the_same_values(tmp_path: Path) -> None:
    script = tmp_path / "print.cmake"
    names = ["EXECUTORCH_RUNTIME_SRCS", "EXECUTORCH_PUBLIC_DEFINES", "EXECUTORCH_RUNTIME_DEFINES",
             "EXECUTORCH_SCHEMA_FLATC_ARGS", "EXECUTORCH_KERNEL_DIRS",
             "EXECUTORCH_KERNEL_SOURCE_OVERRIDES", "EXECUTORCH_KERNEL_SUPPORT_SRCS",
             "EXECUTORCH_FLATBUFFERS_VERSION"]
    script.write_text(f'include("{LIST}")\n'
                      + "".join(f'message(STATUS "{n}=${{{n}}}")\n' for n in names))
    out = subprocess.run([cmake(), "-P", str(script)], capture_output=True, text=True,
                         check=True).stdout
    got = {k: v.split(";") for k, v in re.findall(r"-- (\w+)=(.*)", out)}
    lists = rs.load()
    assert got["EXECUTORCH_RUNTIME_SRCS"] == list(lists.runtime_srcs)
    assert got["EXECUTORCH_PUBLIC_DEFINES"] == list(lists.public_defines)
    assert got["EXECUTORCH_RUNTIME_DEFINES"] == list(lists.runtime_defines)
    assert got["EXECUTORCH_SCHEMA_FLATC_ARGS"] == list(lists.flatc_args)
    assert got["EXECUTORCH_KERNEL_SUPPORT_SRCS"] == list(lists.kernel_support_srcs)
    assert got["EXECUTORCH_FLATBUFFERS_VERSION"] == [lists.flatbuffers_version]
    assert dict(e.split("=", 1) for e in got["EXECUTORCH_KERNEL_DIRS"]) == lists.kernel_dirs
    assert (dict(e.split("=", 1) for e in got["EXECUTORCH_KERNEL_SOURCE_OVERRIDES"])
            == lists.kernel_overrides)


def test_kernel_lookup() -> None:
    lists = rs.load()
    assert lists.kernel_source("aten::abs.out") == "kernels/portable/cpu/op_abs.cpp"
    assert lists.kernel_source("add.Scalar_out") == "kernels/portable/cpu/op_add.cpp"  # aten
    assert lists.kernel_source("aten::_softmax.out") == "kernels/portable/cpu/op_softmax.cpp"
    assert (lists.kernel_source("dim_order_ops::_to_dim_order_copy.out")
            == "kernels/portable/cpu/op__to_dim_order_copy.cpp")
    assert (lists.kernel_source("quantized_decomposed::dequantize_per_tensor.Tensor_out")
            == "kernels/quantized/cpu/op_dequantize.cpp")
    assert lists.kernel_sources(["aten::sub.out", "aten::abs.out", "aten::sub.Scalar_out"]) == (
        "kernels/portable/cpu/op_abs.cpp", "kernels/portable/cpu/op_sub.cpp")
    with pytest.raises(RuntimeSourcesError, match=r"no kernel source is listed for "
                       r"et_copy::_h2d_copy\.out: ExecuTorch namespace 'et_copy' has no kernel "
                       r"folder in executorch_runtime\.cmake .*a firmware cannot run this operator"):
        lists.kernel_source("et_copy::_h2d_copy.out")


@pytest.mark.parametrize(("text", "message"), [
    ("project(x)\nset(A b)\n", r"only set\(NAME word \.\.\.\) commands and comments may appear, "
                               r"found 'project\(x\)'"),
    ('set(EXECUTORCH_RUNTIME_SRCS "a.cpp")\n', r"has '\"a\.cpp\"'; use plain words"),
    ("set(EXECUTORCH_RUNTIME_SRCS ${X}/a.cpp)\n", r"use plain words \(no quotes, no \$\{\.\.\.\}"),
    ("set(A b)\nset(A c)\n", r"A is set twice"),
    ("set(EXECUTORCH_RUNTIME_SRCS a.cpp)\n", r"missing variables EXECUTORCH_FLATBUFFERS_INCLUDE_DIR"),
])
def test_a_bad_list_file_is_refused(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "executorch_runtime.cmake"
    bad.write_text(text)
    with pytest.raises(RuntimeSourcesError, match=message):
        rs.load(bad)


def test_an_unknown_variable_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "executorch_runtime.cmake"
    bad.write_text(LIST.read_text() + "set(EXECUTORCH_EXTRA_SRCS a.cpp)\n")
    with pytest.raises(RuntimeSourcesError, match="unknown variables EXECUTORCH_EXTRA_SRCS"):
        rs.load(bad)


def test_unset_trees_say_exactly_what_to_set() -> None:
    with pytest.raises(RuntimeSourcesError) as err:
        rs.find_trees(env={})
    assert str(err.value) == ("EXECUTORCH_SOURCE_DIR and FLATBUFFERS_SOURCE_DIR not set: "
                              + rs.how_to_set())
    assert "FLATBUFFERS_SOURCE_DIR" in rs.how_to_set() and "v24.3.25" in rs.how_to_set()


def test_bad_trees_are_named(tmp_path: Path) -> None:
    lists = rs.load()
    et, fb = tmp_path / "et", tmp_path / "fb"
    for rel in (*lists.runtime_srcs, *lists.header_only, *lists.schema_srcs):
        (et / rel).parent.mkdir(parents=True, exist_ok=True)
        (et / rel).write_text("")
    (fb / "include" / "flatbuffers").mkdir(parents=True)
    (fb / "include" / "flatbuffers" / "base.h").write_text(
        "#define FLATBUFFERS_VERSION_MAJOR 23\n#define FLATBUFFERS_VERSION_MINOR 5\n"
        "#define FLATBUFFERS_VERSION_REVISION 26\n")
    env = {rs.EXECUTORCH_SOURCE_ENV: str(et), rs.FLATBUFFERS_SOURCE_ENV: str(fb)}
    with pytest.raises(RuntimeSourcesError, match=r"holds flatbuffers 23\.5\.26; the schema headers "
                       r"generated by the executorch wheel's flatc need 24\.3\.25: check out tag v24\.3\.25"):
        rs.find_trees(lists, env)
    (et / lists.runtime_srcs[0]).unlink()
    with pytest.raises(RuntimeSourcesError, match=rf"lacks {re.escape(lists.runtime_srcs[0])}; "
                       "EXECUTORCH_SOURCE_DIR must name a pytorch/executorch source tree"):
        rs.find_trees(lists, env)


def test_the_wheel_ships_flatc_of_the_listed_version() -> None:
    flatc = rs.find_flatc()
    out = subprocess.run([str(flatc), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == rs.load().flatbuffers_version


# --- against a source tree (EXECUTORCH_SOURCE_DIR) --------------------------------------------

def _tree() -> Path:
    env = os.environ.get(rs.EXECUTORCH_SOURCE_ENV)
    if not env:
        pytest.skip(f"set {rs.EXECUTORCH_SOURCE_ENV} to a pytorch/executorch source tree to check "
                    "the list against its build_variables.bzl and kernel sources")
    return Path(env)


def _build_variables(tree: Path) -> dict[str, object]:
    """ExecuTorch's own lists: the file is valid Python by its own rule (its CMake reads it so)."""
    path = tree / "shim_et" / "xplat" / "executorch" / "build" / "build_variables.bzl"
    if not path.is_file():
        pytest.skip(f"{path} is missing (export shim_et/ of the ExecuTorch tree)")
    namespace: dict[str, object] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


def test_runtime_sources_are_executorchs_core_list_without_its_default_pal() -> None:
    tree = _tree()
    bzl = _build_variables(tree)
    core = [s for s in bzl["EXECUTORCH_CORE_SRCS"]  # type: ignore[attr-defined]
            if not s.startswith("runtime/platform/default/")]
    assert sorted(rs.load().runtime_srcs) == sorted(core)
    support = set(bzl["KERNELS_UTIL_ALL_DEPS_SRCS"])  # type: ignore[call-overload]
    support |= {s for s in bzl["PORTABLE_KERNELS_SRCS"] if "/pattern/" in s}  # type: ignore[attr-defined]
    support |= {s for s in bzl["QUANTIZED_KERNELS_SRCS"] if "/op_" not in s}  # type: ignore[attr-defined]
    assert set(rs.load().kernel_support_srcs) == support


def test_every_wheel_kernel_has_a_source_in_the_tree() -> None:
    """Every operator of the wheel's kernel schemas (what selective registration can select)
    maps to a tree file that defines its kernel function."""
    tree = _tree()
    lists = rs.load()
    checked = 0
    for yml in (WHEEL / "kernels/portable/functions.yaml", WHEEL / "kernels/quantized/quantized.yaml"):
        for entry in yaml.safe_load(yml.read_text()):
            name = str(entry.get("op") or entry["func"].split("(")[0])
            if name.startswith("et_copy::"):  # device copies: no MCU kernel, refused by name
                continue
            src = tree / lists.kernel_source(name)
            assert src.is_file(), f"{name}: {src} is missing"
            function = entry["kernels"][0]["kernel_name"].rsplit("::", 1)[-1]
            assert re.search(rf"\b{function}\b", src.read_text()), f"{name}: {function} not in {src}"
            checked += 1
    assert checked > 200


def test_the_reader_needs_only_the_standard_library() -> None:
    """SCons (the Arduino build) imports it inside PlatformIO's Python: no torch, no numpy."""
    import sys

    code = ("import sys, executorch_espnn.runtime_sources as rs; rs.load(); "
            "heavy = {'torch', 'numpy', 'executorch', 'jinja2', 'yaml'} & set(sys.modules); "
            "print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
