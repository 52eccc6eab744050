"""``executorch-espnn init DIR``: a PlatformIO project that builds and runs at once.

It writes ``platformio.ini`` (a ``host`` env and a board env on the ``executorch-espnn``
platform), ``model/model.py`` (``model()``, ``example_inputs()``, ``calibration_data()``), the
sketch (Arduino) or app (ESP-IDF) that runs it, and ``test/`` for ``pio test``, from
``templates/init/``.  It never overwrites: a file that is already there stops it before
anything is written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import rendering
from .errors import ScaffoldError

FRAMEWORKS = ("arduino", "espidf")
DEFAULT_BOARD = "esp32-s3-devkitc-1"
_BOARD_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Project:
    root: Path
    files: tuple[Path, ...]


def _files(framework: str) -> dict[str, str]:
    """Project path -> template under templates/init/."""
    files = {
        "platformio.ini": "platformio.ini.j2",
        "model/model.py": "model.py.j2",
        "test/test_custom_runner.py": "test_custom_runner.py.j2",
        "test/test_model/test_main.cpp": "test_main.cpp.j2",
    }
    if framework == "arduino":
        files["src/main.cpp"] = "main_arduino.cpp.j2"
    else:
        files["src/main.cpp"] = "main_espidf.cpp.j2"
        files["src/CMakeLists.txt"] = "src_CMakeLists.txt.j2"
        files["CMakeLists.txt"] = "CMakeLists.txt.j2"
    return files


def init(root: Path, board: str = DEFAULT_BOARD, framework: str = "arduino") -> Project:
    if framework not in FRAMEWORKS:
        raise ScaffoldError(f"--framework {framework}: choose one of {', '.join(FRAMEWORKS)}")
    if board == "host" or not _BOARD_ID.match(board):
        raise ScaffoldError(
            f"--board {board}: give a PlatformIO board id of the espressif32 platform (e.g. "
            f"{DEFAULT_BOARD}, esp32dev, esp32-c3-devkitm-1); the host env is always written"
        )
    if root.exists() and not root.is_dir():
        raise ScaffoldError(f"{root} is a file; name a new or empty folder for the project")
    files = _files(framework)
    taken = [rel for rel in files if (root / rel).exists()]
    if taken:
        raise ScaffoldError(
            f"{root} already has {', '.join(taken)}: init writes a new project and never "
            "overwrites; name another folder, or move those files away"
        )
    name = re.sub(r"[^A-Za-z0-9_]", "_", root.resolve().name) or "espnn_project"
    context = {"name": name, "board": board, "framework": framework}
    written = []
    for rel, template in files.items():
        text = rendering.render(f"init/{template}", **context)
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf8")
        written.append(path)
    return Project(root, tuple(written))
