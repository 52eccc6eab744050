# ruff: noqa: F821  (SCons injects `env` through Import("env"))
"""framework = arduino: the host Arduino-compatibility layer, or espressif32's Arduino core
plus the executorch-espnn component compiled as a library with the Kconfig-resolved macros and
ESP-NN compiled from its pinned tree for the board's chip."""

import os
from typing import Any

from SCons.Script import Import

env: Any  # SCons defines it: Import("env")
Import("env")

platform = env.PioPlatform()
here = os.path.join(platform.get_dir(), "builder", "frameworks")

if platform.is_host_env():
    env.SConscript(os.path.join(here, "host.py"), exports="env")
else:
    from espnn_pio import esp_frameworks

    esp_frameworks.add_component_library(env)
    env.SConscript(platform.frameworks["arduino"]["base_script"], exports="env")
    esp_frameworks.after_arduino_framework(env)  # ESP-NN for the chip, C++17
