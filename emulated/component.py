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
from executorch_espnn import component_sources

ESP_NN_LISTS_SCRIPT = EMU / "esp_nn_lists.cmake"

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
    """NAME -> values, from the component's CMake files (executorch_espnn.component_sources,
    the one reader every Python build uses)."""
    return component_sources.load(COMPONENT).by_name()


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


def esp_nn_sdkconfig(esp_nn_dir: Path) -> dict[str, str]:
    """ESP-NN's Kconfig options at their defaults, as an ESP-IDF project's sdkconfig has them
    unless changed (``NN_OPTIMIZED`` = y: the chip's optimised kernels; ``NN_SKIP_NUDGE`` = n):
    CONFIG_NAME -> value, bools as "y", unset bools left out."""
    import kconfiglib

    kconf = kconfiglib.Kconfig(str(esp_nn_dir / "Kconfig.projbuild"), warn_to_stderr=False)
    out = {}
    for sym in kconf.unique_defined_syms:
        value = sym.str_value
        if value and value != "n":
            out[f"CONFIG_{sym.name}"] = value
    return out


@dataclass(frozen=True)
class EspNnBuild:
    """ESP-NN as its own CMakeLists.txt registers it for one ESP-IDF target (read through
    emulated/esp_nn_lists.cmake, with the sdkconfig of ``esp_nn_sdkconfig``)."""

    sources: tuple[Path, ...]
    include_dirs: tuple[Path, ...]
    options: tuple[str, ...]  # its target_compile_options
    definitions: tuple[str, ...]  # its target_compile_definitions
    sdkconfig: tuple[tuple[str, str], ...]  # what sdkconfig.h defines for its options and the chip

    def config_defines(self) -> tuple[str, ...]:
        """sdkconfig.h's view: bools as 1, other values as they are."""
        return tuple(f"-D{k}={'1' if v == 'y' else v}" for k, v in self.sdkconfig)


# the core each ESP-IDF target's sdkconfig names (CONFIG_IDF_TARGET_ARCH_*): ESP-NN's common
# headers pick Xtensa code by it
IDF_TARGET_ARCH = {"esp32": "XTENSA", "esp32s2": "XTENSA", "esp32s3": "XTENSA",
                   "esp32c3": "RISCV", "esp32c6": "RISCV", "esp32p4": "RISCV"}


@functools.cache
def esp_nn_build(esp_nn_dir: Path, idf_target: str) -> EspNnBuild:
    config = {**esp_nn_sdkconfig(esp_nn_dir), f"CONFIG_IDF_TARGET_{idf_target.upper()}": "y",
              f"CONFIG_IDF_TARGET_ARCH_{IDF_TARGET_ARCH[idf_target]}": "y"}
    with tempfile.TemporaryDirectory() as tmp:
        cfg, out = Path(tmp) / "config.txt", Path(tmp) / "lists.txt"
        cfg.write_text("".join(f"{k}={v}\n" for k, v in config.items()))
        r = subprocess.run([cmake(), "-Wno-deprecated", f"-DESP_NN_DIR={esp_nn_dir}",
                            f"-DIDF_TARGET={idf_target}", f"-DCONFIG={cfg}", f"-DOUT={out}", "-P",
                            str(ESP_NN_LISTS_SCRIPT)], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise RuntimeError(f"reading ESP-NN's CMakeLists.txt in {esp_nn_dir} for "
                               f"{idf_target} failed:\n{r.stderr}")
        values = {}
        for line in out.read_text().splitlines():
            name, _, value = line.partition("=")
            values[name] = tuple(v for v in value.split(";") if v)
    return EspNnBuild(tuple(esp_nn_dir / v for v in values["SRCS"]),
                      tuple(esp_nn_dir / v for v in values["INCLUDE_DIRS"]),
                      values["OPTIONS"], values["DEFINITIONS"], tuple(sorted(config.items())))


@dataclass(frozen=True)
class Kernels:
    """The ESP-NN kernels under the engine: the host twin (espnn_component/host_espnn), the real
    ESP-NN's ANSI C sources from a checkout, or (``idf_target``) ESP-NN exactly as its own build
    selects sources, options and optimised kernels for that chip."""

    esp_nn_dir: Path | None = None
    idf_target: str | None = None  # e.g. "esp32c3"; needs esp_nn_dir
    # sdkconfig macros left out of the chip's build: CONFIG_IDF_TARGET_ARCH_XTENSA for clang,
    # which lacks the GCC "a" register constraint of ESP-NN's inline clamps (its C fallbacks
    # compute the same; emulated/esp32s3.py)
    without: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        if self.esp_nn_dir is None:
            return "host-espnn"
        return f"esp-nn-{self.idf_target}" if self.idf_target else "esp-nn-ansi"

    def _checked_dir(self) -> Path:
        esp = self.esp_nn_dir
        assert esp is not None
        if not (esp / "include" / "esp_nn.h").is_file():
            raise RuntimeError(f"ESPNN_ESP_NN_DIR={esp} has no include/esp_nn.h: point it at the "
                               "root of an espressif/esp-nn checkout")
        return esp

    def build(self) -> EspNnBuild | None:
        return esp_nn_build(self._checked_dir(), self.idf_target) if self.idf_target else None

    def include_dirs(self) -> tuple[Path, ...]:
        if self.esp_nn_dir is None:
            return paths("ESPNN_HOST_KERNEL_INCLUDE_DIRS")
        b = self.build()
        return b.include_dirs if b else (self.esp_nn_dir / "include",)

    def defines(self) -> tuple[str, ...]:
        """What the engine compiles with to call these kernels: for a chip's build, the
        sdkconfig macros ESP-NN's esp_nn.h dispatches on, and the chip as the engine's build
        target (its scratch rules, ESPNN_BUILD_TARGET)."""
        b = self.build() if self.esp_nn_dir is not None else None
        if b is None:
            return ()
        assert self.idf_target is not None
        return (*self._config(b), f"-DESPNN_BUILD_TARGET=ESPNN_TARGET_{self.idf_target.upper()}")

    def _config(self, b: EspNnBuild) -> tuple[str, ...]:
        return tuple(d for d in b.config_defines() if d[2:].split("=")[0] not in self.without)

    def units(self) -> list[Unit]:
        if self.esp_nn_dir is None:
            flags = (*C_STRICT, *includes(*self.include_dirs()))
            return [Unit(s, flags) for s in paths("ESPNN_HOST_KERNEL_SRCS")]
        esp = self._checked_dir()
        b = self.build()
        if b is not None:
            flags = (*C_THIRD_PARTY, *b.options, *self._config(b),
                     *(f"-D{d}" for d in b.definitions), *includes(*b.include_dirs))
            return [Unit(src, flags) for src in b.sources]
        flags = (*C_THIRD_PARTY, *includes(esp / "include", esp / "src" / "common"))
        return [Unit(esp / rel, flags) for rel in paths("ESPNN_ESP_NN_ANSI_KERNELS")]


def engine_units(kernels: Kernels, warnings: Sequence[str] = C_STRICT) -> list[Unit]:
    flags = (*warnings, *kernels.defines(), *includes(*paths("ESPNN_ENGINE_INCLUDE_DIRS"),
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
