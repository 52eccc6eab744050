# ruff: noqa: F821  (SCons injects `env` through Import("env"))
"""framework = espidf: on the host, ESP-IDF-style apps (app_main) on the compatibility layer; on
ESP boards, espressif32's ESP-IDF build with espnn_component added as an ESP-IDF component
(so its Kconfig shows in `pio run -t menuconfig`) and the generated model as a second one."""

import os
from typing import Any

from SCons.Script import Import

env: Any  # SCons defines it: Import("env")
Import("env")

platform = env.PioPlatform()
here = os.path.join(platform.get_dir(), "builder", "frameworks")

if platform.is_host_env():
    # "arduino, espidf" on the host runs the layer once (Arduino as an ESP-IDF component
    # is still setup()/loop() code).
    if "arduino" not in env.get("PIOFRAMEWORK", []):
        env.SConscript(os.path.join(here, "host.py"), exports="env")
else:
    from espnn_pio import esp_frameworks

    esp_frameworks.add_idf_components(env)
    env.SConscript(platform.frameworks["espidf"]["base_script"], exports="env")
