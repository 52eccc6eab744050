"""PlatformIO's entry point of the executorch-espnn platform; the class lives in
builder/espnn_pio/pio_platform.py.

PlatformIO requires this file at the top of the platform folder, which is also this Python
project's root.  Anything that runs Python from the root (`python -m pytest`, PYTHONPATH=.)
would then find this file as the standard library's `platform` module; in that case it loads
the real one and steps aside, so the two uses coexist.
"""

import os
import sys

if __name__ == "platform":  # imported as the standard library module, not by PlatformIO
    import importlib.util
    import sysconfig

    _spec = importlib.util.spec_from_file_location(
        "platform", os.path.join(sysconfig.get_paths()["stdlib"], "platform.py")
    )
    assert _spec is not None and _spec.loader is not None
    _stdlib = importlib.util.module_from_spec(_spec)
    sys.modules["platform"] = _stdlib
    _spec.loader.exec_module(_stdlib)
    globals().update({k: v for k, v in vars(_stdlib).items() if not k.startswith("__")})
else:
    import importlib.util as _util

    _path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "builder", "espnn_pio", "pio_platform.py")
    _spec = _util.spec_from_file_location(__name__ + "._impl", _path)
    assert _spec is not None and _spec.loader is not None
    _impl = _util.module_from_spec(_spec)
    _spec.loader.exec_module(_impl)
    ExecutorchespnnPlatform = _impl.ExecutorchespnnPlatform
