"""Obtain the pinned ExecuTorch, flatbuffers and ESP-NN trees an ESP build needs, now: e.g. on a
machine about to go offline, or in a CI job that proves the pins and URLs.  The same code and
cache as `pio run` (executorch_espnn/firmware/sources.py): the PlatformIO cache folder, the
*_SOURCE_DIR / ESPNN_ESP_NN_DIR variables, ESPNN_SOURCES_URL_BASE.

    .venv/bin/python scripts/fetch_sources.py [--project-dir DIR]

Prints one line per tree; exits 1 with the builder's one-line error when a tree cannot be had.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project-dir", type=Path, default=Path.cwd(),
                        help="the project whose platformio.ini options and cache_dir apply")
    args = parser.parse_args(argv)
    from platformio.project.config import ProjectConfig

    from executorch_espnn.firmware import sources

    ini = args.project_dir / "platformio.ini"
    config = ProjectConfig(str(ini) if ini.is_file() else None)
    cache_dir = Path(config.get("platformio", "cache_dir"))
    try:
        found = sources.resolve(lambda name: None, os.environ, args.project_dir, cache_dir)
    except sources.SourceError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    for tree in found.trees():
        pin = tree.pin
        print(f"{pin.owner}/{pin.repo} {pin.version} at {pin.short}: {tree.root} ({tree.origin})")
    for note in found.notes:
        print(f"Note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
