"""Run lowered programs on this computer: the C engine, the ESP-NN host kernels and the
EspNNDelegateBackend adapter, built as a shared library against the executorch wheel and
loaded into this process, so ExecuTorch's Python runtime executes delegated programs with it
and the CPU-fallback parts on its own kernels.

    from executorch_espnn import host
    outputs = host.run(pte_bytes, [x])          # list of numpy arrays

The library is built on first use with the pip ``cmake`` and the system C++ compiler, and
cached under ``$ESPNN_CACHE_DIR`` (default ``~/.cache/executorch-espnn``) by a hash of the
sources, the toolchain and the executorch version.  Concurrent builds are safe (a lock file
and an atomic rename).  See docs/runtime.md.

Split by job: ``build`` (the cached CMake builds, shared with the PlatformIO host board's
runtime), ``load`` (the library in this process), ``execute`` (run and measure programs).
"""

from __future__ import annotations

from .build import (
    CACHE_ENV,
    COMPONENT_ENV,
    LIBRARY_FILE,
    LIBRARY_TARGET,
    MIN_CMAKE,
    Toolchain,
    build_key,
    build_library,
    cache_dir,
    component_dir,
    executorch_dir,
    executorch_version,
    find_toolchain,
    source_files,
)
from .execute import PteSizes, measure, run
from .load import HostLibrary, load_library

__all__ = [
    "CACHE_ENV",
    "COMPONENT_ENV",
    "LIBRARY_FILE",
    "LIBRARY_TARGET",
    "MIN_CMAKE",
    "HostLibrary",
    "PteSizes",
    "Toolchain",
    "build_key",
    "build_library",
    "cache_dir",
    "component_dir",
    "executorch_dir",
    "executorch_version",
    "find_toolchain",
    "load_library",
    "measure",
    "run",
    "source_files",
]
