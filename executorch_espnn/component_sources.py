"""The component's own sources as its CMake list files name them: the one reader for every
Python build (the PlatformIO Arduino library, emulated/, fuzz/, the engine tests).

The lists live in ``engine/sources.cmake``, ``cmake/adapter.cmake``, ``memory/sources.cmake``
and ``pal/sources.cmake`` under ``espnn_component``; CMake ``include()``s them (cmake/engine.cmake,
cmake/idf.cmake, cmake/host.cmake), so a source added there is what every build compiles.  They
are plain ``set()`` commands whose paths start at ``${CMAKE_CURRENT_LIST_DIR}`` (or a folder set
from it), read with :func:`runtime_sources.parse_cmake_sets`; like that module this one needs
nothing but the standard library, so SCons can import it::

    from executorch_espnn import component_sources
    lists = component_sources.load()                  # the package's espnn_component
    lists.engine_srcs                                 # absolute paths, as CMake has them
    lists.relative(lists.adapter_sources)             # "adapter/espnn_backend.cpp", ...

tests/test_component_sources.py checks that these are the values CMake itself sets and that
every C file under engine/src and engine/ops is in a list.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from . import resources
from .errors import ComponentSourcesError
from .runtime_sources import COMPONENT_ENV, parse_cmake_sets

# the list files, relative to espnn_component, in the order cmake/idf.cmake includes them
LIST_FILES = ("engine/sources.cmake", "cmake/adapter.cmake", "memory/sources.cmake",
              "pal/sources.cmake")
# CMake variable -> field of ComponentSources; every variable the list files set is here or in
# _FOLDERS, so a list added to a file cannot go unread
_VARIABLES = {
    "ESPNN_ENGINE_SRCS": "engine_srcs",
    "ESPNN_ENGINE_INCLUDE_DIRS": "engine_include_dirs",
    "ESPNN_ENGINE_PRIV_INCLUDE_DIRS": "engine_priv_include_dirs",
    "ESPNN_HOST_KERNEL_SRCS": "host_kernel_srcs",
    "ESPNN_HOST_KERNEL_INCLUDE_DIRS": "host_kernel_include_dirs",
    "ESPNN_RUN_SRCS": "run_srcs",
    "ESPNN_ESP_NN_ANSI_KERNELS": "esp_nn_ansi_kernels",
    "ESPNN_ADAPTER_SOURCES": "adapter_sources",
    "ESPNN_MODEL_SOURCES": "model_sources",
    "ESPNN_MEM_IDF_SOURCES": "mem_idf_sources",
    "ESPNN_MEM_HOST_SOURCES": "mem_host_sources",
    "ESPNN_MEM_PRIVATE_INCLUDE_DIRS": "mem_private_include_dirs",
    "ESPNN_PAL_IDF_SOURCES": "pal_idf_sources",
    "ESPNN_PAL_HOST_SOURCES": "pal_host_sources",
    "ESPNN_PAL_BAREMETAL_SOURCES": "pal_baremetal_sources",
    "ESPNN_PAL_SYMBOLS": "pal_symbols",
}
# the folders the lists start their paths at (helpers, not lists)
_FOLDERS = ("ESPNN_ENGINE_DIR", "ESPNN_HOST_ESPNN_DIR", "ESPNN_MEM_DIR", "_espnn_adapter_root")


def default_component_dir() -> Path:
    """The package's ``espnn_component`` (or ``$ESPNN_COMPONENT_DIR``), as runtime_sources."""
    env = os.environ.get(COMPONENT_ENV)
    return Path(env) if env else resources.component_dir()


@dataclass(frozen=True)
class ComponentSources:
    """The lists of the component's CMake files.  Paths are absolute and normalised (CMake's
    ``cmake/..`` steps collapsed); ``esp_nn_ansi_kernels`` is relative to an ESP-NN checkout and
    ``pal_symbols`` are function names."""

    component: Path
    engine_srcs: tuple[Path, ...]
    engine_include_dirs: tuple[Path, ...]
    engine_priv_include_dirs: tuple[Path, ...]
    host_kernel_srcs: tuple[Path, ...]
    host_kernel_include_dirs: tuple[Path, ...]
    run_srcs: tuple[Path, ...]
    esp_nn_ansi_kernels: tuple[str, ...]
    adapter_sources: tuple[Path, ...]
    model_sources: tuple[Path, ...]
    mem_idf_sources: tuple[Path, ...]
    mem_host_sources: tuple[Path, ...]
    mem_private_include_dirs: tuple[Path, ...]
    pal_idf_sources: tuple[Path, ...]
    pal_host_sources: tuple[Path, ...]
    pal_baremetal_sources: tuple[Path, ...]
    pal_symbols: tuple[str, ...]

    def by_name(self) -> dict[str, tuple[str, ...]]:
        """CMake variable -> its values as strings (what a ``cmake -P`` script prints)."""
        return {name: tuple(str(v) for v in getattr(self, field))
                for name, field in _VARIABLES.items()}

    def relative(self, paths: Iterable[Path]) -> list[str]:
        """``paths`` relative to the component, with '/' (a PlatformIO source filter's form)."""
        return [p.relative_to(self.component).as_posix() for p in paths]


