"""The machine and the versions a benchmark ran with.

(No `import platform`: the checkout's top-level platform.py, PlatformIO's, would shadow it
when the checkout is first on sys.path.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def _first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return "not installed"
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else "unknown"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return os.uname().machine


def describe() -> dict[str, str]:
    info = {
        "cpu": cpu_model(),
        "cores": str(os.cpu_count()),
        "load average": " ".join(f"{v:.2f}" for v in os.getloadavg()),
        "os": f"{os.uname().sysname} {os.uname().release}",
        "python": sys.version.split()[0],
    }
    for dist in ("torch", "executorch", "torchao", "platformio"):
        try:
            info[dist] = version(dist)
        except PackageNotFoundError:
            info[dist] = "not installed"
    from executorch_espnn.version import __version__

    info["executorch_espnn"] = __version__
    info["gcc"] = _first_line(["gcc", "--version"])
    info["valgrind"] = _first_line(["valgrind", "--version"])
    return info
