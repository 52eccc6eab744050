"""The component's ESP-IDF registration, checked without ESP-IDF: a CMake script
(tests/component_c/fake_idf.cmake) sets ESP_PLATFORM, defines a recording idf_component_register
and includes espnn_component/CMakeLists.txt; plus the manifest (idf_component.yml)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import executorch.version
import pytest
import yaml

import executorch_espnn
from tests.component_helpers import COMPONENT, ROOT, STANDIN, write_sdkconfig
from tests.component_helpers import idf_registration as register

# Sources that only host builds may compile.
HOST_ONLY = {
    "memory/espnn_mem_host.c",
    "pal/espnn_pal_host.cpp",
    "runtime/espnn_host_api.cpp",
    "runtime/host_runner.cpp",
}
# spi_flash: esp_partition.h (EspnnModel's model partition); ESP-IDF 5.1+ adds esp_partition
IDF_REQUIREMENTS = {"esp-nn", "esp_timer", "heap", "log", "freertos", "esp_psram", "spi_flash"}
PAL_SYMBOLS = {
    "et_pal_init",
    "et_pal_abort",
    "et_pal_current_ticks",
    "et_pal_ticks_to_ns_multiplier",
    "et_pal_emit_log_message",
    "et_pal_allocate",
    "et_pal_free",
}


def rel(paths: list[str]) -> list[str]:
    return [Path(p).resolve().relative_to(COMPONENT).as_posix() for p in paths]


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


def test_pal_only_when_provided_and_forced_out_of_the_archive(tmp_path: Path) -> None:
    on = register(tmp_path, pal=True)
    links = [call for call in on.get("LINK", [])]
    assert {tuple(call) for call in links} == {("INTERFACE", f"-u {s}") for s in PAL_SYMBOLS}
    off = register(tmp_path, pal=False)
    (srcs,) = off["SRCS"]
    assert not {n for n in rel(srcs) if n.startswith("pal/")}
    assert "LINK" not in off


def test_early_expansion_only_registers(tmp_path: Path) -> None:
    calls = register(tmp_path, pal=True, early=True)
    assert "SRCS" in calls and "REQUIRES" in calls
    assert not {"DEFINITIONS", "OPTIONS", "LINK"} & set(calls)


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
    # the releases checked to declare every function the engine calls (tests/test_esp_nn_api.py:
    # 1.2.0/1.2.1 lack esp_nn_mul_broadcast_channel_s8); the builder reads the same range
    assert (lo, hi) == (">=1.2.2", "<1.2.4")
    from executorch_espnn.firmware import esp_nn_sources

    assert esp_nn_sources.declared_range() == f"{lo},{hi}"
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


# Symbols the C/C++ runtime (newlib, libstdc++, libgcc) provides on ESP-IDF.
C_RUNTIME = re.compile(
    r"^(mem\w+|str\w+|v?s?n?printf|puts|putchar|abort|nearbyintf?|__cxa_\w+|__dso_handle"
    r"|__gxx_personality_v0"
    r"|_Unwind_\w+|__stack_chk_\w+|__assert_func|operator (new|delete)(\[\])?"
    r"|vtable for __cxxabiv1::\w+)$"
)
# Which required component provides the other undefined symbols.
PROVIDERS = {
    "esp-nn": re.compile(r"^esp_nn_\w+$"),
    "heap": re.compile(r"^heap_caps_\w+$"),
    "esp_psram": re.compile(r"^esp_psram_\w+$"),
    "esp_timer": re.compile(r"^esp_timer_\w+$"),
    "freertos": re.compile(r"^x(Semaphore|Queue|Task)\w+$"),
    "log": re.compile(r"^esp_log_\w+$"),
    "spi_flash": re.compile(r"^(esp_partition_\w+|spi_flash_\w+)$"),
    "executorch": re.compile(r"^(vtable for |typeinfo for )?executorch::"),
}


@pytest.mark.slow  # compiles the 30-odd firmware sources
def test_firmware_sources_compile_as_esp_idf_would(tmp_path: Path) -> None:
    """Every source of the registration, compiled the way ESP-IDF compiles a component (ESP_PLATFORM,
    sdkconfig.h, gnu17 / gnu++2b without exceptions and RTTI) against stand-in ESP-IDF headers, the
    engine's host implementation of the ESP-NN API headers and the wheel's ExecuTorch headers;
    every symbol the objects need comes from a component the registration requires."""
    calls = register(tmp_path, pal=True)
    write_sdkconfig(tmp_path / "cfg", {}, spiram=True)
    (srcs,) = calls["SRCS"]
    (inc,) = calls["INCLUDE_DIRS"]
    (priv_inc,) = calls["PRIV_INCLUDE_DIRS"]
    (defs,) = calls["DEFINITIONS"]
    et_inc = Path(executorch.version.__file__).parent / "include"
    flags = [
        "-DESP_PLATFORM",
        "-DC10_USING_CUSTOM_GENERATED_MACROS",
        *(f"-D{d}" for d in defs if d not in ("PUBLIC", "PRIVATE")),
        f"-I{tmp_path / 'cfg' / 'include'}",
        *(f"-I{d}" for d in inc + priv_inc),
        f"-I{STANDIN}",
        f"-I{COMPONENT / 'host_espnn' / 'include'}",  # the esp-nn component's API
        "-isystem", str(et_inc),
        "-isystem", str(et_inc / "executorch/runtime/core/portable_type/c10"),
        "-Wall", "-Wextra", "-Werror",
    ]  # fmt: skip
    objects = []
    for i, src in enumerate(srcs):
        obj = tmp_path / f"{i}_{Path(src).stem}.o"
        if src.endswith(".c"):
            cmd = ["gcc", "-std=gnu17", *flags, "-c", src, "-o", str(obj)]
        else:
            cmd = [
                "g++",
                "-std=gnu++2b",
                "-fno-exceptions",
                "-fno-rtti",
                *flags,
                "-c",
                src,
                "-o",
                str(obj),
            ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, f"{src}:\n{proc.stderr}"
        objects.append(str(obj))
    merged = tmp_path / "component.o"
    subprocess.run(["ld", "-r", "-o", str(merged), *objects], check=True)
    nm = subprocess.run(["nm", "-uC", str(merged)], capture_output=True, text=True, check=True)
    needed: dict[str, set[str]] = {}
    for line in nm.stdout.splitlines():
        name = line.split(maxsplit=1)[1].split("(")[0]
        if C_RUNTIME.match(name):
            continue
        owners = [comp for comp, pattern in PROVIDERS.items() if pattern.match(name)]
        assert owners, f"{name} is needed but no required component provides it"
        needed.setdefault(owners[0], set()).add(name)
    (priv,) = calls["PRIV_REQUIRES"]
    assert set(needed) <= set(priv) | set(calls["REQUIRES"][0])
    # and every requirement is really used
    assert set(needed) == set(priv) | {"executorch"}
    assert "et_pal_init" not in nm.stdout  # defined by the PAL, not needed from elsewhere
