"""The host board with `custom_executorch_runtime = source`: the program links ExecuTorch's
runtime and the model's selected kernels compiled from the pinned tree (runtime_build, exactly as
an Arduino firmware does) instead of the executorch wheel's libexecutorch.so and its kernel
libraries.  The component library stays host_build's (engine, host ESP-NN kernels, adapter,
EspnnModel, host memory policy and PAL); its ExecuTorch headers are the wheel's, which are the
tree's at the wheel's commit.  What this proves: the one source list builds a runtime that runs
every program as the wheel's does (tests/test_platformio_host_source.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import runtime_build


def link(env: Any, component: Path, component_lib: Path, pal_symbols: list[str]) -> None:
    """Raises RuntimeSourcesError (one line) when the tree cannot serve."""
    from executorch_espnn import runtime_sources as rs

    kernels = env["ESPNN_KERNELS"]
    rt = runtime_build.resolve(component, Path(env["ESPNN_ET_SOURCE_DIR"]),
                               env.get("ESPNN_ET_INCLUDE_ROOT", ""),
                               Path(env["ESPNN_FLATBUFFERS_INCLUDE_DIR"]),
                               Path(env.subst("$BUILD_DIR")), kernels)
    env.Prepend(LIBS=[env.File(str(component_lib))])
    runtime_build.add(env, rt, kernels, rs.find_flatc(), runtime_build.log_level(env))
    # the host PAL is an archive member nothing references: -u makes the linker take it (the
    # runtime from source has no PAL of its own; its et_pal_* references are weak)
    env.Append(LINKFLAGS=["-pthread", *(f"-Wl,-u,{sym}" for sym in pal_symbols)], LIBS=["m"])
