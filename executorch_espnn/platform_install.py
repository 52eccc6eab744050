"""``executorch-espnn platform path|install``: the PlatformIO platform the package carries.

``install`` hands a copy of it to PlatformIO's own package manager (``pio pkg install -g -p
file://…``), so that ``platform = executorch-espnn`` in a ``platformio.ini`` resolves.  The copy
is made with links resolved (a checkout's ``executorch_espnn/_data`` holds links to its
top-level folders, which PlatformIO would otherwise copy as dangling links) and without caches.
The base platform (espressif32, for real boards) is PlatformIO's to install: the platform says
how when a board env needs it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import resources
from .errors import PlatformInstallError

NAME = "executorch-espnn"


def find_pio() -> Path:
    """The ``pio`` of this Python's environment (the ``[platformio]`` extra), else the PATH's."""
    beside = Path(sys.executable).parent / "pio"
    if beside.is_file():
        return beside
    found = shutil.which("pio")
    if found is None:
        raise PlatformInstallError(
            "PlatformIO is not installed in this Python: pip install \"executorch-espnn[platformio]\" "
            "(it brings platformio and scons), or put pio on the PATH"
        )
    return Path(found)


def install(pio: Path | None = None, timeout: float = 300) -> str:
    """Install the platform into PlatformIO's core folder ($PLATFORMIO_CORE_DIR, else
    ~/.platformio); returns pio's output."""
    exe = pio or find_pio()
    source = resources.platform_dir()
    with tempfile.TemporaryDirectory(prefix="executorch-espnn-platform-") as tmp:
        copy = Path(tmp) / NAME
        shutil.copytree(source, copy, symlinks=False,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".git"))
        proc = subprocess.run(
            [str(exe), "pkg", "install", "--global", "--skip-dependencies", "--platform", f"file://{copy}"],
            capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL,
        )
    out = proc.stdout + proc.stderr
    if proc.returncode != 0:
        tail = "\n".join(out.strip().splitlines()[-8:])
        raise PlatformInstallError(f"pio pkg install of the {NAME} platform failed:\n{tail}")
    return out
