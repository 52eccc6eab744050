"""The one PAL: exactly one definition of each et_pal_* function per world (ESP-IDF, host, bare
metal), the ESP-IDF PAL's behaviour on stand-in esp_timer/esp_log, and the host PAL taking over
the wheel's runtime.  The bare-metal PAL runs under QEMU in tests/hardening/test_mcu_stack.py and
is compiled for 32-bit in tests/hardening/test_cross_compile.py."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import executorch.version
import pytest

from executorch_espnn import component_sources
from tests.component_helpers import (
    CDIR,
    COMPONENT,
    CXXFLAGS,
    ROOT,
    SANITIZE,
    STANDIN,
    write_sdkconfig,
)

ET = Path(executorch.version.__file__).parent  # executorch itself is a namespace package
ET_INCLUDE = ET / "include"
PAL_IDF = COMPONENT / "pal" / "espnn_pal_idf.cpp"
PAL_HOST = COMPONENT / "pal" / "espnn_pal_host.cpp"
PAL_BAREMETAL = COMPONENT / "pal" / "espnn_pal_baremetal.cpp"
SKIP_DIRS = {".git", ".venv", ".pio", "build", "__pycache__", "tests", ".mypy_cache"}
SOURCE_SUFFIXES = {".c", ".cc", ".cpp", ".cxx", ".h", ".hpp", ".inc", ".S"}


def pal_functions() -> set[str]:
    """The et_pal_* functions the wheel's platform.h declares."""
    text = (ET_INCLUDE / "executorch/runtime/platform/platform.h").read_text()
    names = set(re.findall(r"^[^#/*\s][^;]*?\b(et_pal_[a-z_]+)\s*\(", text, re.M))
    return {n for n in names if not n.endswith("_t")}


DEFINITION = re.compile(r"\b(et_pal_[a-z_]+)\s*\([^;{)]*\)\s*(?:ET_\w+\s*|noexcept\s*)*\{")


def definitions() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS for part in rel.parts) or path.suffix not in SOURCE_SUFFIXES:
            continue
        for name in DEFINITION.findall(path.read_text(errors="replace")):
            found.setdefault(name, []).append(rel)
    return found


def test_platform_h_declares_the_seven_functions() -> None:
    assert pal_functions() == {
        "et_pal_init",
        "et_pal_abort",
        "et_pal_current_ticks",
        "et_pal_ticks_to_ns_multiplier",
        "et_pal_emit_log_message",
        "et_pal_allocate",
        "et_pal_free",
    }


def test_exactly_one_definition_of_each_function_per_world() -> None:
    defs = definitions()
    assert set(defs) == pal_functions(), "every et_pal_* function, and nothing else, is defined"
    worlds = sorted(p.relative_to(ROOT) for p in (PAL_IDF, PAL_HOST, PAL_BAREMETAL))
    for name, files in defs.items():
        # one in each world's PAL, none anywhere else in the repository
        assert sorted(files) == worlds, f"{name} defined in {files}"


def test_the_pal_source_lists_never_mix_worlds(tmp_path: Path) -> None:
    script = tmp_path / "print.cmake"
    script.write_text(
        f'include("{COMPONENT}/pal/sources.cmake")\n'
        'message(STATUS "IDF=${ESPNN_PAL_IDF_SOURCES}")\n'
        'message(STATUS "HOST=${ESPNN_PAL_HOST_SOURCES}")\n'
        'message(STATUS "BAREMETAL=${ESPNN_PAL_BAREMETAL_SOURCES}")\n'
        'message(STATUS "SYMS=${ESPNN_PAL_SYMBOLS}")\n'
    )
    out = subprocess.run(
        [cmake(), "-P", str(script)], capture_output=True, text=True, check=True
    ).stdout
    lists = dict(re.findall(r"-- (\w+)=(.*)", out))
    assert lists["IDF"].split(";") == [str(PAL_IDF)]
    assert lists["HOST"].split(";") == [str(PAL_HOST)]
    assert lists["BAREMETAL"].split(";") == [str(PAL_BAREMETAL)]
    assert set(lists["SYMS"].split(";")) == pal_functions()


def cmake() -> str:
    # the venv's cmake (pip, >= 3.28) first: the wheel's CMake package needs it
    exe = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    assert exe, "cmake is needed"
    return exe


def build_idf_pal(tmp: Path, options: dict[str, str]) -> subprocess.CompletedProcess[str]:
    write_sdkconfig(tmp, options, spiram=False)
    objs = []
    mem = COMPONENT / "memory"
    inc = [tmp / "include", COMPONENT / "include", mem, CDIR, STANDIN]
    flags = ["-DESP_PLATFORM", *(f"-I{i}" for i in inc)]
    for src in [
        *component_sources.load(COMPONENT).mem_idf_sources,
        CDIR / "heap_caps_standin.c",
        CDIR / "esp_log_standin.c",
    ]:
        obj = tmp / (src.stem + ".o")
        subprocess.run(
            [
                "gcc",
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                *SANITIZE,
                *flags,
                "-c",
                str(src),
                "-o",
                str(obj),
            ],
            check=True,
        )
        objs.append(str(obj))
    return subprocess.run(
        [
            "g++",
            *CXXFLAGS,
            *SANITIZE,
            "-DC10_USING_CUSTOM_GENERATED_MACROS",
            f"-I{ET_INCLUDE}",
            *flags,
            str(PAL_IDF),
            str(CDIR / "pal_idf_driver.cpp"),
            *objs,
            "-o",
            str(tmp / "pal"),
        ],
        capture_output=True,
        text=True,
    )


