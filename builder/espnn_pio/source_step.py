"""The build step that hands a build its pinned source trees (sources.py): run early, before the
model step, for ESP boards (all three trees) and for the host board with
`custom_executorch_runtime = source` (ExecuTorch and flatbuffers only: the host board keeps its
host ESP-NN kernels).

What the later compile steps read from the SCons environment:

    ESPNN_SOURCES                  the sources.SourceSet (trees, pins, origins)
    ESPNN_ET_SOURCE_DIR            pytorch/executorch at the wheel's commit (its top folder)
    ESPNN_ET_INCLUDE_ROOT          the folder holding it as `executorch/` (for <executorch/...>),
                                   or "" when a local checkout is named otherwise
    ESPNN_FLATBUFFERS_DIR          google/flatbuffers at ExecuTorch's pin (as given/unpacked)
    ESPNN_FLATBUFFERS_INCLUDE_DIR  the folder holding flatbuffers/*.h
    ESPNN_ESPNN_DIR                espressif/esp-nn at the pin (or a tree in the declared range);
                                   unset in ESP-IDF builds that name no tree (the component
                                   manager fetches it)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from executorch_espnn.firmware import options, sources

ENV_KEYS = ("ESPNN_ET_SOURCE_DIR", "ESPNN_ET_INCLUDE_ROOT", "ESPNN_FLATBUFFERS_DIR",
            "ESPNN_FLATBUFFERS_INCLUDE_DIR", "ESPNN_ESPNN_DIR")


def runtime_entries(executorch: sources.SourceTree, flatbuffers: sources.SourceTree) -> dict[str, str]:
    """The keys of the two trees the ExecuTorch runtime is compiled from."""
    root = executorch.include_root
    return {
        "ESPNN_ET_SOURCE_DIR": str(executorch.root),
        "ESPNN_ET_INCLUDE_ROOT": str(root) if root is not None else "",
        "ESPNN_FLATBUFFERS_DIR": str(flatbuffers.root),
        "ESPNN_FLATBUFFERS_INCLUDE_DIR": str(flatbuffers.include_dir),
    }


def env_entries(found: sources.SourceSet) -> dict[str, str]:
    entries = runtime_entries(found.executorch, found.flatbuffers)
    if found.esp_nn is not None:
        entries["ESPNN_ESPNN_DIR"] = str(found.esp_nn.root)
    return entries


def _option_getter(env: Any) -> Callable[[str], str | None]:
    config = env.GetProjectConfig()
    section = "env:" + env["PIOENV"]

    def get(name: str) -> str | None:
        value = config.get(section, name, None)
        return None if value is None else str(value)

    return get


def _cache_dir(env: Any) -> Path:
    return Path(env.GetProjectConfig().get("platformio", "cache_dir"))


def named_esp_nn(env: Any) -> sources.SourceTree | None:
    """The ESP-NN tree the user named (custom_executorch_espnn_dir, then ESPNN_ESP_NN_DIR),
    checked as add_sources checks it, or None when none is named; resolves nothing else and
    downloads nothing (for builds without a model, where add_sources does not run).  Raises
    sources.SourceError for a named folder that is no ESP-NN tree."""
    version, commit = sources.wheel_executorch()
    pin = next(p for p in sources.pins(version, commit) if p.key == "esp-nn")
    get = _option_getter(env)
    if not ((get(pin.option) or "").strip() or os.environ.get(pin.env_var, "").strip()):
        return None
    tree, _ = sources.resolve_one(pin, get(pin.option), os.environ, Path(env.subst("$PROJECT_DIR")),
                                  _cache_dir(env), sources.GITHUB, print)
    return tree


def add_sources(env: Any) -> sources.SourceSet:
    """Resolve the three trees (raises sources.SourceError) and put them into `env`."""
    # ESP-IDF builds take ESP-NN from the component manager unless a tree is named: no download
    espidf = "espidf" in [str(f).strip().lower() for f in env.get("PIOFRAMEWORK", []) or []]
    found = sources.resolve(_option_getter(env), os.environ, Path(env.subst("$PROJECT_DIR")),
                            _cache_dir(env), esp_nn=not espidf)
    env["ESPNN_SOURCES"] = found
    env.Replace(**env_entries(found))
    if found.notes:
        print("Note: " + "; ".join(found.notes))
    return found


def add_runtime_sources(env: Any) -> None:
    """The host board's `custom_executorch_runtime = source`: the ExecuTorch and flatbuffers
    trees only, resolved exactly as for an ESP build."""
    get = _option_getter(env)
    version, commit = sources.wheel_executorch()
    url_base = ((get(options.SOURCES_URL_BASE) or "").strip()
                or os.environ.get(sources.URL_BASE_ENV, "").strip() or sources.GITHUB)
    pins = sources.pins(version, commit)[:2]
    notes: list[str] = []
    found: list[sources.SourceTree] = []
    for pin in pins:
        tree, tree_notes = sources.resolve_one(pin, get(pin.option), os.environ,
                                               Path(env.subst("$PROJECT_DIR")), _cache_dir(env),
                                               url_base, print)
        found.append(tree)
        notes += tree_notes
    env.Replace(**runtime_entries(*found))
    if notes:
        print("Note: " + "; ".join(notes))
