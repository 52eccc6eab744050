"""The component's sources as its own CMake lists name them, and how a 32-bit firmware compiles
them: the warning sets of the cross-compile gate and the units of the bare-metal world (the
engine, the ESP-NN kernels, the adapter and EspnnModel, the memory policy's C-library-heap world
and the bare-metal PAL), against any ExecuTorch headers (the wheel's, or a source tree's).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from emulated.build import Unit
from emulated.targets import COMPONENT, EMU

LISTS_SCRIPT = EMU / "component_lists.cmake"

# Warnings every firmware source of ours compiles under, on every target: -Werror turns all of
# -Wall (and more) into errors, which is at least ESP-IDF's -Werror=all; -Wformat=2 adds the
# format checks that catch %u with uint32_t (unsigned long on these targets).
C_STRICT = ("-std=c11", "-Wall", "-Wextra", "-Werror", "-Wformat=2")
CXX_STRICT = ("-std=c++17", "-Wall", "-Wextra", "-Werror", "-Wformat=2")
# How ESP-IDF compiles a component's C++: GNU C++23 and ExecuTorch's headers as ordinary (not
# system) headers, so their warnings count too; ESP-IDF's defaults include -Wno-unused-parameter,
# which ExecuTorch's interface headers need.
CXX_IDF = ("-std=gnu++2b", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror", "-Wformat=2")
# Third-party C (ESP-NN's own kernels) and C++ (ExecuTorch's runtime and kernels): their warnings
# are not ours to fix.
C_THIRD_PARTY = ("-std=gnu11", "-w")
CXX_THIRD_PARTY = ("-std=c++17", "-w")


def cmake() -> str:
    """The cmake of this Python environment (pip), else the one on PATH."""
    exe = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    if exe is None:
        raise RuntimeError("cmake is needed to read the component's source lists: "
                           "python -m pip install cmake")
    return exe


@functools.cache
def lists() -> dict[str, tuple[str, ...]]:
    """NAME -> values, from the component's CMake files (emulated/component_lists.cmake)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "lists.txt"
        r = subprocess.run([cmake(), f"-DCOMPONENT_DIR={COMPONENT}", f"-DOUT={out}", "-P",
                            str(LISTS_SCRIPT)], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"reading the component's source lists failed:\n{r.stderr}")
        values = {}
        for line in out.read_text().splitlines():
            name, _, value = line.partition("=")
            values[name] = tuple(v for v in value.split(";") if v)
    return values


def paths(name: str) -> tuple[Path, ...]:
    """A list of files or folders (absolute ones resolved; relative ones stay relative)."""
    return tuple(Path(v).resolve() if Path(v).is_absolute() else Path(v) for v in lists()[name])


def includes(*dirs: Path, system: bool = False) -> tuple[str, ...]:
    flag = "-isystem" if system else "-I"
    return tuple(x for d in dirs for x in (flag, str(d)))


def defines(*names: str) -> tuple[str, ...]:
    return tuple(f"-D{n}" for n in names)


def wheel_executorch_include() -> Path:
    """The executorch wheel's headers (site-packages/executorch/include)."""
    import executorch.version  # a namespace package: no executorch.__file__

    return Path(executorch.version.__file__).resolve().parent / "include"


def wheel_executorch_version() -> str:
    import executorch.version

    return str(executorch.version.__version__).split("+", 1)[0]


def wheel_header_flags(*, system: bool) -> tuple[str, ...]:
    inc = wheel_executorch_include()
    return (*includes(inc, inc / "executorch/runtime/core/portable_type/c10", system=system),
            "-DC10_USING_CUSTOM_GENERATED_MACROS")


