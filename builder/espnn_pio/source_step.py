"""The build step that hands an ESP build its pinned source trees (sources.py): run early, before
the model step, for ESP boards only (the host board builds against the executorch wheel).

What the later compile steps read from the SCons environment:

    ESPNN_SOURCES                  the sources.SourceSet (trees, pins, origins)
    ESPNN_ET_SOURCE_DIR            pytorch/executorch at the wheel's commit (its top folder)
    ESPNN_ET_INCLUDE_ROOT          the folder holding it as `executorch/` (for <executorch/...>),
                                   or "" when a local checkout is named otherwise
    ESPNN_FLATBUFFERS_DIR          google/flatbuffers at ExecuTorch's pin (as given/unpacked)
    ESPNN_FLATBUFFERS_INCLUDE_DIR  the folder holding flatbuffers/*.h
    ESPNN_ESPNN_DIR                espressif/esp-nn at the pin (or a tree in the declared range)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from . import sources

ENV_KEYS = ("ESPNN_ET_SOURCE_DIR", "ESPNN_ET_INCLUDE_ROOT", "ESPNN_FLATBUFFERS_DIR",
            "ESPNN_FLATBUFFERS_INCLUDE_DIR", "ESPNN_ESPNN_DIR")


def env_entries(found: sources.SourceSet) -> dict[str, str]:
    root = found.executorch.include_root
    return {
        "ESPNN_ET_SOURCE_DIR": str(found.executorch.root),
        "ESPNN_ET_INCLUDE_ROOT": str(root) if root is not None else "",
        "ESPNN_FLATBUFFERS_DIR": str(found.flatbuffers.root),
        "ESPNN_FLATBUFFERS_INCLUDE_DIR": str(found.flatbuffers.include_dir),
        "ESPNN_ESPNN_DIR": str(found.esp_nn.root),
    }


def add_sources(env: Any) -> sources.SourceSet:
    """Resolve the three trees (raises sources.SourceError) and put them into `env`."""
    config = env.GetProjectConfig()
    section = "env:" + env["PIOENV"]

    def get(name: str) -> str | None:
        value = config.get(section, name, None)
        return None if value is None else str(value)

    cache_dir = Path(config.get("platformio", "cache_dir"))
    found = sources.resolve(get, os.environ, Path(env.subst("$PROJECT_DIR")), cache_dir)
    env["ESPNN_SOURCES"] = found
    env.Replace(**env_entries(found))
    if found.notes:
        print("Note: " + "; ".join(found.notes))
    return found
