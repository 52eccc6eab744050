"""Where the package's non-Python parts are: the component's C/C++ sources, the templates, the
PlatformIO platform and the CMake package.

They live in the package, under ``executorch_espnn/_data/``, looked up through
``importlib.resources`` — the only code that knows where they are.  In a checkout ``_data/``
holds links to the checkout's top-level folders (``espnn_component``, ``templates``,
``boards``, ``builder``, ``platform.json``, ``platform.py``); a wheel or sdist build follows the
links and ships the files themselves.  So the checkout and an installed package take the same
lookups, and the tests exercise the one code path users get.

``_data/`` is laid out like the checkout's root, which is also the layout of the PlatformIO
platform (the builder finds ``espnn_component`` next to ``platform.json``).
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from .errors import MissingResourceError

DATA = "_data"
# what _data/ must hold: a wheel that lacks one of these is broken, not merely smaller
CONTENTS = ("espnn_component", "templates", "boards", "builder", "platform.json", "platform.py")
PLATFORM_CONTENTS = ("platform.json", "platform.py", "boards", "builder", "espnn_component")
CMAKE_PACKAGE = ("espnn_component", "cmake", "package")


def data_root() -> Path:
    """``executorch_espnn/_data`` of the imported package, links resolved."""
    root = Path(str(importlib.resources.files("executorch_espnn").joinpath(DATA)))
    return root.resolve()


def path(*parts: str) -> Path:
    """A file or folder under ``_data``, which must exist."""
    p = (data_root().joinpath(*parts)).resolve()
    if not p.exists():
        raise MissingResourceError(
            f"{p} is missing from the executorch_espnn package: the installation is incomplete; "
            "reinstall it (pip install --force-reinstall executorch-espnn, or in a checkout: "
            "git checkout -- executorch_espnn/_data)"
        )
    return p


def component_dir() -> Path:
    """The ``espnn_component`` sources (the ESP-IDF component and the host build's)."""
    return path("espnn_component")


def templates_dir() -> Path:
    return path("templates")


def platform_dir() -> Path:
    """The PlatformIO platform: ``platform.json`` with ``boards/``, ``builder/`` and the component."""
    root = data_root()
    for name in PLATFORM_CONTENTS:
        path(name)
    return root


def cmake_prefix_path() -> Path:
    """What to add to ``CMAKE_PREFIX_PATH`` for ``find_package(executorch_espnn CONFIG)``: the
    source-form package, which builds the delegate from the packaged sources in the consuming
    project (as ``torch.utils.cmake_prefix_path`` names torch's)."""
    return path(*CMAKE_PACKAGE)