@dataclass(frozen=True)
class Kernels:
    """The ESP-NN kernels under the engine: the host twin (espnn_component/host_espnn) or the
    real ESP-NN's ANSI C sources from a checkout."""

    esp_nn_dir: Path | None = None

    @property
    def name(self) -> str:
        return "esp-nn-ansi" if self.esp_nn_dir else "host-espnn"

    def include_dirs(self) -> tuple[Path, ...]:
        if self.esp_nn_dir is None:
            return paths("ESPNN_HOST_KERNEL_INCLUDE_DIRS")
        return (self.esp_nn_dir / "include",)

    def units(self) -> list[Unit]:
        if self.esp_nn_dir is None:
            flags = (*C_STRICT, *includes(*self.include_dirs()))
            return [Unit(s, flags) for s in paths("ESPNN_HOST_KERNEL_SRCS")]
        esp = self.esp_nn_dir
        if not (esp / "include" / "esp_nn.h").is_file():
            raise RuntimeError(f"ESPNN_ESP_NN_DIR={esp} has no include/esp_nn.h: point it at the "
                               "root of an espressif/esp-nn checkout")
        flags = (*C_THIRD_PARTY, *includes(esp / "include", esp / "src" / "common"))
        return [Unit(esp / rel, flags) for rel in paths("ESPNN_ESP_NN_ANSI_KERNELS")]


def engine_units(kernels: Kernels, warnings: Sequence[str] = C_STRICT) -> list[Unit]:
    flags = (*warnings, *includes(*paths("ESPNN_ENGINE_INCLUDE_DIRS"),
                                  *paths("ESPNN_ENGINE_PRIV_INCLUDE_DIRS"), *kernels.include_dirs()))
    return [Unit(s, flags) for s in paths("ESPNN_ENGINE_SRCS")]


def memory_units(world: str, extra_flags: Sequence[str] = (),
                 warnings: Sequence[str] = C_STRICT) -> list[Unit]:
    """The memory policy: ``world`` "idf" (heap_caps) or "host" (the C library's heap, also the
    bare-metal world)."""
    flags = (*warnings, *extra_flags,
             *includes(COMPONENT / "include", *paths("ESPNN_MEM_PRIVATE_INCLUDE_DIRS")))
    key = {"idf": "ESPNN_MEM_IDF_SOURCES", "host": "ESPNN_MEM_HOST_SOURCES"}[world]
    return [Unit(s, flags) for s in paths(key)]


# what the adapter is built with in every firmware: its memory comes from the policy
ADAPTER_DEFINES = ("ESPNN_ET_USE_MEMORY_POLICY",)


def adapter_units(executorch_flags: Sequence[str], extra_flags: Sequence[str],
                  warnings: Sequence[str] = CXX_STRICT, *, pal: str | None) -> list[Unit]:
    """The adapter, EspnnModel and (``pal`` "idf" / "baremetal" / None) one PAL, compiled with
    ``executorch_flags`` (the ExecuTorch include dirs and defines) and ``extra_flags``."""
    flags = (*warnings, *defines(*ADAPTER_DEFINES), *extra_flags,
             *includes(COMPONENT / "include", *paths("ESPNN_ENGINE_INCLUDE_DIRS"),
                       COMPONENT / "adapter", COMPONENT / "runtime"),
             *executorch_flags)
    sources = [*paths("ESPNN_ADAPTER_SOURCES"), *paths("ESPNN_MODEL_SOURCES")]
    if pal is not None:
        sources += paths({"idf": "ESPNN_PAL_IDF_SOURCES",
                          "baremetal": "ESPNN_PAL_BAREMETAL_SOURCES"}[pal])
    # EspnnModel's plain-C parts (the model image parser) are C11 like the engine
    c_flags = (*C_STRICT, *extra_flags, *includes(COMPONENT / "include"))
    return [Unit(s, c_flags if s.suffix == ".c" else flags) for s in sources]


def baremetal_defines(executorch_version: str) -> tuple[str, ...]:
    """What a single-threaded bare-metal firmware compiles the adapter with: no lock (its C++
    library has no threads) and the ExecuTorch release it runs."""
    return ("-DESPNN_ET_LOCKS=ESPNN_ET_LOCKS_NONE",
            f'-DESPNN_ET_EXECUTORCH_VERSION="{executorch_version}"')


def baremetal_units(kernels: Kernels, executorch_flags: Sequence[str], executorch_version: str,
                    cxx_warnings: Sequence[str] = CXX_STRICT) -> list[Unit]:
    """Everything of the component a bare-metal firmware compiles (generated model files and
    the application's own sources aside)."""
    return [*engine_units(kernels), *kernels.units(), *memory_units("host"),
            *adapter_units(executorch_flags, baremetal_defines(executorch_version), cxx_warnings,
                           pal="baremetal")]
