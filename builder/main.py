"""executorch-espnn builder: the model step, then the host build or espressif32's builder.

Kept as small as platform-native's builder: the host runtime and Arduino/ESP-IDF layers live in
builder/frameworks/, the SCons steps in builder/espnn_pio/, what they run (options, the model step
and its child process, the kernel step) in the package, executorch_espnn.firmware.
"""

import os
import sys
from pathlib import Path

from SCons.Script import (
    AlwaysBuild,
    Default,
    DefaultEnvironment,
)

env = DefaultEnvironment()
platform = env.PioPlatform()
sys.path.insert(0, os.path.join(platform.get_dir(), "builder"))

from espnn_pio import checkout  # noqa: E402

# a checkout: its executorch_espnn, not another (before anything imports the package)
checkout.use_checkout_package(Path(platform.get_dir()))

from espnn_pio import scons_steps  # noqa: E402

scons_steps.setup(env)  # validates the custom_executorch_* options, adds the model step

if not platform.is_host_env():
    from espnn_pio import scons_compat

    # Arduino-ESP32 2.0.x deep-copies an espressif32 action; with SCons 4.11 `pio run -v`
    # then dies printing it (scons_compat says why)
    scons_compat.keep_sentinel_on_copy()
    # ESP boards: espressif32 does the rest.  Its builder and framework scripts check the
    # platform name; boards, packages and frameworks are already platform.py's merged view.
    env.Replace(PIOPLATFORM="espressif32")
    env.SConscript(os.path.join(platform.base_dir, "builder", "main.py"), exports="env")
else:
    for tool in ("CC", "CXX"):  # the system compiler, as platform-native does
        if tool in env:
            del env[tool]
    cflags, cxxflags = env.get("CFLAGS", []), env.get("CXXFLAGS", [])
    env.Tool("gcc")
    env.Tool("g++")
    env.Append(CFLAGS=cflags, CXXFLAGS=cxxflags)
    if not env.get("PIOFRAMEWORK"):  # a plain main(): still link the runtime
        env.SConscript(os.path.join(platform.get_dir(), "builder", "frameworks", "host.py"),
                       exports="env")

    program = env.BuildProgram()
    run = env.VerboseAction("$SOURCE $PROGRAM_ARGS", "Executing $SOURCE")
    AlwaysBuild(env.Alias("exec", program, run))
    AlwaysBuild(env.Alias("upload", program, run))
    Default([program])