def _read(path: Path) -> dict[str, tuple[str, ...]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ComponentSourcesError(
            f"cannot read the component's source list {path}: {exc}; set {COMPONENT_ENV} to "
            "the espnn_component folder of an executorch-espnn checkout"
        ) from exc
    return parse_cmake_sets(text, str(path), error=ComponentSourcesError,
                            variables={"CMAKE_CURRENT_LIST_DIR": path.parent.as_posix()})


def read_all(component: Path) -> dict[str, tuple[str, ...]]:
    """Every variable of the list files, as CMake sets it (strings, paths not normalised)."""
    values: dict[str, tuple[str, ...]] = {}
    for rel in LIST_FILES:
        for name, words in _read(component / rel).items():
            if name in values and values[name] != words:
                raise ComponentSourcesError(
                    f"{component / rel}: {name} is also set by another list file; set each "
                    "list once"
                )
            values[name] = words
    return values


def load(component: Path | None = None) -> ComponentSources:
    """Read the list files of ``component`` (default: :func:`default_component_dir`)."""
    root = Path(os.path.abspath(component or default_component_dir()))
    values = read_all(root)
    unknown = sorted(set(values) - set(_VARIABLES) - set(_FOLDERS))
    missing = sorted(set(_VARIABLES) - set(values))
    if unknown or missing:
        raise ComponentSourcesError(
            f"{root}: the list files {', '.join(LIST_FILES)} "
            + "; ".join(part for part in (
                f"set unknown variables {', '.join(unknown)}" if unknown else "",
                f"lack {', '.join(missing)}" if missing else "") if part)
            + "; add a new list to executorch_espnn/component_sources.py (_VARIABLES and a "
            "field of ComponentSources)"
        )

    def paths(name: str) -> tuple[Path, ...]:
        return tuple(_absolute(w, name, root) for w in values[name])

    return ComponentSources(
        component=root,
        engine_srcs=paths("ESPNN_ENGINE_SRCS"),
        engine_include_dirs=paths("ESPNN_ENGINE_INCLUDE_DIRS"),
        engine_priv_include_dirs=paths("ESPNN_ENGINE_PRIV_INCLUDE_DIRS"),
        host_kernel_srcs=paths("ESPNN_HOST_KERNEL_SRCS"),
        host_kernel_include_dirs=paths("ESPNN_HOST_KERNEL_INCLUDE_DIRS"),
        run_srcs=paths("ESPNN_RUN_SRCS"),
        esp_nn_ansi_kernels=values["ESPNN_ESP_NN_ANSI_KERNELS"],
        adapter_sources=paths("ESPNN_ADAPTER_SOURCES"),
        model_sources=paths("ESPNN_MODEL_SOURCES"),
        mem_idf_sources=paths("ESPNN_MEM_IDF_SOURCES"),
        mem_host_sources=paths("ESPNN_MEM_HOST_SOURCES"),
        mem_private_include_dirs=paths("ESPNN_MEM_PRIVATE_INCLUDE_DIRS"),
        pal_idf_sources=paths("ESPNN_PAL_IDF_SOURCES"),
        pal_host_sources=paths("ESPNN_PAL_HOST_SOURCES"),
        pal_baremetal_sources=paths("ESPNN_PAL_BAREMETAL_SOURCES"),
        pal_symbols=values["ESPNN_PAL_SYMBOLS"],
    )


def _absolute(word: str, name: str, root: Path) -> Path:
    if not os.path.isabs(word):
        raise ComponentSourcesError(
            f"{root}: {name} lists {word!r}, a relative path; start it at "
            "${CMAKE_CURRENT_LIST_DIR} so CMake and Python resolve it alike"
        )
    return Path(os.path.normpath(word))
