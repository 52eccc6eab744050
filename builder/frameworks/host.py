# ruff: noqa: F821  (SCons injects `env` through Import("env"))
"""The host board: the system compiler, the Arduino/ESP-IDF compatibility layer and the
ExecuTorch runtime from the executorch wheel, so the same sketch runs on this computer."""

from typing import Any

from SCons.Script import Import

env: Any  # SCons defines it: Import("env")
Import("env")

from espnn_pio import host_build  # noqa: E402

host_build.configure(env)