LOG_LINES = {
    "D": "D (executorch) method.cpp:123 message text",
    "I": "I (executorch) method.cpp:123 message text",
    "E": "E (executorch) method.cpp:123 message text",
    "W": "W (executorch) method.cpp:123 message text",
}


@pytest.mark.parametrize(
    ("level", "expected"),
    [
        ("INFO", ["I", "E", "E", "W"]),  # the default
        ("ERROR", ["E", "E"]),
        ("DEBUG", ["D", "I", "E", "E", "W"]),
        ("NONE", []),
    ],
)
def test_idf_pal_on_stand_ins(tmp_path: Path, level: str, expected: list[str]) -> None:
    options = {} if level == "INFO" else {f"ESPNN_ET_LOG_LEVEL_{level}": "y"}
    built = build_idf_pal(tmp_path, options)
    assert built.returncode == 0, built.stderr
    out = subprocess.run([str(tmp_path / "pal")], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    # esp_timer's 64-bit microseconds pass through: 18 s and 58 days do not wrap
    assert lines[:5] == [
        "ticks 0",
        "ticks 18000000",
        "ticks 20000000",
        "ticks 5000000000000",
        "ratio 1000 1",
    ]
    logs = [ln for ln in lines[5:] if "(executorch)" in ln]
    assert logs == [LOG_LINES[x] for x in expected]  # fatal -> E, unknown -> W, no blank lines
    rest = [ln for ln in lines[5:] if "(executorch)" not in ln]
    assert rest[0] == "allocate ok inuse 116"  # through the policy: 100 bytes + its header
    assert rest[1] == "free inuse 0 live 0"
    assert rest[2].startswith(
        "E (espnn_mem) et_pal_allocate: 9000 bytes do not fit in internal RAM "
        "(largest free block 8000, free 10000)"
    )
    assert rest[3] == "allocate null"


def test_idf_pal_refuses_to_build_when_not_provided(tmp_path: Path) -> None:
    built = build_idf_pal(tmp_path, {"ESPNN_ET_PROVIDE_PAL": "n"})
    assert built.returncode != 0
    assert "built only with CONFIG_ESPNN_ET_PROVIDE_PAL=y" in built.stderr


def test_host_pal_replaces_the_wheel_runtime_defaults(tmp_path: Path) -> None:
    mem = COMPONENT / "memory"
    objs = []
    for src in component_sources.load(COMPONENT).mem_host_sources:
        obj = tmp_path / (src.stem + ".o")
        subprocess.run(
            [
                "gcc",
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                f"-I{COMPONENT / 'include'}",
                f"-I{mem}",
                "-c",
                str(src),
                "-o",
                str(obj),
            ],
            check=True,
        )
        objs.append(str(obj))
    exe = tmp_path / "hostpal"
    subprocess.run(
        [
            "g++",
            *CXXFLAGS,
            "-DC10_USING_CUSTOM_GENERATED_MACROS",
            f"-I{ET_INCLUDE}",
            f"-I{COMPONENT / 'include'}",
            str(PAL_HOST),
            str(CDIR / "pal_host_driver.cpp"),
            *objs,
            f"-L{ET / 'lib'}",
            "-lexecutorch",
            f"-Wl,-rpath,{ET / 'lib'}",
            "-o",
            str(exe),
        ],
        check=True,
    )
    run = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
    assert run.stdout.splitlines() == [
        "monotonic 1 ratio 1/1",
        "allocate ok inuse 116",
        "free inuse 0",
    ]
    err = run.stderr.splitlines()
    assert len(err) == 2
    assert re.fullmatch(
        r"I \d+\.\d{6} executorch pal_host_driver\.cpp:\d+\] hello from the host PAL 42", err[0]
    )
    assert re.fullmatch(r"E \d+\.\d{6} executorch pal_host_driver\.cpp:\d+\] an error line", err[1])


def test_the_scanner_tells_definitions_from_declarations() -> None:
    text = (
        "void et_pal_init(void) ET_INTERNAL_PLATFORM_WEAKNESS;\n"
        "ET_NORETURN void et_pal_abort(void) {\n"
        "void* et_pal_allocate(size_t size)\n{\n"
        "et_tick_ratio_t et_pal_ticks_to_ns_multiplier(void) noexcept {\n"
        "  return et_pal_current_ticks();\n"
    )
    assert DEFINITION.findall(text) == [
        "et_pal_abort",
        "et_pal_allocate",
        "et_pal_ticks_to_ns_multiplier",
    ]
