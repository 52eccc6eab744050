"""The host board's build: system compiler, the Arduino/ESP-IDF compatibility layer, the
component with its Kconfig-resolved macros, and the ExecuTorch runtime from the wheel."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from . import kconfig_glue

COMPAT_DIR = ("espnn_component", "arduino_host")


def _fail(env: Any, message: str) -> None:
    sys.stderr.write(f"Error: {message}\n")
    env.Exit(1)


def configure(env: Any) -> None:
    platform = env.PioPlatform()
    root = Path(platform.get_dir())
    compat = root.joinpath(*COMPAT_DIR)
    component = root / "espnn_component"

    env.Append(
        CPPPATH=[str(compat), str(component / "include")],
        CFLAGS=["-std=gnu11"],
        CXXFLAGS=["-std=gnu++17"],
        CPPDEFINES=["ESPNN_HOST"],
    )
    frameworks = [f.strip().lower() for f in env.get("PIOFRAMEWORK", []) or []]
    if frameworks:
        env.BuildSources(str(Path(env.subst("$BUILD_DIR")) / "espnn_host"), str(compat))
    kconfig_glue.add_macros(env, env.get("ESPNN_KCONFIG"))
