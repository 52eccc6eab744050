"""The component's ESP-IDF registration, checked without ESP-IDF: a CMake script
(tests/component_c/fake_idf.cmake) sets ESP_PLATFORM, defines a recording idf_component_register
and includes espnn_component/CMakeLists.txt; plus the manifest (idf_component.yml)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import executorch.version
import pytest
import yaml

import executorch_espnn
from tests.component_helpers import CDIR, COMPONENT, ROOT

ENGINE_CMAKE = COMPONENT / "cmake" / "engine.cmake"
# Sources that only host builds may compile.
HOST_ONLY = {
    "memory/espnn_mem_host.c",
    "pal/espnn_pal_host.cpp",
    "runtime/espnn_host_api.cpp",
    "runtime/host_runner.cpp",
}
IDF_REQUIREMENTS = {"esp-nn", "esp_timer", "heap", "log", "freertos", "esp_psram"}
PAL_SYMBOLS = {
    "et_pal_init",
    "et_pal_abort",
    "et_pal_current_ticks",
    "et_pal_ticks_to_ns_multiplier",
    "et_pal_emit_log_message",
    "et_pal_allocate",
    "et_pal_free",
}

needs_engine = pytest.mark.skipif(
    not ENGINE_CMAKE.is_file(),
    reason="cmake/engine.cmake (the engine's source lists, branch engine) is not merged yet",
)


def cmake() -> str:
    return str(Path(sys.executable).with_name("cmake"))


def register(tmp_path: Path, *, pal: bool, early: bool = False) -> dict[str, list[list[str]]]:
    """Run the component's CMakeLists as ESP-IDF would; NAME -> list of recorded calls."""
    out = tmp_path / f"record-{pal}-{early}.txt"
    cmd = [cmake(), f"-DCOMPONENT_DIR={COMPONENT}", f"-DOUT={out}"]
    cmd += ["-DPAL=ON"] if pal else []
    cmd += ["-DEARLY=ON"] if early else []
    proc = subprocess.run(
        [*cmd, "-P", str(CDIR / "fake_idf.cmake")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    calls: dict[str, list[list[str]]] = {}
    for line in out.read_text().splitlines():
        name, _, value = line.partition("=")
        calls.setdefault(name, []).append([v for v in value.split(";") if v])
    assert calls["DONE"] == [["1"]]
    return calls


def rel(paths: list[str]) -> list[str]:
    return [Path(p).resolve().relative_to(COMPONENT).as_posix() for p in paths]


@needs_engine
def test_registration_lists_existing_firmware_sources_only(tmp_path: Path) -> None:
    calls = register(tmp_path, pal=True)
    (srcs,) = calls["SRCS"]
    assert srcs and all(Path(s).is_file() for s in srcs), [s for s in srcs if not Path(s).is_file()]
    names = set(rel(srcs))
    assert not names & HOST_ONLY
    (engine,) = calls["ENGINE_SOURCES"]
    assert set(rel(engine)) <= names, "every engine source is compiled"
    (host_kernels,) = calls["HOST_KERNEL_SOURCES"]
    assert not set(rel(host_kernels)) & names, "firmware uses the real ESP-NN, not the host kernels"
    assert {"memory/espnn_mem_core.c", "memory/espnn_mem_idf.c", "pal/espnn_pal_idf.cpp"} <= names
    # every adapter/runtime source is either in the firmware or known to be host-only
    for folder in ("adapter", "runtime"):
        for src in (COMPONENT / folder).glob("*.c*"):
            name = src.relative_to(COMPONENT).as_posix()
            assert name in names or name in HOST_ONLY, f"{name} is in neither world"


@needs_engine
def test_include_dirs_and_requirements(tmp_path: Path) -> None:
    calls = register(tmp_path, pal=True)
    (inc,) = calls["INCLUDE_DIRS"]
    (priv_inc,) = calls["PRIV_INCLUDE_DIRS"]
    assert all(Path(d).is_dir() for d in inc + priv_inc)
    public = {Path(d).resolve() for d in inc}
    assert (COMPONENT / "include").resolve() in public
    for header in ("executorch_espnn.h", "espnn_mem.h", "espnn_pte.h", "espnn_config.h"):
        assert any((d / header).is_file() for d in public), header
    assert calls["REQUIRES"] == [["executorch"]]
    (priv,) = calls["PRIV_REQUIRES"]
    assert set(priv) == IDF_REQUIREMENTS
    assert "UNPARSED" not in calls


@needs_engine
def test_pal_only_when_provided_and_forced_out_of_the_archive(tmp_path: Path) -> None:
    on = register(tmp_path, pal=True)
    links = [call for call in on.get("LINK", [])]
    assert {tuple(call) for call in links} == {("INTERFACE", f"-u {s}") for s in PAL_SYMBOLS}
    off = register(tmp_path, pal=False)
    (srcs,) = off["SRCS"]
    assert not {n for n in rel(srcs) if n.startswith("pal/")}
    assert "LINK" not in off


@needs_engine
def test_early_expansion_only_registers(tmp_path: Path) -> None:
    calls = register(tmp_path, pal=True, early=True)
    assert "SRCS" in calls and "REQUIRES" in calls
    assert not {"DEFINITIONS", "OPTIONS", "LINK"} & set(calls)


@needs_engine
def test_build_stamp_definitions_match_the_package(tmp_path: Path) -> None:
    calls = register(tmp_path, pal=True)
    (defs,) = calls["DEFINITIONS"]
    public = defs[defs.index("PUBLIC") + 1 : defs.index("PRIVATE")]
    private = defs[defs.index("PRIVATE") + 1 :]
    stamps = dict(d.split("=", 1) for d in public)
    pinned = re.search(r'"executorch==([0-9.]+)"', (ROOT / "pyproject.toml").read_text())
    assert pinned is not None
    assert stamps["ESPNN_ET_EXECUTORCH_VERSION"] == f'"{pinned[1]}"'
    assert executorch.version.__version__.startswith(pinned[1])
    assert stamps["ESPNN_ET_COMPONENT_VERSION"] == f'"{executorch_espnn.__version__}"'
    assert "ESPNN_ET_USE_MEMORY_POLICY" in private


def test_manifest() -> None:
    manifest = yaml.safe_load((COMPONENT / "idf_component.yml").read_text())
    assert manifest["version"] == executorch_espnn.__version__
    deps = manifest["dependencies"]
    assert deps["idf"]["version"] == ">=5.1"
    lo, hi = deps["espressif/esp-nn"]["version"].split(",")
    assert (lo, hi) == (">=1.2.0", "<1.3.0")  # the 1.2 API the engine calls, any 1.2.x patch
    # no registry ExecuTorch: its only release does not match the pinned 1.5.1 (docs/component.md)
    assert not [d for d in deps if "executorch" in d]


def test_component_is_named_by_its_manifest_and_cmake_agree() -> None:
    version_h = (COMPONENT / "include" / "espnn_version.h").read_text()
    assert f'#define ESPNN_ET_PACKAGE_VERSION "{executorch_espnn.__version__}"' in version_h
    host = COMPONENT / "cmake" / "host.cmake"
    if host.is_file():  # branch runtime's host build never takes the firmware worlds
        host_text = re.sub(r"#.*", "", host.read_text())
        assert "ESPNN_MEM_IDF_SOURCES" not in host_text and "ESPNN_PAL_IDF_SOURCES" not in host_text
        assert "espnn_pal_idf" not in host_text and "espnn_mem_idf" not in host_text
